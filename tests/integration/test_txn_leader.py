"""Transactions on the partition leader's side, against two real broker processes.

The transactions are written here by hand, without the coordinator: the transactional
batches through Produce (the brokers run with ``minikafka.transactions.enable``) and the
COMMIT/ABORT markers with WriteTxnMarkers, as the coordinator sends them. Every client's
read_committed consumer (confluent-kafka, kafka-python, aiokafka, kcat) must then see each committed
record once, no aborted one, and nothing from an open transaction on; ``minikafka
transactions`` finds and aborts a hanging transaction; TxnOffsetCommit's offsets wait for
their marker.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition

from broker.group.partitioner import partition_for
from protocol import ApiKey, ErrorCode
from protocol.messages import (
    CreateTopicsRequest,
    FindCoordinatorRequest,
    ListOffsetsRequest,
    OffsetFetchRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)
from protocol.values import LATEST_TIMESTAMP, READ_COMMITTED, READ_UNCOMMITTED, TopicPartition
from spark_jobs.planning import OffsetRange
from spark_jobs.wire import WireBackend, read_wire_range
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.test_clients_kcat import KCAT
from tests.polling import until, wait_until
from tests.records import record_batch
from tools.main import main as minikafka
from tools.zookeeper_server import ZooKeeperServer

OFFSETS_PARTITIONS = 3
OVERRIDES = (
    ("offsets.topic.replication.factor", "2"),
    ("offsets.topic.num.partitions", str(OFFSETS_PARTITIONS)),
    ("minikafka.transactions.enable", "true"),
)


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("txn-leader"), 2, OVERRIDES)


# -- raw requests ------------------------------------------------------------------------------


def create_topic(c: TestCluster, name: str) -> None:
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=2)
    body = CreateTopicsRequest(topics=[topic], timeout_ms=20_000, validate_only=False)
    controller = c.controller()
    assert controller is not None
    assert c.request(controller, ApiKey.CREATE_TOPICS, 7, body).topics[0].error_code == 0
    wait_until(lambda: leader(c, name) >= 0, what=f"a leader for {name}")


def leader(c: TestCluster, topic: str, partition: int = 0) -> int:
    for t in c.metadata(0, [topic]).topics:
        for p in t.partitions:
            if p.partition_index == partition:
                return int(p.leader_id)
    return -1


def produce(c: TestCluster, topic: str, batch: bytes) -> int:
    """One batch to partition 0 with acks=all; its base offset."""
    part = ProduceRequest.PartitionProduceData(index=0, records=batch)
    body = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=20_000,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[part])],
    )
    answer = c.request(leader(c, topic), ApiKey.PRODUCE, 9, body).responses[0]
    result = answer.partition_responses[0]
    assert result.error_code == ErrorCode.NONE, result.error_message
    return int(result.base_offset)


def txn_batch(producer_id: int, sequence: int, values: list[str]) -> bytes:
    return record_batch(
        len(values),
        value=lambda i: values[i].encode(),
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=sequence,
        is_transactional=True,
    )


def plain_batch(value: str) -> bytes:
    return record_batch(1, value=value.encode())


def write_marker(
    c: TestCluster,
    broker: int,
    topic: str,
    partition: int,
    producer_id: int,
    commit: bool,
    coordinator_epoch: int = 0,
) -> int:
    marker = WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=producer_id,
        producer_epoch=0,
        transaction_result=commit,
        topics=[
            WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=topic, partition_indexes=[partition])
        ],
        coordinator_epoch=coordinator_epoch,
    )
    body = WriteTxnMarkersRequest(markers=[marker])
    answer = c.request(broker, ApiKey.WRITE_TXN_MARKERS, 1, body)
    return int(answer.markers[0].topics[0].partitions[0].error_code)


def latest(c: TestCluster, topic: str, isolation_level: int) -> int:
    part = ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=LATEST_TIMESTAMP)
    body = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation_level,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[part])],
    )
    answer = c.request(leader(c, topic), ApiKey.LIST_OFFSETS, 7, body).topics[0].partitions[0]
    assert answer.error_code == ErrorCode.NONE
    return int(answer.offset)


# -- the clients' read_committed consumers ----------------------------------------------------


def confluent_values(c: TestCluster, topic: str, isolation: str, end: int) -> list[str]:
    consumer = Consumer(
        {
            "bootstrap.servers": c.layout.bootstrap_servers,
            "group.id": f"ck-{topic}-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    got: list[str] = []
    try:
        consumer.assign([CkTopicPartition(topic, 0, 0)])

        def caught_up() -> bool:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append((msg.value() or b"").decode())
            return consumer.position([CkTopicPartition(topic, 0)])[0].offset >= end

        wait_until(caught_up, 30, f"confluent-kafka {isolation} at offset {end}", interval=0)
    finally:
        consumer.close()
    return got


def kafka_python_values(c: TestCluster, topic: str, end: int) -> list[str]:
    consumer = KafkaConsumer(
        bootstrap_servers=c.layout.bootstrap_servers,
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    tp = KpTopicPartition(topic, 0)
    got: list[str] = []
    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)

        def caught_up() -> bool:
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value.decode() for r in records)
            return bool(consumer.position(tp) >= end)

        wait_until(caught_up, 30, f"kafka-python at offset {end}", interval=0)
    finally:
        consumer.close()
    return got


def aiokafka_values(c: TestCluster, topic: str, end: int) -> list[str]:
    async def run() -> list[str]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=c.layout.bootstrap_servers,
            isolation_level="read_committed",
            enable_auto_commit=False,
        )
        await consumer.start()
        tp = AioTopicPartition(topic, 0)
        got: list[str] = []
        try:
            consumer.assign([tp])
            consumer.seek(tp, 0)

            async def caught_up() -> bool:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    got.extend(r.value.decode() for r in records if r.value is not None)
                return bool(await consumer.position(tp) >= end)

            await until(caught_up, 30, f"aiokafka at offset {end}", interval=0)
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


def kcat_values(c: TestCluster, topic: str) -> list[str]:
    """kcat -C to the end of the partition (the LSO, for read_committed), then exits."""
    assert KCAT is not None
    cmd = [
        KCAT, "-b", c.layout.bootstrap_servers, "-C", "-t", topic, "-p", "0", "-o", "beginning",
        "-e", "-q", "-f", "%s\\n", "-X", "isolation.level=read_committed",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout.decode().split()


def tool(c: TestCluster, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["transactions", "--bootstrap-server", c.layout.bootstrap_servers, *args]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = minikafka(argv)
    return code, out.getvalue(), err.getvalue()


# -- the tests ---------------------------------------------------------------------------------


def test_read_committed_sees_committed_records_once_and_stops_at_an_open_transaction(
    cluster: TestCluster,
) -> None:
    topic = "txn-read-committed"
    create_topic(cluster, topic)
    broker = leader(cluster, topic)
    assert produce(cluster, topic, txn_batch(7001, 0, ["c0", "c1"])) == 0
    assert produce(cluster, topic, txn_batch(7002, 0, ["a0", "a1"])) == 2
    assert produce(cluster, topic, txn_batch(7001, 2, ["c2"])) == 4
    assert write_marker(cluster, broker, topic, 0, 7001, commit=True) == ErrorCode.NONE
    assert write_marker(cluster, broker, topic, 0, 7002, commit=False) == ErrorCode.NONE
    assert produce(cluster, topic, plain_batch("p0")) == 7
    assert produce(cluster, topic, txn_batch(7003, 0, ["o0"])) == 8  # left open
    assert produce(cluster, topic, plain_batch("p1")) == 9

    # the LSO stops at the open transaction; read_uncommitted reads to the high watermark
    assert latest(cluster, topic, READ_COMMITTED) == 8
    assert latest(cluster, topic, READ_UNCOMMITTED) == 10
    committed = ["c0", "c1", "c2", "p0"]
    assert confluent_values(cluster, topic, "read_committed", 8) == committed
    assert kafka_python_values(cluster, topic, 8) == committed
    assert aiokafka_values(cluster, topic, 8) == committed
    if KCAT is not None:
        assert kcat_values(cluster, topic) == committed
    everything = ["c0", "c1", "a0", "a1", "c2", "p0", "o0", "p1"]
    assert confluent_values(cluster, topic, "read_uncommitted", 10) == everything
    # the project's own console consumer
    argv = [sys.executable, "-m", "tools.main", "console-consumer", "--bootstrap-server",
            cluster.layout.bootstrap_servers, "--topic", topic, "--from-beginning",
            "--isolation-level", "read_committed", "--max-messages", "4"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout.decode().split() == committed
    # the Spark source's wire reader (kafka.isolation.level=read_committed), without Spark
    servers = cluster.layout.bootstrap_servers
    backend = WireBackend(servers, (), READ_COMMITTED)
    tp = TopicPartition(topic, 0)
    assert backend.bounds([tp])[tp] == (0, 8)
    rows = read_wire_range(servers, OffsetRange(tp, 0, 8), (), READ_COMMITTED)
    assert [v.decode() for b in rows for v in b.column("value").to_pylist()] == committed


def test_transactions_abort_unblocks_a_hanging_transaction(cluster: TestCluster) -> None:
    topic = "txn-hanging"
    create_topic(cluster, topic)
    assert produce(cluster, topic, plain_batch("p0")) == 0
    assert produce(cluster, topic, txn_batch(7010, 0, ["h0", "h1"])) == 1
    assert produce(cluster, topic, plain_batch("p1")) == 3
    assert latest(cluster, topic, READ_COMMITTED) == 1

    code, out, err = tool(cluster, "describe-producers", "--topic", topic, "--partition", "0")
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert rows[0] == [
        "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
        "LastTimestamp", "CurrentTransactionStartOffset",
    ]  # fmt: skip
    assert rows[1:] == [["7010", "0", "None", "1", "1001", "1"]]
    # the follower (--broker-id) has the same state once it has the batch (acks=all)
    follower = str(1 - leader(cluster, topic))
    code, out, err = tool(
        cluster, "describe-producers", "--topic", topic, "--partition", "0", "--broker-id", follower
    )
    assert code == 0, err
    assert [line.split() for line in out.splitlines() if line.strip()][1:] == rows[1:]

    # no coordinator has it: it hangs (record timestamps are from 1970: long past any timeout)
    code, out, err = tool(cluster, "find-hanging", "--topic", topic)
    assert code == 0, err
    hanging = [line.split() for line in out.splitlines() if line.strip()][1:]
    assert [(r[0], r[1], r[2], r[5]) for r in hanging] == [(topic, "0", "7010", "1")]

    code, _, err = tool(
        cluster, "abort", "--topic", topic, "--partition", "0", "--start-offset", "2"
    )
    assert code == 1 and "Could not find any open transactions starting at offset 2" in err
    code, _, err = tool(
        cluster, "abort", "--topic", topic, "--partition", "0", "--start-offset", "1"
    )
    assert code == 0, err
    # the marker is at 4: the LSO moves past it once it is replicated (the answer waited)
    assert latest(cluster, topic, READ_COMMITTED) == 5
    assert confluent_values(cluster, topic, "read_committed", 4) == ["p0", "p1"]
    code, out, _ = tool(cluster, "find-hanging", "--topic", topic)
    assert [line for line in out.splitlines() if line.strip()][1:] == []


def test_markers_are_fenced_by_producer_and_coordinator_epochs(cluster: TestCluster) -> None:
    topic = "txn-fencing"
    create_topic(cluster, topic)
    broker = leader(cluster, topic)
    other = 1 - broker
    produce(cluster, topic, txn_batch(7020, 0, ["x"]))
    assert write_marker(cluster, other, topic, 0, 7020, True, 5) == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    assert write_marker(cluster, broker, topic, 0, 7020, True, 5) == ErrorCode.NONE
    produce(cluster, topic, txn_batch(7020, 1, ["y"]))
    assert write_marker(cluster, broker, topic, 0, 7020, False, 4) == (
        ErrorCode.TRANSACTION_COORDINATOR_FENCED
    )
    assert latest(cluster, topic, READ_COMMITTED) == 2  # y's transaction is still open
    assert write_marker(cluster, broker, topic, 0, 7020, False, 5) == ErrorCode.NONE
    assert latest(cluster, topic, READ_COMMITTED) == 4


# -- TxnOffsetCommit ----------------------------------------------------------------------------


def coordinator(c: TestCluster, group: str) -> int:
    def found() -> int | None:
        body = FindCoordinatorRequest(key=group, key_type=0)
        answer = c.request(0, ApiKey.FIND_COORDINATOR, 3, body)
        return int(answer.node_id) if answer.error_code == ErrorCode.NONE else None

    return wait_until(found, 60, f"the coordinator of {group}")


def txn_commit(c: TestCluster, node: int, group: str, topic: str, pid: int, offset: int) -> int:
    part = TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
        partition_index=0, committed_offset=offset, committed_metadata=""
    )
    body = TxnOffsetCommitRequest(
        transactional_id="tx",
        group_id=group,
        producer_id=pid,
        producer_epoch=0,
        topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=topic, partitions=[part])],
    )
    answer = c.request(node, ApiKey.TXN_OFFSET_COMMIT, 3, body)
    return int(answer.topics[0].partitions[0].error_code)


def offset_fetch(c: TestCluster, node: int, group: str, topic: str) -> tuple[int, int]:
    body = OffsetFetchRequest(
        group_id=group,
        topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
        require_stable=True,
    )
    p: Any = c.request(node, ApiKey.OFFSET_FETCH, 7, body).topics[0].partitions[0]
    return int(p.error_code), int(p.committed_offset)


def test_txn_offset_commit_waits_for_its_marker(cluster: TestCluster) -> None:
    topic, group = "txn-offsets", "txn-group"
    create_topic(cluster, topic)
    node = coordinator(cluster, group)
    offsets_partition = partition_for(group, OFFSETS_PARTITIONS)

    assert txn_commit(cluster, node, group, topic, 7100, 42) == ErrorCode.NONE
    assert offset_fetch(cluster, node, group, topic) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
    marker = write_marker(cluster, node, "__consumer_offsets", offsets_partition, 7100, True)
    assert marker == ErrorCode.NONE
    assert offset_fetch(cluster, node, group, topic) == (ErrorCode.NONE, 42)

    assert txn_commit(cluster, node, group, topic, 7101, 50) == ErrorCode.NONE
    assert offset_fetch(cluster, node, group, topic)[0] == ErrorCode.UNSTABLE_OFFSET_COMMIT
    marker = write_marker(cluster, node, "__consumer_offsets", offsets_partition, 7101, False)
    assert marker == ErrorCode.NONE
    assert offset_fetch(cluster, node, group, topic) == (ErrorCode.NONE, 42)
