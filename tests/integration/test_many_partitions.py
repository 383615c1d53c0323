"""Thousands of partitions on three brokers, replicated through fetch sessions.

A smaller cut of ``tests/bench/bench_scale.py`` (which runs 3,000): 2,000 partitions of
replication factor 3 (50 topics of 40), each written one record with acks=all by
confluent-kafka and read back; then the broker leading the most partitions is killed
(-9), every leadership it held moves, every partition takes a second acks=all record
from its new leader, and once the victim is back and every ISR is full again all three
replicas of every partition hold the same batches.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from protocol import ApiKey
from protocol.messages import MetadataRequest
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.replication_chaos import ChaosCluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(300)

TOPICS = [f"many-{i}" for i in range(50)]
PER_TOPIC = 40
SESSION_TIMEOUT_S = 4.0
OVERRIDES = (
    ("zookeeper.session.timeout.ms", str(int(SESSION_TIMEOUT_S * 1000))),
    ("replica.fetch.backoff.ms", "200"),
)


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("many"), 3, OVERRIDES)


def view(c: TestCluster, broker: int) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (leader, ISR size), as ``broker``'s Metadata has them."""
    body = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    return {
        (t.name, p.partition_index): (p.leader_id, len(p.isr_nodes))
        for t in c.request(broker, ApiKey.METADATA, 12, body).topics
        if t.name in TOPICS
        for p in t.partitions
    }


def all_in_sync(c: TestCluster, brokers: list[int]) -> bool:
    for i in brokers:
        seen = view(c, i)
        if len(seen) != len(TOPICS) * PER_TOPIC:
            return False
        if any(leader < 0 or isr != 3 for leader, isr in seen.values()):
            return False
    return True


def produce_everywhere(c: TestCluster, value: bytes) -> None:
    producer = Producer({"bootstrap.servers": c.layout.bootstrap_servers, "acks": "all"})
    failed: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failed.append(str(err))

    for topic in TOPICS:
        for p in range(PER_TOPIC):
            producer.produce(topic, value, partition=p, on_delivery=on_delivery)
    assert producer.flush(60) == 0 and failed == []


def read_back(c: TestCluster, count: int) -> dict[tuple[str, int], list[bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": c.layout.bootstrap_servers,
            "group.id": "many-reader",
            "enable.auto.commit": False,
        }
    )
    got: dict[tuple[str, int], list[bytes]] = {}
    try:
        consumer.assign([TopicPartition(t, p, 0) for t in TOPICS for p in range(PER_TOPIC)])

        def read() -> bool:
            for msg in consumer.consume(500, 0.5):
                value = msg.value() if msg.error() is None else None
                topic, partition = msg.topic(), msg.partition()
                if value is not None and topic is not None and partition is not None:
                    got.setdefault((topic, partition), []).append(value)
            return sum(len(v) for v in got.values()) >= count

        wait_until(read, 60, f"{count} records read back")
    finally:
        consumer.close()
    return got


def test_every_partition_written_read_and_failed_over(c: TestCluster) -> None:
    admin = AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})
    new = [NewTopic(t, PER_TOPIC, 3, config={"min.insync.replicas": "2"}) for t in TOPICS]
    for future in admin.create_topics(new, request_timeout=60).values():
        future.result(60)
    wait_until(lambda: all_in_sync(c, c.broker_ids), 60, "every partition led and in sync")
    produce_everywhere(c, b"first")
    every = {(t, p): [b"first"] for t in TOPICS for p in range(PER_TOPIC)}
    assert read_back(c, len(every)) == every

    placement = view(c, 0)
    victim = max(c.broker_ids, key=lambda i: sum(1 for ld, _ in placement.values() if ld == i))
    led = [tp for tp, (leader, _) in placement.items() if leader == victim]
    chaos = ChaosCluster(c.local)
    try:
        chaos.kill(victim)
        others = [i for i in c.broker_ids if i != victim]

        def moved() -> bool:
            return all(view(c, i)[tp][0] not in (victim, -1) for i in others for tp in led)

        wait_until(moved, SESSION_TIMEOUT_S + 30, f"the {len(led)} leaderships of {victim}")
        produce_everywhere(c, b"second")  # acks=all on the two left (min.insync.replicas 2)
        chaos.restart(victim)
        wait_until(lambda: all_in_sync(c, c.broker_ids), 90, "every ISR full again")
        for topic in TOPICS:
            for p in range(PER_TOPIC):
                chaos.wait_replicas_identical(topic, p, (0, 1, 2), 30)
    finally:
        chaos.close()
    twice = {tp: [b"first", b"second"] for tp in every}
    assert read_back(c, 2 * len(every)) == twice
