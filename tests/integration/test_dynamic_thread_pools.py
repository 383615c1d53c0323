"""The worker pool sizes changed on a running 3-broker cluster with ``minikafka configs``:
one broker's own sizes, then the cluster default; each read back with DescribeConfigs
(value, dynamic source, not read-only), seen in the pools themselves through the
``minikafka_worker_pool_size`` gauges, kept across a restart, and refused past the
halve-or-double rule naming the key. An idempotent acks=all producer writes all along;
every acknowledged record is read back at the end.

Every wait is a poll with a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.sequence_producer import SequenceProducer, consume_all, delivery_problems
from tests.polling import wait_until
from tools.main import main
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(150)

TOPIC, PARTITIONS = "pools", 3

#: the sizes every broker starts with (server.properties)
STATIC = {
    "num.io.threads": 2,
    "num.network.threads": 2,
    "num.replica.fetchers": 1,
    "log.cleaner.threads": 1,
    "background.threads": 2,
}
#: key -> the gauge's pool label
POOL_OF = {
    "num.io.threads": "request_handlers",
    "num.network.threads": "network_processors",
    "num.replica.fetchers": "replica_fetchers_per_broker",
    "log.cleaner.threads": "log_cleaner_threads",
    "background.threads": "background_threads",
}


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("dynpools"),
        3,
        overrides=tuple((k, str(v)) for k, v in STATIC.items()),
    )


@pytest.fixture(scope="module")
def admin(c: TestCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})


def pool_size(c: TestCluster, broker: int, key: str) -> float | None:
    return c.metric(broker, f'minikafka_worker_pool_size{{pool="{POOL_OF[key]}"}}')


def wait_sizes(c: TestCluster, broker: int, sizes: dict[str, int]) -> None:
    for key, size in sizes.items():
        wait_until(
            lambda k=key, s=size: pool_size(c, broker, k) == s,  # type: ignore[misc]
            20,
            f"broker {broker}'s {key} pool at {size}",
        )


def configs(c: TestCluster, entity: list[str], *args: str) -> int:
    base = ["configs", "--bootstrap-server", c.layout.bootstrap_servers]
    return main([*base, "--entity-type", "brokers", *entity, *args])


def described(admin: AdminClient, broker: int) -> dict[str, Any]:
    (future,) = admin.describe_configs([ConfigResource("broker", str(broker))]).values()
    result: dict[str, Any] = future.result(timeout=30)
    return result


def check_described(admin: AdminClient, broker: int, sizes: dict[str, int], source: Any) -> None:
    entries = described(admin, broker)
    for key, size in sizes.items():
        entry = entries[key]
        assert (entry.value, entry.source, entry.is_read_only) == (str(size), source.value, False)


def test_pool_sizes_change_per_broker_and_by_cluster_default(
    c: TestCluster, admin: AdminClient, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=3)
    admin.create_topics([topic])[TOPIC].result(timeout=60)
    for broker in c.broker_ids:
        wait_sizes(c, broker, STATIC)
    with SequenceProducer(c.layout.bootstrap_servers, TOPIC, PARTITIONS, rate=200) as producer:
        wait_until(
            lambda: all(producer.acked_count(p) > 0 for p in range(PARTITIONS)),
            30,
            "the producer's first acknowledgements",
        )
        # broker 1's own sizes: every pool doubled
        own = {key: 2 * size for key, size in STATIC.items()}
        text = ",".join(f"{key}={size}" for key, size in own.items())
        assert configs(c, ["--entity-name", "1"], "--alter", "--add-config", text) == 0
        assert capsys.readouterr().out == "Completed updating config for broker 1.\n"
        check_described(admin, 1, own, ConfigSource.DYNAMIC_BROKER_CONFIG)
        wait_sizes(c, 1, own)
        wait_sizes(c, 0, STATIC)  # another broker's pools are its own

        # four times the current size, or none at all: refused naming the key
        for bad in ("num.io.threads=16", "log.cleaner.threads=0", "num.network.threads=1"):
            assert configs(c, ["--entity-name", "1"], "--alter", "--add-config", bad) == 1
            err = capsys.readouterr().err
            key = bad.split("=")[0]
            assert key in err and "Invalid config value" in err, err
        res = ConfigResource(
            "broker",
            "1",
            incremental_configs=[
                ConfigEntry(
                    "num.replica.fetchers", "9", incremental_operation=AlterConfigOpType.SET
                )
            ],
        )
        with pytest.raises(KafkaException, match=r"num\.replica\.fetchers") as refused:
            admin.incremental_alter_configs([res])[res].result(timeout=30)
        assert "double the current value 2" in str(refused.value)
        # Kafka's code for a refused broker config in ZooKeeper mode
        assert refused.value.args[0].code() == KafkaError.INVALID_REQUEST
        check_described(admin, 1, own, ConfigSource.DYNAMIC_BROKER_CONFIG)

        # the cluster default: brokers 0 and 2 follow (fewer processors, more of the
        # rest); broker 1's own values stay ahead of it
        default = {
            "num.io.threads": 3,
            "num.network.threads": 1,
            "num.replica.fetchers": 2,
            "log.cleaner.threads": 2,
            "background.threads": 3,
        }
        text = ",".join(f"{key}={size}" for key, size in default.items())
        assert configs(c, ["--entity-default"], "--alter", "--add-config", text) == 0
        for broker in (0, 2):
            wait_sizes(c, broker, default)
            check_described(admin, broker, default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        check_described(admin, 1, own, ConfigSource.DYNAMIC_BROKER_CONFIG)
        wait_sizes(c, 1, own)

        # a restart keeps them: the sizes come back from ZooKeeper
        assert c.local.stop_broker(1, grace_s=30) == 0
        c.restart(1)
        restarted = time.monotonic()
        wait_sizes(c, 1, own)
        check_described(admin, 1, own, ConfigSource.DYNAMIC_BROKER_CONFIG)
        wait_until(
            lambda: all(producer.first_ack_after([p], restarted) for p in range(PARTITIONS)),
            30,
            "writes acknowledged on every partition after the restart",
        )
    assert producer.failed() == []
    acked = producer.acked()
    assert sum(len(a) for a in acked.values()) == producer.next_sequence
    ends = {p: max(a.offset for a in acked[p]) + 1 for p in range(PARTITIONS)}
    consumed = consume_all(c.layout.bootstrap_servers, TOPIC, PARTITIONS, ends)
    assert delivery_problems(producer.sent(), acked, consumed) == []
