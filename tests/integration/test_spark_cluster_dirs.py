"""The minikafka Spark source over the log directories of a whole replicated cluster.

Three brokers hold a replica of every partition of an RF 3 topic, so the three log
directories together hold each committed record three times. Read with
``option("path", "<dir0>,<dir1>,<dir2>")``, each record must come back exactly once (one
replica read per partition), with the same rows the wire mode gives.

A record the leader appended but its followers have not copied is above the high
watermark and must not be read. To make one and keep it there, the followers are
paused (SIGSTOP: still in the ISR, so the leader cannot advance its high watermark),
one batch is produced with acks=1, and the leader is killed at once: its directory
then holds the batch beyond the offset its replication-offset-checkpoint names, and
nothing rewrites it while Spark reads it.

The cluster checkpoints high watermarks every 100 ms, so a test waits for the files to
reach the end of the log instead of for the default 5 s interval.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from client.admin import NewTopic, create_topics
from client.client import KafkaClient
from client.produce import produce, produce_body, read_produce_response
from protocol import ApiKey
from protocol.records import Compression, SimpleRecord, build_batch
from protocol.values import TopicPartition
from storage.checkpoint import REPLICATION_OFFSET_CHECKPOINT, read_offset_checkpoint
from storage.reader import iter_batches
from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark

SPREAD = "spread"
PARTITIONS = 3
PENDING = "pending"
COMMITTED = 5
UNCOMMITTED = 3


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("spark-dirs-cluster"),
        3,
        overrides=(("replica.high.watermark.checkpoint.interval.ms", "100"),),
    )


def bootstrap(c: TestCluster) -> str:
    return ",".join(f"127.0.0.1:{p}" for p in c.layout.client_ports)


def log_dirs(c: TestCluster) -> list[str]:
    return [str(c.layout.log_dir(i)) for i in c.broker_ids]


def checkpointed_hw(c: TestCluster, broker: int, tp: TopicPartition) -> int | None:
    path = os.path.join(c.layout.log_dir(broker), REPLICATION_OFFSET_CHECKPOINT)
    return read_offset_checkpoint(path).get(tp)


def create(c: TestCluster, topic: NewTopic) -> None:
    async def go() -> None:
        async with KafkaClient(bootstrap(c)) as client:
            result = await create_topics(client, [topic])
            assert result[topic.name].ok, result[topic.name].describe_error()

    asyncio.run(go())


def full_isr(c: TestCluster, topic: str) -> dict[int, int] | None:
    """partition -> leader once every partition of ``topic`` has all three brokers in
    its ISR (Metadata from broker 0), else None."""
    (t,) = c.metadata(0, [topic]).topics
    if t.error_code != 0 or not t.partitions:
        return None
    if any(sorted(p.isr_nodes) != c.broker_ids for p in t.partitions):
        return None
    return {p.partition_index: p.leader_id for p in t.partitions}


def records(partition: int, first: int, n: int) -> list[SimpleRecord]:
    now = int(time.time() * 1000)
    return [
        SimpleRecord(
            None if i % 3 == 0 else b"k%d" % (i % 4),
            b"p%d-value-%d" % (partition, i),
            [("n", b"%d" % i)] if i % 2 else (),
            now + i,
        )
        for i in range(first, first + n)
    ]


def rows_of(df: DataFrame) -> list[tuple[Any, ...]]:
    """(partition, offset, key, value, headers, timestamp ms) of every row, sorted; a
    duplicate shows as a repeated tuple."""
    return sorted(
        (
            r.partition,
            r.offset,
            None if r.key is None else bytes(r.key),
            bytes(r.value),
            None if r.headers is None else tuple((h.key, bytes(h.value)) for h in r.headers),
            int(r.timestamp.timestamp() * 1000),
        )
        for r in df.collect()
    )


def expected_row(partition: int, offset: int, r: SimpleRecord) -> tuple[Any, ...]:
    headers = tuple(r.headers) or None
    return (partition, offset, r.key, r.value, headers, r.timestamp)


def test_three_brokers_dirs_give_each_record_once_as_the_wire_does(
    spark: SparkSession, c: TestCluster
) -> None:
    create(c, NewTopic(SPREAD, PARTITIONS, 3))
    wait_until(lambda: full_isr(c, SPREAD), 30, "every replica in the ISR")
    expected, batches = [], []
    for p in range(PARTITIONS):
        offset = 0
        for codec in Compression:
            recs = records(p, offset, 4)
            batches.append((p, bytes(build_batch(recs, compression=codec))))
            expected += [expected_row(p, offset + i, r) for i, r in enumerate(recs)]
            offset += len(recs)
    ends = {p: sum(1 for row in expected if row[0] == p) for p in range(PARTITIONS)}

    async def produce_all() -> None:
        async with KafkaClient(bootstrap(c)) as client:
            await client.refresh_metadata([SPREAD])
            for p, batch in batches:
                await produce(client, SPREAD, p, batch)  # acks=all

    asyncio.run(produce_all())
    # every replica's checkpointed high watermark reaches the end: each dir alone then
    # holds every record, so reading all three without choosing would triple them
    wait_until(
        lambda: all(
            checkpointed_hw(c, b, TopicPartition(SPREAD, p)) == ends[p]
            for b in c.broker_ids
            for p in range(PARTITIONS)
        ),
        30,
        "every replica's checkpointed high watermark at the log end",
    )
    from_dirs = (
        spark.read.format("minikafka")
        .option("path", ",".join(log_dirs(c)))
        .option("subscribe", SPREAD)
        .option("includeHeaders", "true")
        .load()
    )
    assert rows_of(from_dirs) == sorted(expected)
    wire = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap(c))
        .option("subscribe", SPREAD)
        .option("includeHeaders", "true")
        .load()
    )
    assert rows_of(wire) == sorted(expected)


def stopped(pid: int) -> bool:
    """True once process ``pid`` is in the stopped state (SIGSTOP delivered)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def offsets_on_disk(partition_dir: str) -> int:
    """The next offset after the last whole batch of a partition's segments."""
    return max((h.next_offset for h, _ in iter_batches(partition_dir)), default=0)


def test_records_above_the_leaders_high_watermark_are_not_read(
    spark: SparkSession, c: TestCluster
) -> None:
    leader, followers = 0, [1, 2]
    tp = TopicPartition(PENDING, 0)
    create(c, NewTopic(PENDING, assignments={0: [leader, *followers]}))
    assert wait_until(lambda: full_isr(c, PENDING), 30, "every replica in the ISR") == {0: leader}
    committed = records(0, 0, COMMITTED)

    async def produce_committed() -> None:
        async with KafkaClient(bootstrap(c)) as client:
            await client.refresh_metadata([PENDING])
            await produce(client, PENDING, 0, bytes(build_batch(committed)))  # acks=all

    asyncio.run(produce_committed())
    wait_until(lambda: checkpointed_hw(c, leader, tp) == COMMITTED, 30, "the leader's checkpoint")
    pending = bytes(build_batch(records(0, COMMITTED, UNCOMMITTED)))
    try:
        for f in followers:
            c.local.signal_broker(f, signal.SIGSTOP)
        wait_until(lambda: all(stopped(c.pid(f)) for f in followers), 10, "followers paused")
        body = produce_body(PENDING, 0, pending, 1, 10_000)
        answer = c.request(leader, ApiKey.PRODUCE, 7, body)
        assert read_produce_response(answer, PENDING, 0).base_offset == COMMITTED
        # frozen before the followers could fetch or leave the ISR
        c.local.kill_broker(leader)
    finally:
        for f in followers:
            c.local.signal_broker(f, signal.SIGCONT)
    leader_dir = c.layout.log_dir(leader)
    assert offsets_on_disk(str(leader_dir / f"{PENDING}-0")) == COMMITTED + UNCOMMITTED
    assert checkpointed_hw(c, leader, tp) == COMMITTED
    try:
        from_leader = (
            spark.read.format("minikafka")
            .option("path", str(leader_dir))
            .option("subscribe", PENDING)
            .option("includeHeaders", "true")
            .load()
        )
        assert rows_of(from_leader) == [expected_row(0, i, r) for i, r in enumerate(committed)]
    finally:
        # the killed broker's session must expire before it can register again
        wait_until(
            lambda: leader not in c.registered(),
            c.session_timeout_s + 20,
            "the killed leader's session to expire",
        )
        c.restart(leader)
