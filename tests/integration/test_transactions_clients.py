"""Transactions end to end with the real clients' transactional producers.

confluent-kafka, kafka-python and aiokafka each commit one transaction and abort another
on a 3-broker cluster (transactions switched on); a read_committed consumer then sees
every committed record once and no aborted one, while a read_uncommitted consumer sees
both. A consume-transform-produce copier (confluent-kafka with
``send_offsets_to_transaction``) copies a topic exactly once and its group's committed
offsets move only with the commit.

One cluster for the module; every wait polls with a deadline.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(240)

PARTITIONS = 2


@pytest.fixture(scope="module")
def bootstrap(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    cluster: TestCluster
    for cluster in start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("txn-clients"),
        3,
        overrides=(
            ("minikafka.transactions.enable", "true"),
            ("transaction.state.log.num.partitions", "3"),
            ("offsets.topic.num.partitions", "3"),
        ),
    ):
        yield ",".join(f"127.0.0.1:{p}" for p in cluster.layout.client_ports)


def new_topic(bootstrap: str) -> str:
    name = f"txn-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, PARTITIONS, 3)])
    futures[name].result(timeout=30)
    return name


def read_all(bootstrap: str, topic: str, isolation: str, expected: int) -> list[bytes]:
    """Every record of ``topic`` a fresh consumer at ``isolation`` reads, once it has read
    ``expected`` (and a last poll shows nothing more)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "isolation.level": isolation,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: list[bytes] = []

    def read_some() -> bool:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value() or b"")
        return len(got) >= expected

    try:
        wait_until(read_some, 60, f"{expected} records at {isolation}")
        extra = consumer.poll(1.0)
        assert extra is None or extra.error() is not None, "more records than expected"
    finally:
        consumer.close()
    return got


def committed_and_aborted(prefix: str) -> tuple[list[bytes], list[bytes]]:
    committed = [f"{prefix} commit {i}".encode() for i in range(5)]
    aborted = [f"{prefix} abort {i}".encode() for i in range(5)]
    return committed, aborted


def check_reads(bootstrap: str, topic: str, prefix: str) -> None:
    committed, aborted = committed_and_aborted(prefix)
    assert sorted(read_all(bootstrap, topic, "read_committed", 5)) == sorted(committed)
    assert sorted(read_all(bootstrap, topic, "read_uncommitted", 10)) == sorted(committed + aborted)


def test_confluent_kafka_commits_and_aborts(bootstrap: str) -> None:
    topic = new_topic(bootstrap)
    committed, aborted = committed_and_aborted("confluent")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"c-{topic}"})
    producer.init_transactions(30)
    for values, commit in ((committed, True), (aborted, False)):
        producer.begin_transaction()
        for i, value in enumerate(values):
            producer.produce(topic, value, partition=i % PARTITIONS)
        # sent before the end: an abort purges what the client has not sent yet, and
        # the aborted records are to reach the log
        assert producer.flush(30) == 0
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    check_reads(bootstrap, topic, "confluent")


def test_kafka_python_commits_and_aborts(bootstrap: str) -> None:
    from kafka import KafkaProducer

    topic = new_topic(bootstrap)
    committed, aborted = committed_and_aborted("kafka-python")
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"k-{topic}")
    try:
        producer.init_transactions()
        for values, commit in ((committed, True), (aborted, False)):
            producer.begin_transaction()
            for i, value in enumerate(values):
                producer.send(topic, value, partition=i % PARTITIONS)
            producer.flush(timeout=30)  # sent before the end, an abort included
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=10)
    check_reads(bootstrap, topic, "kafka-python")


def test_aiokafka_commits_and_aborts(bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer

    topic = new_topic(bootstrap)
    committed, aborted = committed_and_aborted("aiokafka")

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"a-{topic}")
        await producer.start()
        try:
            for values, commit in ((committed, True), (aborted, False)):
                await producer.begin_transaction()
                for i, value in enumerate(values):
                    await producer.send_and_wait(topic, value, partition=i % PARTITIONS)
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(run())
    check_reads(bootstrap, topic, "aiokafka")


def test_a_copier_with_send_offsets_copies_exactly_once(bootstrap: str) -> None:
    source, sink = new_topic(bootstrap), new_topic(bootstrap)
    group = f"copier-{source}"
    values = [f"record {i}".encode() for i in range(20)]
    seed = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        seed.produce(source, value, partition=i % PARTITIONS)
    assert seed.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([source])
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"copy-{source}"})
    producer.init_transactions(30)
    copied = 0
    try:

        def copy_some() -> bool:
            nonlocal copied
            batch = [m for m in consumer.consume(10, 1.0) if m.error() is None]
            if not batch:
                return copied >= len(values)
            producer.begin_transaction()
            for message in batch:
                partition = message.partition()
                assert partition is not None  # a consumed record has its partition
                producer.produce(sink, message.value(), partition=partition)
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
            )
            producer.commit_transaction(30)
            copied += len(batch)
            return copied >= len(values)

        wait_until(copy_some, 90, "the copier to copy every record")
    finally:
        consumer.close()
    assert sorted(read_all(bootstrap, sink, "read_committed", len(values))) == sorted(values)
    checker = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        offsets = checker.committed([TopicPartition(source, p) for p in range(PARTITIONS)], 30)
    finally:
        checker.close()
    assert sum(tp.offset for tp in offsets) == len(values)
