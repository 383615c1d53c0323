"""The Spark consumer-lag job on commits a real cluster's group coordinator wrote.

Real clients commit on a 3-broker cluster: a confluent-kafka group that consumes and
commits as it goes (so many superseded commits, and GroupMetadata records from its
rebalances), a group committing as an assign()-mode consumer does (generation -1), and a
group whose commits are deleted with DeleteGroups (tombstones). More records are written
after the commits, so every partition has a lag. The job must then report, per group and
partition, exactly what the coordinator answers over the wire (OffsetFetch) against the
log end offsets (ListOffsets). The job (what ``minikafka spark consumer-lag --path ...``
runs) reads the three brokers' log directories in the test run's shared Spark session:
the offsets topic has a replica in each, and each record must count once. (One job run
only: Spark is slow on two cores; the wire mode of the source has its own tests.)

First of all, the decoder (spark_jobs.offsets_topic) must read what the coordinator
writes: OffsetCommitKey v1 with OffsetCommitValue v3, and GroupMetadataKey v2 records,
which are not commits, skipped.

The log-dir mode stops at the checkpointed high watermark, so the cluster checkpoints
every 100 ms and the test waits until the checkpoints reach the end of the logs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from protocol import ApiKey, ErrorCode
from protocol.data import data_version, decode_data
from protocol.messages import CreateTopicsRequest
from protocol.values import TopicPartition
from spark_jobs.jobs import JobArgs, run_job
from spark_jobs.offsets_topic import decode_commit
from storage.checkpoint import REPLICATION_OFFSET_CHECKPOINT, read_offset_checkpoint
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.group_clients import (
    OFFSETS_TOPIC,
    ConfluentMember,
    committed,
    end_offsets,
    offsets_topic_records,
    produce_values,
    wait_committed,
    wait_delivered,
)
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

OFFSETS_PARTITIONS = 3
TOPIC = "lagging"
PARTITIONS = 3
CONSUMED = "lag-consumed"
ASSIGNED = "lag-assigned"
DELETED = "lag-deleted"
#: (group, topic, partition) -> (committed offset, log end offset, lag)
Lag = dict[tuple[str, str, int], tuple[int, int, int]]


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    overrides = (
        ("offsets.topic.num.partitions", str(OFFSETS_PARTITIONS)),
        ("group.initial.rebalance.delay.ms", "0"),
        ("replica.high.watermark.checkpoint.interval.ms", "100"),
    )
    directory = tmp_path_factory.mktemp("spark-lag")
    with contextlib.contextmanager(start_cluster)(zookeeper, directory, 3, overrides) as cluster:
        wait_until(lambda: cluster.local.metadata_complete(), 30, "every broker's metadata")
        yield cluster


@pytest.fixture(scope="module")
def true_lag(c: TestCluster) -> Lag:
    """The commits made by real clients, and the lag the coordinator reports for them."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as Tp
    from confluent_kafka.admin import AdminClient

    controller = wait_until(c.controller, 20, "a controller")
    new = CreateTopicsRequest.CreatableTopic(
        name=TOPIC, num_partitions=PARTITIONS, replication_factor=3
    )
    body = CreateTopicsRequest(topics=[new], timeout_ms=30_000, validate_only=False)
    (created,) = c.request(controller, ApiKey.CREATE_TOPICS, 7, body).topics
    assert created.error_code == ErrorCode.NONE
    bootstrap = c.layout.bootstrap_servers

    first = produce_values(c, TOPIC, PARTITIONS, 10, "first")
    member = ConfluentMember("lag-member", CONSUMED, TOPIC, bootstrap)
    member.start()
    try:
        wait_delivered([member], first)
        wait_committed(c, CONSUMED, TOPIC, dict.fromkeys(range(PARTITIONS), 10))
    finally:
        member.close()
    assert member.errors() == []

    for group, offsets in ((ASSIGNED, {0: 3, 1: 7, 2: 0}), (DELETED, {0: 1, 1: 1, 2: 1})):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        try:
            done = consumer.commit(
                offsets=[Tp(TOPIC, p, o) for p, o in offsets.items()], asynchronous=False
            )
            assert done is not None and all(tp.error is None for tp in done)
        finally:
            consumer.close()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_consumer_groups([DELETED], request_timeout=30).values():
        future.result(30)

    produce_values(c, TOPIC, PARTITIONS, 5, "second")
    ends = end_offsets(c, TOPIC, PARTITIONS)
    lag: Lag = {}
    for group in (CONSUMED, ASSIGNED):
        for p, offset in committed(c, group, TOPIC, PARTITIONS).items():
            lag[group, TOPIC, p] = (offset, ends[p], ends[p] - offset)
    assert committed(c, DELETED, TOPIC, PARTITIONS) == dict.fromkeys(range(PARTITIONS), -1)
    return lag


def test_the_decoder_reads_what_the_coordinator_writes(c: TestCluster, true_lag: Lag) -> None:
    versions: set[tuple[int, int | None]] = set()
    commits: dict[tuple[str, str, int], int | None] = {}
    for partition in range(OFFSETS_PARTITIONS):
        for key, value in offsets_topic_records(c, partition):
            assert key is not None
            kind = data_version(key)
            versions.add((kind, None if value is None else data_version(value)))
            commit = decode_commit(key, value)
            if kind == 2:  # GroupMetadataKey: a group's membership, not a commit
                assert commit is None
                decode_data("GroupMetadataKey", key)
                if value is not None:
                    decode_data("GroupMetadataValue", value)
                continue
            assert commit is not None
            commits[commit.group, commit.topic, commit.partition] = commit.offset
    # Kafka 3.x writes OffsetCommitKey v1 / OffsetCommitValue v3, GroupMetadataKey v2 /
    # GroupMetadataValue v3 (tombstones: no value)
    assert versions <= {(1, 3), (1, None), (2, 3), (2, None)}
    assert (1, 3) in versions and (2, 3) in versions
    assert (1, None) in versions  # the deleted group's offsets
    live = {k: v for k, v in commits.items() if v is not None}
    assert live == {k: offset for k, (offset, _, _) in true_lag.items()}


def checkpoints_caught_up(c: TestCluster) -> bool:
    """Whether every broker's replication-offset-checkpoint names the end of every
    partition of both topics (what the log-dir mode reads up to)."""
    ends = {
        **{TopicPartition(TOPIC, p): e for p, e in end_offsets(c, TOPIC, PARTITIONS).items()},
        **{
            TopicPartition(OFFSETS_TOPIC, p): e
            for p, e in end_offsets(c, OFFSETS_TOPIC, OFFSETS_PARTITIONS).items()
        },
    }
    for i in c.broker_ids:
        path = os.path.join(c.layout.log_dir(i), REPLICATION_OFFSET_CHECKPOINT)
        checkpoint = read_offset_checkpoint(path)
        if any(checkpoint.get(tp) != end for tp, end in ends.items()):
            return False
    return True


def lag_rows(table_dir: Path) -> dict[tuple[str, str, int], tuple[int, int, int]]:
    rows = pq.read_table(table_dir).to_pylist()
    return {
        (r["group"], r["topic"], r["partition"]): (
            r["committed_offset"], r["log_end_offset"], r["lag"]
        )
        for r in rows
    }  # fmt: skip


def test_consumer_lag_from_the_log_dirs_of_every_broker(
    c: TestCluster, true_lag: Lag, spark: SparkSession, tmp_path: Path
) -> None:
    wait_until(lambda: checkpoints_caught_up(c), 30, "the high-watermark checkpoints")
    dirs = ",".join(str(c.layout.log_dir(i)) for i in c.broker_ids)
    args = JobArgs(source={"path": dirs}, out=tmp_path, now_ms=0)
    run_job("consumer-lag", spark, args, lambda line: None)
    assert lag_rows(tmp_path / "consumer_lag") == true_lag
