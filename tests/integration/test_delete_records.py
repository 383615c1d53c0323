"""DeleteRecords end to end on a 3-broker cluster of real processes, topics of replication
factor 3 with small segments.

Records are deleted with ``minikafka delete-records``, confluent-kafka's
``AdminClient.delete_records`` and kafka-python's ``KafkaAdminClient.delete_records``;
each answer carries the low watermark, which the broker gives only once every live
replica moved its log start there. Each replica is then read as leader in turn (the
replica order is rotated by a reassignment and a preferred election moves the
leadership): a consumer from the beginning starts at the new log start on every one of
them, and a fetch below it is OFFSET_OUT_OF_RANGE. Offsets above the high watermark are
OFFSET_OUT_OF_RANGE, a compact topic POLICY_VIOLATION. The retention task (every 300 ms
here) removes the segments wholly below the new start on every broker.

One cluster is shared by the module; every wait is a poll with a deadline.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from kafka.admin import KafkaAdminClient
from kafka.structs import TopicPartition as KTopicPartition

from client import KafkaClient, alter_partition_reassignments, elect_leaders, list_offsets
from protocol import ApiKey, ErrorCode
from protocol.messages import FetchRequest
from protocol.values import EARLIEST_TIMESTAMP, TopicPartition
from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.main import main as minikafka
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(180)

T = TypeVar("T")

RECORDS = 60
#: about a dozen 1 KiB segments of five-record batches for the 60 records
SEGMENT_BYTES = "1024"


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    overrides = (
        ("log.retention.check.interval.ms", "300"),
        ("log.segment.delete.delay.ms", "200"),
        ("log.initial.task.delay.ms", "0"),
    )
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("delete-records"), 3, overrides)


@pytest.fixture(scope="module")
def admin(c: TestCluster) -> AdminClient:
    wait_until(lambda: c.controller() is not None, 30, "a controller")
    return AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})


def create(admin: AdminClient, name: str, **config: str) -> None:
    topic = NewTopic(name, 1, 3, config=config)  # every broker holds a replica
    admin.create_topics([topic], operation_timeout=30)[name].result(60)


def produce(c: TestCluster, topic: str, n: int = RECORDS) -> None:
    producer = Producer({
        "bootstrap.servers": c.layout.bootstrap_servers, "acks": "all",
        "linger.ms": 5, "batch.num.messages": 5,
    })  # fmt: skip
    for i in range(n):
        producer.produce(topic, value=b"value-%03d-" % i + b"x" * 60, partition=0)
    assert producer.flush(30) == 0


def run(work: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(work)


def first_offset_from_the_beginning(c: TestCluster, topic: str) -> int:
    """The offset of the first record a new consumer reads from the beginning."""
    consumer = Consumer({
        "bootstrap.servers": c.layout.bootstrap_servers, "group.id": f"{topic}-reader",
        "enable.auto.commit": False, "fetch.wait.max.ms": 100,
    })  # fmt: skip
    consumer.assign([CTopicPartition(topic, 0, OFFSET_BEGINNING)])
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is None:
                continue
            assert m.error() is None, m.error()
            offset = m.offset()
            assert offset is not None
            return offset
    finally:
        consumer.close()
    raise AssertionError(f"no record of {topic} within 20 s")


def leader_of(c: TestCluster, topic: str) -> int:
    [t] = c.metadata(0, [topic]).topics
    return int(t.partitions[0].leader_id)


def fetch_error(c: TestCluster, topic: str, offset: int) -> int:
    """A consumer's Fetch at ``offset`` from the partition's leader: its error code."""
    part = FetchRequest.FetchPartition(
        partition=0, fetch_offset=offset, partition_max_bytes=1 << 16, log_start_offset=-1
    )
    body = FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])],
    )  # fmt: skip
    response = c.request(leader_of(c, topic), ApiKey.FETCH, 11, body)
    return int(response.responses[0].partitions[0].error_code)


def make_leader(c: TestCluster, topic: str, broker: int) -> None:
    """Rotate the replica order to put ``broker`` first, then elect it preferred leader."""
    order = [broker] + [b for b in (0, 1, 2) if b != broker]

    async def move() -> None:
        async with KafkaClient(c.layout.bootstrap_servers) as client:
            started = await alter_partition_reassignments(client, {TopicPartition(topic, 0): order})
            assert started == {TopicPartition(topic, 0): None}

    run(move())

    def elected() -> bool:
        async def elect() -> None:
            async with KafkaClient(c.layout.bootstrap_servers) as client:
                await elect_leaders(client, 0, [(topic, 0)], timeout_ms=5000)

        run(elect())
        return all(leader_of_on(c, i, topic) == broker for i in c.broker_ids)

    wait_until(elected, 30, f"broker {broker} leading {topic}-0")


def leader_of_on(c: TestCluster, i: int, topic: str) -> int:
    [t] = c.metadata(i, [topic]).topics
    return int(t.partitions[0].leader_id)


def earliest(c: TestCluster, topic: str) -> int:
    async def ask() -> int:
        async with KafkaClient(c.layout.bootstrap_servers) as client:
            await client.refresh_metadata([topic])
            return (await list_offsets(client, topic, {0: EARLIEST_TIMESTAMP}))[0]

    return run(ask())


def has_segments_below(c: TestCluster, i: int, topic: str, offset: int) -> bool:
    """Whether broker i's ``topic``-0 has a segment wholly below ``offset``: one whose
    next segment starts at or below it (files being deleted, renamed ``.deleted``, are
    gone from the log already)."""
    directory = c.layout.log_dir(i) / f"{topic}-0"
    bases = sorted(int(p.name.split(".")[0]) for p in directory.glob("*.log"))
    return len(bases) > 1 and bases[1] <= offset


def test_the_tool_deletes_on_every_replica_and_consumers_start_there_after_leader_changes(
    c: TestCluster,
    admin: AdminClient,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = "dr-tool"
    create(admin, topic, **{"segment.bytes": SEGMENT_BYTES})
    produce(c, topic)
    # a replica's segments roll by its appends: some broker has segments wholly below 40
    assert any(has_segments_below(c, i, topic, 40) for i in c.broker_ids)
    offsets = tmp_path / "offsets.json"
    offsets.write_text(
        json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 40}], "version": 1})
    )
    capsys.readouterr()
    status = minikafka(
        ["delete-records", "--bootstrap-server", c.layout.bootstrap_servers,
         "--offset-json-file", str(offsets)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.splitlines()[-2:] == [
        "Records delete operation completed:",
        f"partition: {topic}-0\tlow_watermark: 40",
    ]
    assert fetch_error(c, topic, 39) == ErrorCode.OFFSET_OUT_OF_RANGE
    assert fetch_error(c, topic, 40) == ErrorCode.NONE
    # every replica in turn serves the partition, starting at 40
    for broker in (1, 2, 0):
        make_leader(c, topic, broker)
        assert earliest(c, topic) == 40
        assert first_offset_from_the_beginning(c, topic) == 40
        assert fetch_error(c, topic, 0) == ErrorCode.OFFSET_OUT_OF_RANGE

    # the retention task drops every segment wholly below 40, on every broker
    wait_until(
        lambda: not any(has_segments_below(c, i, topic, 40) for i in c.broker_ids),
        30,
        "segments below offset 40 removed on every broker",
    )


def test_confluent_kafka_admin_deletes_records_and_gets_the_low_watermark(
    c: TestCluster, admin: AdminClient
) -> None:
    topic = "dr-confluent"
    create(admin, topic)
    produce(c, topic, 20)
    [future] = admin.delete_records([CTopicPartition(topic, 0, 12)]).values()
    assert future.result(60).low_watermark == 12
    assert first_offset_from_the_beginning(c, topic) == 12
    # -1: up to the high watermark
    [future] = admin.delete_records([CTopicPartition(topic, 0, -1)]).values()
    assert future.result(60).low_watermark == 20
    assert earliest(c, topic) == 20


def test_every_broker_exports_the_delete_records_purgatory_gauges(c: TestCluster) -> None:
    for i in c.broker_ids:
        with urllib.request.urlopen(c.layout.metrics_url(i), timeout=5) as response:
            text = response.read().decode()
        for family in ("minikafka_purgatory_size", "minikafka_purgatory_delayed_operations"):
            assert any(
                line.startswith(family + "{") and 'purgatory="DeleteRecords"' in line
                for line in text.splitlines()
            ), (i, family)


def test_kafka_python_admin_deletes_records(c: TestCluster, admin: AdminClient) -> None:
    topic = "dr-kafka-python"
    create(admin, topic)
    produce(c, topic, 10)
    client = KafkaAdminClient(bootstrap_servers=c.layout.bootstrap_servers)
    try:
        result = client.delete_records({KTopicPartition(topic, 0): 7}, timeout_ms=30_000)
    finally:
        client.close()
    [answer] = result.values()
    assert (answer["error_code"], answer["low_watermark"]) == (0, 7)
    assert first_offset_from_the_beginning(c, topic) == 7


def test_above_the_high_watermark_is_out_of_range_and_compact_topics_refuse(
    c: TestCluster, admin: AdminClient
) -> None:
    topic = "dr-refused"
    create(admin, topic)
    produce(c, topic, 5)
    [future] = admin.delete_records([CTopicPartition(topic, 0, 6)]).values()
    with pytest.raises(KafkaException) as refused:
        future.result(60)
    assert refused.value.args[0].code() == ErrorCode.OFFSET_OUT_OF_RANGE
    assert earliest(c, topic) == 0

    compact = "dr-compact"
    create(admin, compact, **{"cleanup.policy": "compact"})
    [future] = admin.delete_records([CTopicPartition(compact, 0, 0)]).values()
    with pytest.raises(KafkaException) as refused:
        future.result(60)
    assert refused.value.args[0].code() == ErrorCode.POLICY_VIOLATION
