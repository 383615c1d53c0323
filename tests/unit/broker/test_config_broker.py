"""BrokerConfig: defaults, layering of file/env/overrides, validation (the .properties
syntax itself is tested in tests/unit/config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import (
    BROKER_CONFIG_DEFS,
    BrokerConfig,
    ConfigError,
    ConfigSource,
    describe_topic_config,
    env_key,
    parse_overrides,
    properties_from_env,
    validate_topic_configs,
)
from config.log_keys import TOPIC_KEYS as TOPIC_CONFIG_DEFS
from zk.model import EndPoint

# --- defaults and types ---------------------------------------------------------------------


def test_defaults_are_kafkas() -> None:
    config = BrokerConfig.from_properties({})
    expected = {
        "broker.id": -1,
        "num.network.threads": 3,
        "num.io.threads": 8,
        "queued.max.requests": 500,
        "socket.request.max.bytes": 104857600,
        "socket.send.buffer.bytes": 102400,
        "connections.max.idle.ms": 600000,
        "zookeeper.session.timeout.ms": 18000,
        "log.segment.bytes": 1073741824,
        "log.index.interval.bytes": 4096,
        "log.index.size.max.bytes": 10485760,
        "log.retention.check.interval.ms": 300000,
        "num.partitions": 1,
        "default.replication.factor": 1,
        "min.insync.replicas": 1,
        "auto.create.topics.enable": True,
        "delete.topic.enable": True,
        "unclean.leader.election.enable": False,
        "replica.lag.time.max.ms": 30000,
        "offsets.topic.replication.factor": 3,
        "offsets.topic.num.partitions": 50,
        "message.max.bytes": 1048588,
        "reserved.broker.max.id": 1000,
        "compression.type": "producer",
        "background.threads": 10,
        "controlled.shutdown.enable": True,
    }
    assert {k: config.get(k) for k in expected} == expected
    assert config.log_dirs == ["/tmp/kafka-logs"]
    assert config.log_retention_ms == 168 * 3_600_000
    assert config.log_roll_ms == 168 * 3_600_000
    assert config.zookeeper_connection_timeout_ms == 18000
    assert config.listeners == [EndPoint("", 9092, "PLAINTEXT", "PLAINTEXT")]
    assert config.advertised_listeners == config.listeners
    assert config.unknown_keys == ()


def test_values_are_typed_and_trimmed() -> None:
    config = BrokerConfig.from_properties(
        {
            "num.io.threads": " 4 ",
            "delete.topic.enable": "FALSE",
            "log.cleanup.policy": "compact, delete",
        }
    )
    assert config.get("num.io.threads") == 4
    assert config.get("delete.topic.enable") is False
    assert config.get("log.cleanup.policy") == ["compact", "delete"]


def test_every_default_passes_its_own_validator() -> None:
    for definition in BROKER_CONFIG_DEFS.values():
        if definition.validator is not None and definition.default is not None:
            assert definition.validator(definition.typed_default()) is None, definition.name


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("num.io.threads", "eight"),
        ("num.io.threads", "0"),
        ("broker.id", "-2"),
        ("broker.id", "1001"),
        ("socket.request.max.bytes", "99999999999"),
        ("auto.create.topics.enable", "yes"),
        ("compression.type", "brotli"),
        ("log.cleaner.min.cleanable.ratio", "1.5"),
        ("listeners", "PLAINTEXT//:9092"),
        ("listeners", "UNKNOWN://:9092"),
        ("listeners", "PLAINTEXT://:9092,PLAINTEXT://:9093"),
        ("listeners", "PLAINTEXT://:99999"),
        ("advertised.listeners", "OTHER://h:1"),
        ("control.plane.listener.name", "NOPE"),
        ("max.connections.per.ip.overrides", "127.0.0.1=3"),
        ("log.dirs", " , "),
        ("metrics.port", "70000"),
    ],
)
def test_bad_values_are_refused_naming_the_key(key: str, value: str) -> None:
    props = {key: value}
    if key == "log.dirs":
        props["log.dir"] = ""
    with pytest.raises(ConfigError) as info:
        BrokerConfig.from_properties(props)
    assert info.value.key == key
    assert key in str(info.value)


def test_unknown_keys_are_reported_not_refused() -> None:
    config = BrokerConfig.from_properties(
        {"no.such.key": "1", "another.bogus": "x", "listener.name.internal.foo": "y"}
    )
    assert config.unknown_keys == ("another.bogus", "no.such.key")


# --- precedence between related keys ------------------------------------------------------------


def test_retention_ms_beats_minutes_beats_hours() -> None:
    hours = BrokerConfig.from_properties({"log.retention.hours": "2"})
    minutes = BrokerConfig.from_properties(
        {"log.retention.hours": "2", "log.retention.minutes": "3"}
    )
    ms = BrokerConfig.from_properties(
        {"log.retention.hours": "2", "log.retention.minutes": "3", "log.retention.ms": "4"}
    )
    forever = BrokerConfig.from_properties({"log.retention.ms": "-5"})
    assert hours.log_retention_ms == 7_200_000
    assert minutes.log_retention_ms == 180_000
    assert ms.log_retention_ms == 4
    assert forever.log_retention_ms == -1


def test_log_dirs_beats_log_dir_and_roll_ms_beats_hours() -> None:
    config = BrokerConfig.from_properties(
        {"log.dir": "/a", "log.dirs": "/b, /c", "log.roll.hours": "1", "log.roll.ms": "5"}
    )
    assert config.log_dirs == ["/b", "/c"]
    assert config.log_roll_ms == 5
    assert BrokerConfig.from_properties({"log.dir": "/a"}).log_dirs == ["/a"]


# --- listeners ------------------------------------------------------------------------------------


def test_listener_parsing_with_map_control_plane_and_ipv6() -> None:
    config = BrokerConfig.from_properties(
        {
            "listeners": "client://127.0.0.1:9092, CONTROLLER://[::1]:9192,INTERNAL://:0",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
            "INTERNAL:PLAINTEXT",
            "advertised.listeners": "CLIENT://broker0.example:9092",
            "control.plane.listener.name": "controller",
            "inter.broker.listener.name": "INTERNAL",
        }
    )
    assert config.listeners == [
        EndPoint("127.0.0.1", 9092, "CLIENT", "PLAINTEXT"),
        EndPoint("::1", 9192, "CONTROLLER", "PLAINTEXT"),
        EndPoint("", 0, "INTERNAL", "PLAINTEXT"),
    ]
    assert config.control_plane_listener == config.listeners[1]
    assert [e.listener_name for e in config.data_plane_listeners] == ["CLIENT", "INTERNAL"]
    assert config.advertised_listeners == [EndPoint("broker0.example", 9092, "CLIENT", "PLAINTEXT")]
    assert config.listeners[1].connection_string == "CONTROLLER://[::1]:9192"
    assert config.inter_broker_listener_name == "INTERNAL"


def test_advertising_the_wildcard_address_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"0\.0\.0\.0"):
        BrokerConfig.from_properties({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"})


def test_per_ip_overrides() -> None:
    config = BrokerConfig.from_properties(
        {"max.connections.per.ip.overrides": "127.0.0.1:3, hostA:10"}
    )
    assert config.max_connections_per_ip_overrides == {"127.0.0.1": 3, "hostA": 10}


# --- layering: file, environment, overrides -----------------------------------------------------


@pytest.mark.parametrize(
    ("var", "key"),
    [
        ("KAFKA_LOG_DIRS", "log.dirs"),
        ("KAFKA_BROKER_ID", "broker.id"),
        ("KAFKA_ZOOKEEPER_CONNECT", "zookeeper.connect"),
        ("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map"),
        ("KAFKA_SOME__UNDERSCORE", "some_underscore"),
        ("KAFKA_WITH___DASH", "with-dash"),
        ("KAFKA_HEAP_OPTS", None),
        ("KAFKA_", None),
        ("PATH", None),
    ],
)
def test_env_var_names(var: str, key: str | None) -> None:
    assert env_key(var) == key


def test_file_then_env_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("broker.id=1\nnum.io.threads=2\nlog.dirs=/from/file\nnum.partitions=7\n")
    environ = {"KAFKA_NUM_IO_THREADS": "3", "KAFKA_LOG_DIRS": "/from/env", "HOME": "/root"}
    config = BrokerConfig.load(path, overrides=["log.dirs=/from/override"], environ=environ)
    assert config.broker_id == 1
    assert config.get("num.io.threads") == 3
    assert config.log_dirs == ["/from/override"]
    assert config.get("num.partitions") == 7
    assert config.source("num.partitions") is ConfigSource.STATIC_BROKER_CONFIG
    assert config.source("num.network.threads") is ConfigSource.DEFAULT_CONFIG


def test_bad_env_value_names_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig.load(environ={"KAFKA_NUM_NETWORK_THREADS": "many"})
    assert info.value.key == "num.network.threads"


def test_overrides_syntax() -> None:
    assert parse_overrides(["a=b=c", "x="]) == {"a": "b=c", "x": ""}
    with pytest.raises(ConfigError):
        parse_overrides(["novalue"])
    assert properties_from_env({"KAFKA_A_B": "1", "OTHER": "2"}) == {"a.b": "1"}


def test_with_overrides_returns_a_new_validated_config() -> None:
    base = BrokerConfig.from_properties({"num.io.threads": "2"})
    changed = base.with_overrides({"num.io.threads": "5"})
    assert (base.get("num.io.threads"), changed.get("num.io.threads")) == (2, 5)
    with pytest.raises(ConfigError):
        base.with_overrides({"num.io.threads": "-5"})


def test_example_server_properties_is_valid() -> None:
    path = Path(__file__).resolve().parents[3] / "config" / "server.properties"
    config = BrokerConfig.load(path)
    assert config.unknown_keys == ()
    assert config.control_plane_listener is not None


# --- topic configuration --------------------------------------------------------------------------


def test_topic_defaults_follow_broker_synonyms() -> None:
    config = BrokerConfig.from_properties(
        {"log.retention.hours": "1", "log.segment.bytes": "1048576", "compression.type": "lz4"}
    )
    defaults = config.topic_defaults()
    assert set(defaults) == set(TOPIC_CONFIG_DEFS)
    assert defaults["retention.ms"] == 3_600_000
    assert defaults["segment.bytes"] == 1048576
    assert defaults["segment.ms"] == 168 * 3_600_000
    assert defaults["compression.type"] == "lz4"
    assert defaults["cleanup.policy"] == ["delete"]


def test_topic_overrides_are_typed_and_checked() -> None:
    config = BrokerConfig.from_properties({})
    overrides = {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert config.topic_value("retention.ms", overrides) == 1000
    assert config.topic_value("cleanup.policy", overrides) == ["compact"]
    with pytest.raises(ConfigError) as unknown:
        validate_topic_configs({"retention.hours": "1"})
    assert unknown.value.key == "retention.hours"
    with pytest.raises(ConfigError) as bad:
        validate_topic_configs({"segment.bytes": "1"})
    assert bad.value.key == "segment.bytes"


# --- DescribeConfigs ------------------------------------------------------------------------------


def test_describe_broker_reports_values_as_text_with_sources() -> None:
    config = BrokerConfig.from_properties({"num.io.threads": "4", "log.cleanup.policy": "compact"})
    entries = {e.name: e for e in config.describe()}
    assert set(entries) == set(BROKER_CONFIG_DEFS)
    io = entries["num.io.threads"]
    # a pool size changes on a running broker (broker.dynamic_pools); queued.max.requests
    # needs a restart
    assert (io.value, io.source, io.read_only) == ("4", ConfigSource.STATIC_BROKER_CONFIG, False)
    assert entries["queued.max.requests"].read_only
    assert io.synonyms == (
        ("num.io.threads", "4", ConfigSource.STATIC_BROKER_CONFIG),
        ("num.io.threads", "8", ConfigSource.DEFAULT_CONFIG),
    )
    assert entries["auto.create.topics.enable"].value == "true"
    assert entries["zookeeper.connect"].value is None
    assert entries["log.cleanup.policy"].value == "compact"
    assert [e.name for e in config.describe(["num.partitions", "bogus"])] == ["num.partitions"]


def test_describe_topic_layers_override_static_and_default() -> None:
    config = BrokerConfig.from_properties({"log.retention.hours": "1"})
    entries = {e.name: e for e in describe_topic_config(config, {"segment.bytes": "2048"})}
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source) == ("2048", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert segment.synonyms[1] == ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG)
    retention = entries["retention.ms"]
    # Kafka's rule: log.retention.ms itself is set nowhere, so nothing is listed and the
    # source is DEFAULT_CONFIG, though the value follows log.retention.hours
    assert (retention.value, retention.source) == ("3600000", ConfigSource.DEFAULT_CONFIG)
    assert retention.synonyms == ()
    assert entries["cleanup.policy"].source is ConfigSource.DEFAULT_CONFIG
    assert not segment.read_only


def test_dynamic_layers_beat_static_and_are_described_with_synonyms() -> None:
    static = BrokerConfig.from_properties({"log.retention.ms": "1000", "num.io.threads": "4"})
    config = static.with_dynamic(default=True, config={"log.retention.ms": "2000"})
    config = config.with_dynamic(default=False, config={"log.retention.ms": "3000"})
    assert config.log_retention_ms == 3000
    entries = {e.name: e for e in config.describe()}
    retention = entries["log.retention.ms"]
    assert (retention.value, retention.source, retention.read_only) == (
        "3000",
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        False,
    )
    assert retention.synonyms == (
        ("log.retention.ms", "3000", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("log.retention.ms", "2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.ms", "1000", ConfigSource.STATIC_BROKER_CONFIG),
        # Kafka's rule: the key's unit synonyms follow, a null default is never listed
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
    )
    assert entries["queued.max.requests"].read_only
    assert not entries["num.io.threads"].read_only
    # the per-broker layer removed: the cluster default shows through, topics follow it
    config = config.with_dynamic(default=False, config={})
    assert config.log_retention_ms == 2000
    topic = {e.name: e for e in describe_topic_config(config, {})}["retention.ms"]
    assert (topic.value, topic.source) == ("2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    with pytest.raises(ConfigError, match=r"log\.retention\.ms"):
        config.with_dynamic(default=True, config={"log.retention.ms": "soon"})


def test_topic_value_layers_the_topic_over_the_dynamic_and_static_configs() -> None:
    static = BrokerConfig.from_properties({"min.insync.replicas": "2"})
    assert static.topic_value("min.insync.replicas", {}) == 2
    config = static.with_dynamic(default=True, config={"min.insync.replicas": "3"})
    assert config.topic_value("min.insync.replicas", {}) == 3
    config = config.with_dynamic(default=False, config={"unclean.leader.election.enable": "true"})
    assert config.topic_value("unclean.leader.election.enable", {}) is True
    assert config.topic_value("min.insync.replicas", {"min.insync.replicas": "4"}) == 4
    # an override the key refuses (written by another tool) leaves the broker's value
    assert config.topic_value("min.insync.replicas", {"min.insync.replicas": "0"}) == 3
    assert static.topic_value("min.insync.replicas", {}) == 2  # the old config is unchanged
