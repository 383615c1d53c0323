"""kafka-python 3 against a 3-broker minikafka cluster started as `minikafka cluster up`.

KafkaAdminClient lists the cluster and creates topics; KafkaProducer writes with acks 0, 1
and all (all is its default, and with it idempotence: the broker must hand out a producer
id, and the stored batches carry it) and with every codec it can use; KafkaConsumer reads
back by assign and seek (earliest, latest, by timestamp) and gets exactly what was written:
keys, values, headers, timestamps, offsets. The stored batches are also read raw from the
leader, so a codec the client quietly dropped would show. A long-polling fetch returns as
soon as a record arrives.

One cluster per module; every wait is a poll with a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import TopicAlreadyExistsError

from tests.integration.cluster import TestCluster
from tests.integration.roundtrip import (
    MAX_WAIT_MS,
    Row,
    as_rows,
    assert_answered_early,
    assert_compressed,
    broker_addresses,
    checked_batches,
    fetch_requests,
    leader_of,
    restart_once_expired,
    sample,
    timestamp_ms,
)
from tests.polling import wait_until

pytestmark = pytest.mark.timeout(240)

CODECS: tuple[str | None, ...] = (None, "gzip", "snappy", "lz4", "zstd")
ACKS: tuple[int | str, ...] = (0, 1, "all")
CASES = [(codec, acks) for codec in CODECS for acks in ACKS]
#: one partition per (codec, acks) case, so every case's offsets start at 0
ROUNDTRIP = "kp-roundtrip"
SEEK = "kp-seek"
TIMES = "kp-times"
LONG_POLL = "kp-long-poll"
RESTART = "kp-restart"


@pytest.fixture(scope="module")
def c(cluster3: TestCluster) -> TestCluster:
    return cluster3


@pytest.fixture(scope="module")
def admin(c: TestCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=c.layout.bootstrap_servers)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def topics(admin: KafkaAdminClient) -> None:
    """The module's topics, created through the admin client."""
    admin.create_topics(
        {
            ROUNDTRIP: {"num_partitions": len(CASES), "replication_factor": 2},
            SEEK: {"num_partitions": 1, "replication_factor": 2},
            TIMES: {"num_partitions": 1, "replication_factor": 3},
            LONG_POLL: {"num_partitions": 1, "replication_factor": 1},
            RESTART: {"num_partitions": 1, "replication_factor": 1},
        },
        timeout_ms=30_000,
    )


@pytest.fixture(scope="module")
def consumer(c: TestCluster, topics: None) -> Iterator[KafkaConsumer]:
    client = KafkaConsumer(
        bootstrap_servers=c.layout.bootstrap_servers,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    try:
        yield client
    finally:
        client.close()


def produce(
    c: TestCluster, rows: list[Row], topic: str, partition: int, **config: Any
) -> list[int]:
    """Send ``rows`` with a new KafkaProducer; the offsets its futures report."""
    producer = KafkaProducer(bootstrap_servers=c.layout.bootstrap_servers, **config)
    try:
        futures = [
            producer.send(topic, key=k, value=v, headers=h, partition=partition, timestamp_ms=ts)
            for _, k, v, h, ts in rows
        ]
        producer.flush(30)
        offsets = [f.get(30).offset for f in futures]
        if producer.config["enable_idempotence"]:
            pid = producer._transaction_manager.producer_id_and_epoch.producer_id
            assert pid >= 0, "idempotent producer got no producer id"
    finally:
        producer.close(10)
    return offsets


def poll_rows(consumer: KafkaConsumer, n: int, timeout: float, poll_ms: int = 200) -> list[Row]:
    """Poll until ``n`` records have come or ``timeout`` seconds have passed."""
    got: list[Row] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=poll_ms).values():
            got += as_rows(records)
    return got


def consume(consumer: KafkaConsumer, tp: TopicPartition, offset: int, n: int) -> list[Row]:
    """Assign ``tp``, seek to ``offset`` and read ``n`` records (or fail after 20 s)."""
    consumer.assign([tp])
    consumer.seek(tp, offset)
    got = poll_rows(consumer, n, 20)
    assert len(got) >= n, f"{len(got)} of {n} records from {tp} at {offset}"
    return got


# -- the tests --------------------------------------------------------------------------------


def test_metadata_lists_brokers_controller_and_topics(
    c: TestCluster, admin: KafkaAdminClient, consumer: KafkaConsumer
) -> None:
    cluster = admin.describe_cluster()
    assert cluster["controller_id"] == c.controller()
    brokers = {(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]}
    assert brokers == broker_addresses(c)
    assert {ROUNDTRIP, SEEK, TIMES, LONG_POLL} <= set(admin.list_topics())
    assert {ROUNDTRIP, SEEK, TIMES, LONG_POLL} <= consumer.topics()
    assert consumer.partitions_for_topic(ROUNDTRIP) == set(range(len(CASES)))


def test_admin_creates_topics(c: TestCluster, admin: KafkaAdminClient) -> None:
    result = admin.create_topics(
        {"kp-created": {"num_partitions": 4, "replication_factor": 3}}, timeout_ms=30_000
    )
    (created,) = result["topics"]
    assert (created["error_code"], created["num_partitions"]) == (0, 4)
    assert created["replication_factor"] == 3
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics({"kp-created": {"num_partitions": 1, "replication_factor": 1}})
    (described,) = admin.describe_topics(["kp-created"])
    assert described["topic_id"] == created["topic_id"]
    partitions = described["partitions"]
    assert sorted(p["partition_index"] for p in partitions) == [0, 1, 2, 3]
    assert all(sorted(p["replica_nodes"]) == [0, 1, 2] for p in partitions)
    # the response came once every broker knew the topic
    for i in c.broker_ids:
        (topic,) = c.metadata(i, ["kp-created"]).topics
        assert topic.error_code == 0 and len(topic.partitions) == 4


@pytest.mark.parametrize(("codec", "acks"), CASES)
def test_produce_and_consume_every_codec_and_acks(
    c: TestCluster, consumer: KafkaConsumer, codec: str | None, acks: int | str
) -> None:
    partition = CASES.index((codec, acks))
    rows = sample(f"{codec}-{acks}", timestamp_ms())
    # acks=all is kafka-python 3's default, and brings idempotence with it
    config: dict[str, Any] = {"compression_type": codec}
    if acks != "all":
        config["acks"] = acks
    offsets = produce(c, rows, ROUNDTRIP, partition, **config)
    if acks != 0:
        assert offsets == [r[0] for r in rows]

    got = consume(consumer, TopicPartition(ROUNDTRIP, partition), 0, len(rows))
    assert got == rows

    batches = checked_batches(c, ROUNDTRIP, partition, len(rows), idempotent=acks == "all")
    assert_compressed(batches, codec)


def test_seek_to_earliest_and_latest(c: TestCluster, consumer: KafkaConsumer) -> None:
    tp = TopicPartition(SEEK, 0)
    first = sample("seek", timestamp_ms(), 3)
    assert produce(c, first, SEEK, 0) == [0, 1, 2]

    consumer.assign([tp])
    consumer.seek_to_end(tp)
    assert consumer.position(tp) == 3
    consumer.seek_to_beginning(tp)
    assert consumer.position(tp) == 0
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.end_offsets([tp]) == {tp: 3}

    consumer.seek_to_end(tp)
    latest = consumer.position(tp)
    (_, k, v, h, ts) = sample("seek-late", timestamp_ms(), 1)[0]
    assert produce(c, [(latest, k, v, h, ts)], SEEK, 0, acks=1) == [3]
    # from latest, only the record written after the seek
    got = consume(consumer, tp, latest, 1)
    assert got == [(3, k, v, h, ts)]
    assert consume(consumer, tp, 0, 4)[:3] == first


def test_seek_by_timestamp(c: TestCluster, consumer: KafkaConsumer) -> None:
    tp = TopicPartition(TIMES, 0)
    base = timestamp_ms()
    rows: list[Row] = [(i, f"t{i}".encode(), b"v", [], base + 10_000 * i) for i in range(3)]
    # acks=all: the lookups below see only offsets under the high watermark
    assert produce(c, rows, TIMES, 0, acks="all") == [0, 1, 2]

    found = consumer.offsets_for_times({tp: base + 5_000})[tp]
    assert (found.offset, found.timestamp) == (1, base + 10_000)
    exact = consumer.offsets_for_times({tp: base + 20_000})[tp]
    assert (exact.offset, exact.timestamp) == (2, base + 20_000)
    assert consumer.offsets_for_times({tp: base + 30_000}) == {tp: None}
    assert consume(consumer, tp, found.offset, 2) == rows[1:]


def test_long_poll_fetch_returns_as_soon_as_data_arrives(c: TestCluster, topics: None) -> None:
    tp = TopicPartition(LONG_POLL, 0)
    leader = leader_of(c, LONG_POLL, 0)
    waiting = KafkaConsumer(
        bootstrap_servers=c.layout.bootstrap_servers,
        enable_auto_commit=False,
        fetch_max_wait_ms=MAX_WAIT_MS,
        fetch_min_bytes=1,
    )
    try:
        waiting.assign([tp])
        waiting.seek_to_end(tp)
        start = waiting.position(tp)
        before = fetch_requests(c, leader)
        assert waiting.poll(timeout_ms=100) == {}  # sends a fetch that finds nothing
        wait_until(lambda: fetch_requests(c, leader) > before, 10, "a fetch at the leader")
        # the fetch now waits at the leader for up to MAX_WAIT_MS
        rows: list[Row] = [(start, b"k", b"arrived", [], timestamp_ms())]
        assert produce(c, rows, LONG_POLL, 0, acks=1) == [start]
        produced = time.monotonic()
        got = poll_rows(waiting, 1, 2 * MAX_WAIT_MS / 1000, poll_ms=100)
        elapsed = time.monotonic() - produced
    finally:
        waiting.close()
    # the closed consumer's next fetch may still wait at the leader (its connection is
    # muted while a request is in flight); a record completes it, so that the cluster's
    # graceful shutdown at the end of the module does not wait out MAX_WAIT_MS for it
    produce(c, [(start + 1, b"k", b"release", [], timestamp_ms())], LONG_POLL, 0, acks=1)
    assert got == rows
    assert_answered_early(elapsed)


def test_producer_and_consumer_carry_on_across_a_leader_restart(
    c: TestCluster, consumer: KafkaConsumer
) -> None:
    """kill -9 of the leader of a replication-factor-1 partition, then a restart: the
    (default idempotent) producer's records sent meanwhile land once each, and the
    consumer reads on from where it was. Last in the module: the other topics' leaders
    move."""
    tp = TopicPartition(RESTART, 0)
    leader = leader_of(c, RESTART, 0)
    before = sample("before", timestamp_ms())
    assert produce(c, before, RESTART, 0) == [0, 1, 2, 3, 4]
    assert consume(consumer, tp, 0, 5) == before

    c.local.kill_broker(leader)
    after = [(5 + i, k, v, h, ts) for i, k, v, h, ts in sample("after", timestamp_ms())]
    producer = KafkaProducer(
        bootstrap_servers=c.layout.bootstrap_servers, delivery_timeout_ms=90_000
    )
    try:
        futures = [
            producer.send(RESTART, key=k, value=v, headers=h, partition=0, timestamp_ms=ts)
            for _, k, v, h, ts in after
        ]
        restart_once_expired(c, leader)
        producer.flush(60)
        assert [f.get(30).offset for f in futures] == [r[0] for r in after]
    finally:
        producer.close(10)
    assert poll_rows(consumer, len(after), 30) == after
    assert consumer.end_offsets([tp]) == {tp: 10}
