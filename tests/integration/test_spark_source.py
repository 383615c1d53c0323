"""The minikafka Spark source against a running broker: the same rows over the wire and
from the broker's log directory while it runs, and a stream with maxOffsetsPerTrigger
that reads every record exactly once and resumes from its checkpoint."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from client.admin import NewTopic, create_topics
from client.client import KafkaClient
from client.produce import produce
from protocol.records import Compression, SimpleRecord, build_batch
from protocol.values import TopicPartition
from storage.checkpoint import REPLICATION_OFFSET_CHECKPOINT, read_offset_checkpoint
from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

TOPIC = "events"
BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def cluster1(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    # The records carry fixed timestamps (BASE_TS, in 2023), far older than the default
    # retention of 7 days: the broker's first retention pass (30 s after it starts) would
    # delete every segment holding them while the tests still read them.
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("spark-cluster"),
        1,
        overrides=(("log.retention.ms", "-1"),),
    )


def bootstrap(c: TestCluster) -> str:
    return ",".join(f"127.0.0.1:{p}" for p in c.layout.client_ports)


def records(first: int, n: int) -> list[SimpleRecord]:
    return [
        SimpleRecord(
            None if i % 3 == 0 else b"k%d" % (i % 5),
            b"value-%d-" % i + b"x" * (i % 50),
            [("n", b"%d" % i)] if i % 2 else (),
            BASE_TS + i,
        )
        for i in range(first, first + n)
    ]


async def _produce_all(servers: str, topic: str, batches: list[tuple[int, bytes]]) -> None:
    async with KafkaClient(servers) as client:
        await client.refresh_metadata([topic])
        for partition, batch in batches:
            await produce(client, topic, partition, batch)


def produce_batches(servers: str, topic: str, batches: list[tuple[int, bytes]]) -> None:
    asyncio.run(_produce_all(servers, topic, batches))


def create(servers: str, topic: str, partitions: int) -> None:
    async def go() -> None:
        async with KafkaClient(servers) as client:
            result = await create_topics(client, [NewTopic(topic, partitions, 1)])
            assert result[topic].ok, result[topic].describe_error()

    asyncio.run(go())


@pytest.fixture(scope="module")
def events(cluster1: TestCluster) -> list[dict[str, Any]]:
    """Topic ``events``: two partitions, a batch of each codec in each; the rows back."""
    servers = bootstrap(cluster1)
    create(servers, TOPIC, 2)
    expected: list[dict[str, Any]] = []
    batches = []
    for partition in (0, 1):
        offset = 0
        for codec in Compression:
            recs = records(offset, 4)
            batches.append((partition, bytes(build_batch(recs, compression=codec))))
            for i, r in enumerate(recs):
                headers = [{"key": k, "value": v} for k, v in r.headers] or None
                expected.append(
                    {"partition": partition, "offset": offset + i, "key": r.key,
                     "value": r.value, "headers": headers, "ts": r.timestamp}
                )  # fmt: skip
            offset += len(recs)
    produce_batches(servers, TOPIC, batches)
    return expected


def rows_of(df: Any) -> list[dict[str, Any]]:
    return [
        {
            "partition": r.partition,
            "offset": r.offset,
            "key": None if r.key is None else bytes(r.key),
            "value": bytes(r.value),
            "headers": None
            if r.headers is None
            else [{"key": h.key, "value": bytes(h.value)} for h in r.headers],
            "ts": int(r.timestamp.timestamp() * 1000),
        }
        for r in df.orderBy("partition", "offset").collect()
    ]


def test_wire_and_log_dir_give_the_same_rows(
    spark: SparkSession, cluster1: TestCluster, events: list[dict[str, Any]]
) -> None:
    wire = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap(cluster1))
        .option("subscribe", TOPIC)
        .option("includeHeaders", "true")
        .load()
    )
    assert rows_of(wire) == events
    # the running broker's own log directory, once its high watermarks are checkpointed
    log_dir = cluster1.layout.directory / "broker-0" / "logs"
    checkpoint = str(log_dir / REPLICATION_OFFSET_CHECKPOINT)
    wait_until(
        lambda: read_offset_checkpoint(checkpoint).get(TopicPartition(TOPIC, 1)) == 20,
        timeout=30,
    )
    from_disk = (
        spark.read.format("minikafka")
        .option("path", str(log_dir))
        .option("subscribe", TOPIC)
        .option("includeHeaders", "true")
        .load()
    )
    assert rows_of(from_disk) == events
    by_time = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap(cluster1))
        .option("subscribe", TOPIC)
        .option("startingTimestamp", str(BASE_TS + 15))
        .option("endingOffsets", '{"events": {"0": 18, "1": -1}}')
        .load()
    )
    assert [(r.partition, r.offset) for r in by_time.orderBy("partition", "offset").collect()] == [
        (0, 15), (0, 16), (0, 17), (1, 15), (1, 16), (1, 17), (1, 18), (1, 19)
    ]  # fmt: skip


def alive(query: Any) -> bool:
    """True while ``query`` runs; a query that failed fails the test at once, with its
    error (rather than after the whole wait for progress that can no longer come)."""
    error = query.exception()
    if error is not None:
        pytest.fail(f"the streaming query failed: {error}")
    return bool(query.isActive)


STREAM_TOPIC = "stream"
PER_PARTITION = 60
CAP = 7


def test_a_stream_reads_each_record_once_in_capped_batches_and_resumes(
    spark: SparkSession, cluster1: TestCluster, tmp_path: Path
) -> None:
    servers = bootstrap(cluster1)
    create(servers, STREAM_TOPIC, 2)
    half = PER_PARTITION // 2

    def write(first: int, n: int) -> None:
        produce_batches(
            servers,
            STREAM_TOPIC,
            [
                (p, bytes(build_batch(records(i, 3))))
                for i in range(first, first + n, 3)
                for p in (0, 1)
            ],
        )

    write(0, half)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def start() -> Any:
        return (
            spark.readStream.format("minikafka")
            .option("kafka.bootstrap.servers", servers)
            .option("subscribe", STREAM_TOPIC)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(CAP))
            .load()
            .select("partition", "offset")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="0 seconds")
            .start()
        )

    def rows_read(query: Any) -> int:
        return sum(p["numInputRows"] for p in query.recentProgress)

    query = start()
    # a producer keeps writing while the stream reads
    producer = threading.Thread(target=write, args=(half, half))
    producer.start()
    try:
        wait_until(lambda: alive(query) and rows_read(query) >= 20, timeout=120, interval=0.5)
        assert all(p["numInputRows"] <= CAP for p in query.recentProgress)
    finally:
        query.stop()
        producer.join(timeout=60)
    assert not producer.is_alive()
    resumed = start()
    try:
        wait_until(
            lambda: alive(resumed) and spark.read.parquet(str(out)).count() >= 2 * PER_PARTITION,
            timeout=120,
            interval=1.0,
        )
        wait_until(
            lambda: (
                alive(resumed)
                and resumed.recentProgress
                and resumed.recentProgress[-1]["numInputRows"] == 0
            ),
            timeout=60,
            interval=0.5,
        )
    finally:
        resumed.stop()
    got = sorted((r.partition, r.offset) for r in spark.read.parquet(str(out)).collect())
    assert got == [(p, o) for p in (0, 1) for o in range(PER_PARTITION)]
    assert os.path.isdir(checkpoint / "offsets")
