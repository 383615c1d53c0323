"""Client quotas on a real 3-broker cluster, set with ``minikafka configs`` and met by
confluent-kafka (librdkafka) clients.

The cluster measures rates over 2 windows of 1 s (``quota.window.num=2``), so that a
few seconds of traffic show the quota: Kafka's rate spans at least all but one window,
which lets a client burst one window's worth before it is held back. Each assertion is
about what the client sees: the bytes acknowledged or consumed per second, and the
throttle time librdkafka reports from the responses' ``throttle_time_ms`` (its
statistics' per-broker ``throttle`` window). Every topic has one partition, so one broker
(its leader) meters all of a client's traffic. Waits are polls with deadlines; the
measured runs are fixed wall-clock spans, never sleeps standing in for a condition.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from protocol import ApiKey
from protocol.messages import DescribeClientQuotasRequest
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.zk_fixtures import kazoo_session
from tests.polling import wait_until
from tools.main import main
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(180)

QUOTA = 100 * 1024  # bytes per second
VALUE = b"q" * 1000


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("quota-cluster"),
        3,
        overrides=(("quota.window.num", "2"), ("quota.window.size.seconds", "1")),
    )


def _topic(cluster: TestCluster) -> str:
    name = f"quota-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.layout.bootstrap_servers})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=30)
    return name


def configs(cluster: TestCluster, *args: str) -> int:
    return main(["configs", "--bootstrap-server", cluster.layout.bootstrap_servers, *args])


def _described(cluster: TestCluster, client_id: str) -> dict[str, float] | None:
    """What every broker reports for the client id's entity (None until all agree)."""
    seen = []
    for i in cluster.broker_ids:
        body = cluster.request(
            i,
            ApiKey.DESCRIBE_CLIENT_QUOTAS,
            1,
            DescribeClientQuotasRequest(
                components=[
                    DescribeClientQuotasRequest.ComponentData(
                        entity_type="client-id", match_type=0, match=client_id
                    )
                ],
                strict=True,
            ),
        )
        entries = body.entries or []
        seen.append({v.key: v.value for e in entries for v in e.values})
    return seen[0] if all(s == seen[0] for s in seen) else None


class _Stats:
    """The largest throttle time librdkafka's statistics reported for any broker."""

    def __init__(self) -> None:
        self.max_throttle_ms = 0

    def __call__(self, text: str) -> None:
        stats: dict[str, Any] = json.loads(text)
        for broker in stats.get("brokers", {}).values():
            self.max_throttle_ms = max(self.max_throttle_ms, int(broker["throttle"]["max"]))


def produce_for(
    cluster: TestCluster, topic: str, client_id: str, seconds: float
) -> tuple[float, _Stats]:
    """Produce as fast as the client may for ``seconds``; the acknowledged bytes per
    second over that span, and the client's throttle statistics."""
    stats = _Stats()
    acked = [0]

    def delivered(err: object, msg: Any) -> None:
        if err is None:
            acked[0] += len(msg.value())

    producer = Producer(
        {
            "bootstrap.servers": cluster.layout.bootstrap_servers,
            "client.id": client_id,
            "linger.ms": 5,
            "batch.size": 16384,
            "queue.buffering.max.kbytes": 256,
            "statistics.interval.ms": 200,
            "stats_cb": stats,
        }
    )
    producer.list_topics(topic, timeout=20)
    start = time.monotonic()
    end = start + seconds
    while time.monotonic() < end:
        try:
            producer.produce(topic, VALUE, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
            continue
        producer.poll(0)
    rate = acked[0] / (time.monotonic() - start)
    producer.flush(30)
    producer.poll(0.5)  # one more statistics round: the throttle seen last
    return rate, stats


def consume_for(
    cluster: TestCluster, topic: str, client_id: str, seconds: float, total: int
) -> tuple[float, _Stats]:
    """Consume from the start for ``seconds`` or until ``total`` bytes; bytes per second."""
    stats = _Stats()
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.layout.bootstrap_servers,
            "client.id": client_id,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "statistics.interval.ms": 200,
            "stats_cb": stats,
        }
    )
    consumer.subscribe([topic])
    got = 0
    first: float | None = None
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is None or msg.error():
                continue
            if first is None:
                first = time.monotonic()
                deadline = first + seconds
            got += len(msg.value() or b"")
            if got >= total:
                break
        assert first is not None, "nothing consumed"
        rate = got / max(time.monotonic() - first, 0.001)
        end = time.monotonic() + 0.5
        while time.monotonic() < end:  # one more statistics round
            consumer.poll(0.1)
    finally:
        consumer.close()
    return rate, stats


def test_producer_byte_rate(cluster: TestCluster, capsys: pytest.CaptureFixture[str]) -> None:
    topic = _topic(cluster)
    # a bad value is refused with Kafka's error, nothing written
    assert configs(cluster, "--alter", "--entity-type", "clients", "--entity-name", "slow",
                   "--add-config", "producer_byte_rate=-5") == 1  # fmt: skip
    assert "INVALID_REQUEST" in capsys.readouterr().err
    assert configs(cluster, "--alter", "--entity-type", "clients", "--entity-name", "slow",
                   "--add-config", "producer_byte_rat=5") == 1  # fmt: skip
    assert "Invalid configuration key producer_byte_rat" in capsys.readouterr().err
    assert configs(cluster, "--alter", "--entity-type", "clients", "--entity-name", "slow",
                   "--add-config", f"producer_byte_rate={QUOTA}") == 0  # fmt: skip
    assert "Completed updating config for entity: client-id 'slow'." in capsys.readouterr().out
    wait_until(
        lambda: _described(cluster, "slow") == {"producer_byte_rate": float(QUOTA)},
        what="every broker to hold the quota",
    )
    assert configs(cluster, "--describe", "--entity-type", "clients", "--entity-name", "slow") == 0
    assert capsys.readouterr().out == (
        f"Quota configs for client-id 'slow' are producer_byte_rate={float(QUOTA)}\n"
    )

    slow, slow_stats = produce_for(cluster, topic, "slow", 4.0)
    fast, fast_stats = produce_for(cluster, topic, "fast", 1.5)
    assert slow < 2 * QUOTA, f"throttled at {slow:.0f} B/s for a quota of {QUOTA}"
    assert slow_stats.max_throttle_ms > 0
    assert fast > 4 * QUOTA, f"unthrottled at only {fast:.0f} B/s"
    assert fast_stats.max_throttle_ms == 0
    # the leader counted its throttled responses and measured the entity's rate
    throttled = sum(
        cluster.metric(i, 'minikafka_client_quota_throttled_responses_total{quota_type="produce"}')
        or 0
        for i in cluster.broker_ids
    )
    assert throttled > 0
    rate_name = (
        'minikafka_client_quota_bytes_per_second{client_id="slow",quota_type="produce",user=""}'
    )
    assert any(cluster.metric(i, rate_name) is not None for i in cluster.broker_ids)

    # removing the quota lifts it
    assert configs(cluster, "--alter", "--entity-type", "clients", "--entity-name", "slow",
                   "--delete-config", "producer_byte_rate") == 0  # fmt: skip
    wait_until(lambda: _described(cluster, "slow") == {}, what="the quota gone everywhere")
    lifted, lifted_stats = produce_for(cluster, topic, "slow", 1.5)
    assert lifted > 4 * QUOTA
    assert lifted_stats.max_throttle_ms == 0


def test_default_consumer_byte_rate(
    cluster: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = _topic(cluster)
    total = 2 * 1024 * 1024
    # small batches: one answer must fit what the quota allows in a window (a batch is
    # never split, so a larger one would be refused again and again, as in Kafka)
    producer = Producer(
        {"bootstrap.servers": cluster.layout.bootstrap_servers, "batch.size": 16384}
    )
    for _ in range(total // len(VALUE) + 1):
        producer.produce(topic, VALUE)
        producer.poll(0)
    assert producer.flush(30) == 0

    # the default client-id quota applies to every client id without its own; one with
    # its own (a high one) is not held by the default
    assert configs(cluster, "--alter", "--entity-type", "clients", "--entity-default",
                   "--add-config", f"consumer_byte_rate={QUOTA}") == 0  # fmt: skip
    assert configs(cluster, "--alter", "--entity-type", "clients", "--entity-name", "reader",
                   "--add-config", "consumer_byte_rate=1000000000") == 0  # fmt: skip
    wait_until(
        lambda: _described(cluster, "reader") == {"consumer_byte_rate": 1e9},
        what="every broker to hold the quotas",
    )
    assert configs(cluster, "--describe", "--entity-type", "clients") == 0
    listed = capsys.readouterr().out
    assert (
        f"Quota configs for the default client-id are consumer_byte_rate={float(QUOTA)}" in listed
    )
    assert "Quota configs for client-id 'reader' are consumer_byte_rate=1000000000.0" in listed

    slow, slow_stats = consume_for(cluster, topic, "anyone", 3.0, total)
    fast, fast_stats = consume_for(cluster, topic, "reader", 10.0, total)
    assert slow < 2 * QUOTA, f"throttled at {slow:.0f} B/s for a quota of {QUOTA}"
    assert slow_stats.max_throttle_ms > 0
    assert fast > 4 * QUOTA, f"unthrottled at only {fast:.0f} B/s"
    assert fast_stats.max_throttle_ms == 0

    assert configs(cluster, "--alter", "--entity-type", "clients", "--entity-default",
                   "--delete-config", "consumer_byte_rate") == 0  # fmt: skip
    wait_until(lambda: _described(cluster, "anyone") == {}, what="the default gone")


def test_user_quotas_share_the_znode_with_scram_credentials(
    cluster: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    user = ["--entity-type", "users", "--entity-name", "alice"]
    assert configs(cluster, "--alter", *user,
                   "--add-config", "SCRAM-SHA-256=[password=alice-secret]") == 0  # fmt: skip
    assert configs(cluster, "--alter", *user, "--add-config", "producer_byte_rate=2048") == 0
    both = [*user, "--entity-type", "clients", "--entity-name", "c1"]
    assert configs(cluster, "--alter", *both, "--add-config", "consumer_byte_rate=4096") == 0
    capsys.readouterr()
    with kazoo_session(cluster.zk_connect) as zk:
        data, _ = zk.get("/config/users/alice")
        config = json.loads(data)["config"]
        assert config["producer_byte_rate"] == "2048"
        assert config["SCRAM-SHA-256"].startswith("salt=")  # kept by the quota's write
        data, _ = zk.get("/config/users/alice/clients/c1")
        assert json.loads(data) == {"version": 1, "config": {"consumer_byte_rate": "4096"}}
        changes = [
            json.loads(zk.get(f"/config/changes/{name}")[0])["entity_path"]
            for name in zk.get_children("/config/changes")
        ]
        assert {"users/alice", "users/alice/clients/c1"} <= set(changes)

    def described() -> str | None:
        assert configs(cluster, "--describe", *user) == 0
        out = capsys.readouterr().out
        return out if "SCRAM credential configs" in out and "Quota configs" in out else None

    out = wait_until(described, what="the user's quota and credential described")
    assert out == (
        "Quota configs for user-principal 'alice' are producer_byte_rate=2048.0\n"
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096\n"
    )
    assert configs(cluster, "--describe", *both) == 0
    assert capsys.readouterr().out == (
        "Quota configs for user-principal 'alice', client-id 'c1' are consumer_byte_rate=4096.0\n"
    )
    # a credential change keeps the quota
    assert configs(cluster, "--alter", *user, "--delete-config", "SCRAM-SHA-256") == 0
    with kazoo_session(cluster.zk_connect) as zk:
        config = json.loads(zk.get("/config/users/alice")[0])["config"]
        assert config == {"producer_byte_rate": "2048"}


def test_quotas_written_through_zookeeper_reach_the_brokers(
    cluster: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    where = ["configs", "--zookeeper", cluster.zk_connect]
    entity = ["--entity-type", "clients", "--entity-name", "zk-written"]
    assert main([*where, "--alter", *entity, "--add-config", "producer_byte_rate=0"]) == 1
    assert "must be at least 1" in capsys.readouterr().err  # the brokers' own check
    assert main([*where, "--alter", *entity, "--add-config", "producer_byte_rate=4096"]) == 0
    assert capsys.readouterr().out == (
        "Completed updating config for entity: client-id 'zk-written'.\n"
    )
    wait_until(
        lambda: _described(cluster, "zk-written") == {"producer_byte_rate": 4096.0},
        what="every broker to follow the notification",
    )
    assert main([*where, "--describe", *entity]) == 0
    assert capsys.readouterr().out == (
        "Quota configs for client-id 'zk-written' are producer_byte_rate=4096.0\n"
    )
