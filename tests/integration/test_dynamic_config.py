"""Dynamic configuration on a live 3-broker cluster, driven by confluent-kafka's AdminClient:
AlterConfigs and IncrementalAlterConfigs on topics and brokers read back with
DescribeConfigs on every broker, a retention change deleting old segments without a
restart, a change made while a broker is down applied when it comes back, refusals naming
the key; and ListOffsets max-timestamp answering the exact record.

The module's cluster runs the log tasks from the start and checks retention every 200 ms,
so a retention change shows within a second. Every wait is a poll with a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    OffsetSpec,
)

from protocol import ApiKey
from protocol.messages import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.main import main
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(180)

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
EARLIEST: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
MAX_TIMESTAMP: OffsetSpec = OffsetSpec.max_timestamp()  # type: ignore[no-untyped-call]


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("dynconfig"),
        3,
        overrides=(("log.retention.check.interval.ms", "200"), ("log.initial.task.delay.ms", "0")),
    )


@pytest.fixture(scope="module")
def admin(c: TestCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})


def create(
    admin: AdminClient, name: str, rf: int = 3, config: dict[str, str] | None = None
) -> None:
    """Create ``name``; a controller that moved (a broker stopped in an earlier test) is
    answered NOT_CONTROLLER until the client's metadata names the new one, so that is retried,
    as an application would."""
    topic = NewTopic(name, num_partitions=1, replication_factor=rf, config=config or {})

    def created() -> bool:
        try:
            admin.create_topics([topic], request_timeout=30)[name].result(timeout=60)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.NOT_CONTROLLER:
                raise
            return False
        return True

    wait_until(created, 60, f"topic {name} created")


def incremental(
    admin: AdminClient, resource: str, name: str, *ops: tuple[str, str | None, Any]
) -> None:
    entries = [ConfigEntry(k, v, incremental_operation=op) for k, v, op in ops]
    res = ConfigResource(resource, name, incremental_configs=entries)
    admin.incremental_alter_configs([res])[res].result(timeout=30)


def described(admin: AdminClient, resource: str, name: str) -> dict[str, Any]:
    (future,) = admin.describe_configs([ConfigResource(resource, name)]).values()
    result: dict[str, Any] = future.result(timeout=30)
    return result


def value_on(
    c: TestCluster, broker: int, resource_type: int, name: str, key: str
) -> tuple[str | None, int]:
    """(value, config_source) of ``key`` as ``broker`` itself describes it."""
    body = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=resource_type, resource_name=name, configuration_keys=[key]
            )
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    (result,) = c.request(broker, ApiKey.DESCRIBE_CONFIGS, 4, body).results
    (entry,) = result.configs
    return entry.value, int(entry.config_source)


def test_incremental_alter_configs_on_a_topic_reaches_every_broker(
    c: TestCluster, admin: AdminClient
) -> None:
    create(admin, "live", config={"segment.bytes": "1048576"})
    incremental(
        admin,
        "topic",
        "live",
        ("retention.ms", "123456", AlterConfigOpType.SET),
        ("cleanup.policy", "compact", AlterConfigOpType.APPEND),
        ("segment.bytes", None, AlterConfigOpType.DELETE),
    )
    config = described(admin, "topic", "live")
    assert config["retention.ms"].value == "123456"
    assert config["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert config["cleanup.policy"].value == "delete,compact"
    assert config["segment.bytes"].value == "1073741824"  # back to the broker's default
    for broker in c.broker_ids:

        def applied(b: int = broker) -> bool:
            return value_on(c, b, TOPIC_RESOURCE, "live", "retention.ms")[0] == "123456"

        wait_until(applied, 15, f"broker {broker} to apply the change")


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_alter_configs_replaces_the_whole_set_and_validate_only_writes_nothing(
    admin: AdminClient,
) -> None:
    create(admin, "whole", config={"retention.ms": "1000000"})
    res = ConfigResource("topic", "whole", set_config={"max.message.bytes": "2000"})
    admin.alter_configs([res], validate_only=True)[res].result(timeout=30)
    assert described(admin, "topic", "whole")["retention.ms"].value == "1000000"
    admin.alter_configs([res])[res].result(timeout=30)
    config = described(admin, "topic", "whole")
    assert config["max.message.bytes"].value == "2000"
    assert config["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def test_invalid_values_are_refused_naming_the_key(admin: AdminClient) -> None:
    create(admin, "strict")
    with pytest.raises(KafkaException, match=r"INVALID_REQUEST|Invalid config value") as refused:
        incremental(
            admin,
            "topic",
            "strict",
            ("retention.ms", "1000", AlterConfigOpType.SET),
            ("segment.bytes", "tiny", AlterConfigOpType.SET),
        )
    assert "segment.bytes" in str(refused.value)
    assert "ConfigResource(type=TOPIC, name='strict')" in str(refused.value)
    assert described(admin, "topic", "strict")["retention.ms"].source != (
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    )  # refused whole: the valid key was not written either
    with pytest.raises(KafkaException, match="Cannot update these configs dynamically"):
        incremental(admin, "broker", "0", ("queued.max.requests", "4", AlterConfigOpType.SET))


def alter_default(c: TestCluster, key: str, value: str | None) -> None:
    """SET (or DELETE, value None) ``key`` on the cluster-wide broker default: name "",
    which confluent-kafka's ConfigResource refuses, so through our own request."""
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    body = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=BROKER_RESOURCE,
                resource_name="",
                configs=[
                    IncrementalAlterConfigsRequest.AlterableConfig(
                        name=key, config_operation=op.value, value=value
                    )
                ],
            )
        ],
        validate_only=False,
    )
    (result,) = c.request(0, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses
    assert result.error_code == 0, result.error_message


def test_broker_configs_per_broker_and_cluster_default(c: TestCluster, admin: AdminClient) -> None:
    alter_default(c, "log.retention.ms", "7200000")
    incremental(admin, "broker", "1", ("log.retention.ms", "3600000", AlterConfigOpType.SET))
    one = described(admin, "broker", "1")["log.retention.ms"]
    assert (one.value, one.source) == ("3600000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert not one.is_read_only
    assert described(admin, "broker", "1")["queued.max.requests"].is_read_only
    wait_until(
        lambda: (
            value_on(c, 2, BROKER_RESOURCE, "2", "log.retention.ms")
            == ("7200000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        ),
        15,
        "broker 2 to apply the cluster default",
    )
    # a topic without an override follows its broker's dynamic value
    wait_until(
        lambda: value_on(c, 2, TOPIC_RESOURCE, "strict", "retention.ms")[0] == "7200000",
        15,
        "the topic default to follow the broker",
    )
    alter_default(c, "log.retention.ms", None)
    incremental(admin, "broker", "1", ("log.retention.ms", None, AlterConfigOpType.DELETE))


def _offset(admin: AdminClient, topic: str, spec: OffsetSpec) -> tuple[int, int]:
    tp = KafkaTopicPartition(topic, 0)
    result = admin.list_offsets({tp: spec}, request_timeout=30)[tp].result(timeout=30)
    return int(result.offset), int(result.timestamp)


def test_a_retention_change_deletes_old_segments_without_a_restart(
    c: TestCluster, admin: AdminClient
) -> None:
    create(admin, "shrinking", rf=1, config={"segment.bytes": "1024"})
    producer = Producer({"bootstrap.servers": c.layout.bootstrap_servers, "linger.ms": 0})
    for _ in range(40):
        producer.produce("shrinking", b"x" * 100, partition=0)
        producer.flush(10)  # one batch per record: segments of a few batches each
    assert producer.flush(30) == 0
    assert _offset(admin, "shrinking", EARLIEST)[0] == 0
    incremental(admin, "topic", "shrinking", ("retention.ms", "1", AlterConfigOpType.SET))
    # every closed segment expires; the active one stays
    wait_until(
        lambda: _offset(admin, "shrinking", EARLIEST)[0] > 30,
        20,
        "retention to delete the old segments",
    )


def test_list_offsets_max_timestamp_is_the_exact_record(c: TestCluster, admin: AdminClient) -> None:
    create(admin, "stamps", rf=1)
    now = int(time.time() * 1000)
    for codec in ("none", "zstd"):
        producer = Producer(
            {"bootstrap.servers": c.layout.bootstrap_servers, "linger.ms": 100,
             "compression.type": codec}
        )  # fmt: skip
        for delta in (100, 400, 200):  # one batch, out of timestamp order
            producer.produce("stamps", b"v", partition=0, timestamp=now + delta)
        assert producer.flush(30) == 0
        if codec == "none":
            assert _offset(admin, "stamps", MAX_TIMESTAMP) == (1, now + 400)
    # across batches: the second batch's records stay below the first batch's largest
    assert _offset(admin, "stamps", MAX_TIMESTAMP) == (1, now + 400)
    producer = Producer(
        {"bootstrap.servers": c.layout.bootstrap_servers, "compression.type": "lz4"}
    )
    producer.produce("stamps", b"v", partition=0, timestamp=now + 300)
    producer.produce("stamps", b"v", partition=0, timestamp=now + 900)
    assert producer.flush(30) == 0
    assert _offset(admin, "stamps", MAX_TIMESTAMP) == (7, now + 900)


def test_configs_command_alters_and_describes(
    c: TestCluster, admin: AdminClient, capsys: pytest.CaptureFixture[str]
) -> None:
    create(admin, "cli")
    base = ["configs", "--bootstrap-server", c.layout.bootstrap_servers]
    topic = [*base, "--entity-type", "topics", "--entity-name", "cli"]
    assert (
        main([*topic, "--alter", "--add-config", "retention.ms=98765,cleanup.policy=[delete]"]) == 0
    )
    assert capsys.readouterr().out == "Completed updating config for topic cli.\n"
    assert main([*topic, "--describe"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Dynamic configs for topic cli are:"
    assert (
        "  retention.ms=98765 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=98765"
        in "\n".join(lines)
    )
    broker = [*base, "--entity-type", "brokers", "--entity-name", "1"]
    assert main([*broker, "--alter", "--add-config", "log.dirs=/x"]) == 1
    assert "Cannot update these configs dynamically: Set(log.dirs)" in capsys.readouterr().err


def _acks_all_error(c: TestCluster, topic: str) -> int | None:
    """Produce one record with acks=all; the delivery error's code, None when acknowledged.
    No retries: NOT_ENOUGH_REPLICAS is retriable, and librdkafka would otherwise retry it
    until message.timeout.ms and report the timeout instead."""
    producer = Producer(
        {"bootstrap.servers": c.layout.bootstrap_servers, "acks": "all", "retries": 0,
         "enable.idempotence": False, "message.timeout.ms": 5000}
    )  # fmt: skip
    errors: list[int | None] = []

    def delivered(err: KafkaError | None, _msg: object) -> None:
        errors.append(None if err is None else int(err.code()))

    producer.produce(topic, b"v", partition=0, on_delivery=delivered)
    producer.flush(20)
    (error,) = errors
    return error


def test_a_dynamic_broker_min_insync_replicas_applies_without_a_restart(
    c: TestCluster, admin: AdminClient
) -> None:
    create(admin, "isr-live", rf=1)
    wait_until(lambda: _acks_all_error(c, "isr-live") is None, 30, "acks=all accepted")
    alter_default(c, "min.insync.replicas", "2")
    try:
        wait_until(
            lambda: all(
                value_on(c, b, BROKER_RESOURCE, str(b), "min.insync.replicas")[0] == "2"
                for b in c.broker_ids
            ),
            15,
            "every broker to apply min.insync.replicas=2",
        )
        assert _acks_all_error(c, "isr-live") == KafkaError.NOT_ENOUGH_REPLICAS
    finally:
        alter_default(c, "min.insync.replicas", None)
    wait_until(lambda: _acks_all_error(c, "isr-live") is None, 30, "acks=all accepted again")


# last: a stopped broker may have been the controller, which moves
def test_a_change_made_while_a_broker_is_down_applies_when_it_returns(
    c: TestCluster, admin: AdminClient
) -> None:
    create(admin, "later")
    down = 2
    c.local.stop_broker(down)
    admin_up = AdminClient({"bootstrap.servers": f"127.0.0.1:{c.layout.client_ports[0]}"})
    incremental(admin_up, "topic", "later", ("retention.ms", "555555", AlterConfigOpType.SET))
    # a broker's own config is altered through that broker: the cluster default here
    alter_default(c, "log.retention.ms", "4444444")
    c.restart(down)
    wait_until(
        lambda: value_on(c, down, TOPIC_RESOURCE, "later", "retention.ms")[0] == "555555",
        30,
        "the restarted broker to read the topic's change",
    )
    assert value_on(c, down, BROKER_RESOURCE, str(down), "log.retention.ms") == (
        "4444444",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
    )
    alter_default(c, "log.retention.ms", None)
