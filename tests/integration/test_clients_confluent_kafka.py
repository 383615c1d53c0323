"""confluent-kafka (its bundled librdkafka) against a 3-broker minikafka cluster started as
`minikafka cluster up`.

AdminClient lists the cluster (brokers, controller id, topics, DescribeCluster) and creates
topics; Producer writes with acks 0, 1 and all (all with enable.idempotence, so
InitProducerId and sequence numbers are on the path) and every codec; Consumer reads back
by assign and seek (earliest, latest, by timestamp with offsets_for_times) and gets
exactly what was written: keys, values, headers, timestamps, offsets. The stored batches
are read raw from the leader, so a codec the client dropped would show. A long-polling
fetch returns as soon as a record arrives.

The newest librdkafka prefers flexible versions (Metadata v12, Fetch v12, Produce v9), so
this module covers those. One cluster per module; every wait is a poll with a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.integration.cluster import TestCluster
from tests.integration.roundtrip import (
    MAX_WAIT_MS,
    Row,
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

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
ACKS = ("0", "1", "all")
CASES = [(codec, acks) for codec in CODECS for acks in ACKS]
#: one partition per (codec, acks) case, so every case's offsets start at 0
ROUNDTRIP = "ck-roundtrip"
SEEK = "ck-seek"
TIMES = "ck-times"
LONG_POLL = "ck-long-poll"
RESTART = "ck-restart"
TOPICS = {
    ROUNDTRIP: (len(CASES), 2),
    SEEK: (1, 2),
    TIMES: (1, 3),
    LONG_POLL: (1, 1),
    RESTART: (1, 1),
}


@pytest.fixture(scope="module")
def c(cluster3: TestCluster) -> Iterator[TestCluster]:
    """The cluster once every broker knows all three, with the module's topics made by
    the admin client."""
    wait_until(lambda: cluster3.local.metadata_complete(), 30, "every broker's metadata")
    client = admin(cluster3)  # kept alive until the futures are done
    futures = client.create_topics(
        [NewTopic(name, n, rf) for name, (n, rf) in TOPICS.items()], operation_timeout=30
    )
    for future in futures.values():
        future.result(60)
    yield cluster3


def admin(c: TestCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})


def consumer_for(c: TestCluster, **config: Any) -> Consumer:
    """An assign-only consumer: librdkafka wants a group id, but nothing here uses the
    group (no subscribe, no commits; the consumer-group modules cover those)."""
    settings = {
        "bootstrap.servers": c.layout.bootstrap_servers,
        "group.id": "ck-assign-only",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
    }
    settings.update({k.replace("_", "."): v for k, v in config.items()})
    return Consumer(settings)


def produce(
    c: TestCluster, rows: list[Row], topic: str, partition: int, **config: Any
) -> list[int]:
    """Send ``rows`` with a new Producer; the offsets its delivery reports give."""
    settings = {"bootstrap.servers": c.layout.bootstrap_servers, "linger.ms": 5}
    settings.update({k.replace("_", "."): v for k, v in config.items()})
    producer = Producer(settings)
    reports: list[tuple[KafkaError | None, int | None]] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        reports.append((err, msg.offset()))

    for _, k, v, h, ts in rows:
        headers: list[tuple[str, str | bytes | None]] = list(h)
        producer.produce(
            topic, value=v, key=k, partition=partition, timestamp=ts, headers=headers,
            on_delivery=on_delivery,
        )  # fmt: skip
    assert producer.flush(30) == 0, "records left undelivered"
    assert [err for err, _ in reports] == [None] * len(rows)
    return [-1 if offset is None else offset for _, offset in reports]


def as_row(m: Message) -> Row:
    kind, ts = m.timestamp()
    assert kind == TIMESTAMP_CREATE_TIME
    offset, value = m.offset(), m.value()
    assert offset is not None and value is not None
    headers = cast(list[tuple[str, bytes]], m.headers() or [])
    return (offset, m.key(), value, headers, ts)


def consume(consumer: Consumer, tp: TopicPartition | None, n: int) -> list[Row]:
    """Assign ``tp`` (its offset says where to start; None: keep the assignment) and read
    ``n`` records (or fail after 20 s)."""
    if tp is not None:
        consumer.assign([tp])
    got: list[Row] = []
    deadline = time.monotonic() + 20
    while len(got) < n and time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got.append(as_row(m))
    assert len(got) >= n, f"{len(got)} of {n} records from {tp}"
    return got


# -- the tests --------------------------------------------------------------------------------


def test_metadata_lists_brokers_controller_and_topics(c: TestCluster) -> None:
    client = admin(c)
    md = client.list_topics(timeout=20)
    assert md.controller_id == c.controller()
    expected = broker_addresses(c)
    assert {(b.id, str(b.host), b.port) for b in md.brokers.values()} == expected
    assert set(TOPICS) <= set(md.topics)
    roundtrip = md.topics[ROUNDTRIP]
    assert roundtrip.error is None
    assert sorted(roundtrip.partitions) == list(range(len(CASES)))
    for p in roundtrip.partitions.values():
        assert len(p.replicas) == 2 and p.leader in p.replicas

    described = client.describe_cluster(request_timeout=20).result(30)
    assert described.controller.id == c.controller()
    assert {(n.id, n.host, n.port) for n in described.nodes} == expected


def test_admin_creates_topics(c: TestCluster) -> None:
    client = admin(c)
    (future,) = client.create_topics([NewTopic("ck-created", 4, 3)], operation_timeout=30).values()
    future.result(60)
    (again,) = client.create_topics([NewTopic("ck-created", 1, 1)], operation_timeout=30).values()
    with pytest.raises(KafkaException) as refused:
        again.result(60)
    assert refused.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    # the response came once every broker knew the topic
    for i in c.broker_ids:
        (topic,) = c.metadata(i, ["ck-created"]).topics
        assert topic.error_code == 0 and len(topic.partitions) == 4
        assert all(sorted(p.replica_nodes) == [0, 1, 2] for p in topic.partitions)
    md = client.list_topics("ck-created", timeout=20)
    assert sorted(md.topics["ck-created"].partitions) == [0, 1, 2, 3]


@pytest.mark.parametrize(("codec", "acks"), CASES)
def test_produce_and_consume_every_codec_and_acks(c: TestCluster, codec: str, acks: str) -> None:
    partition = CASES.index((codec, acks))
    rows = sample(f"{codec}-{acks}", timestamp_ms())
    idempotent = acks == "all"
    offsets = produce(
        c, rows, ROUNDTRIP, partition, acks=acks, compression_type=codec,
        enable_idempotence=idempotent,
    )  # fmt: skip
    if acks != "0":
        assert offsets == [r[0] for r in rows]

    consumer = consumer_for(c)
    try:
        got = consume(consumer, TopicPartition(ROUNDTRIP, partition, OFFSET_BEGINNING), len(rows))
    finally:
        consumer.close()
    assert got == rows

    batches = checked_batches(c, ROUNDTRIP, partition, len(rows), idempotent)
    assert_compressed(batches, codec)


def test_seek_to_earliest_and_latest(c: TestCluster) -> None:
    first = sample("seek", timestamp_ms(), 3)
    assert produce(c, first, SEEK, 0, acks="all") == [0, 1, 2]
    consumer = consumer_for(c)
    try:
        assert consumer.get_watermark_offsets(TopicPartition(SEEK, 0), timeout=20) == (0, 3)
        assert consume(consumer, TopicPartition(SEEK, 0, OFFSET_BEGINNING), 3) == first
        assert consume(consumer, TopicPartition(SEEK, 0, 1), 2) == first[1:]
    finally:
        consumer.close()

    # from latest: only what is written after the consumer took its position
    leader = leader_of(c, SEEK, 0)
    before = fetch_requests(c, leader)
    latest = consumer_for(c)
    try:
        latest.assign([TopicPartition(SEEK, 0, OFFSET_END)])
        assert latest.poll(0.1) is None
        # it fetches once ListOffsets has told it where the end is
        wait_until(lambda: fetch_requests(c, leader) > before, 20, "a fetch at the leader")
        (_, k, v, h, ts) = sample("seek-late", timestamp_ms(), 1)[0]
        assert produce(c, [(3, k, v, h, ts)], SEEK, 0, acks="1") == [3]
        assert consume(latest, None, 1) == [(3, k, v, h, ts)]
    finally:
        latest.close()


def test_seek_by_timestamp(c: TestCluster) -> None:
    base = timestamp_ms()
    rows: list[Row] = [(i, f"t{i}".encode(), b"v", [], base + 10_000 * i) for i in range(3)]
    # acks=all: the lookups below see only offsets under the high watermark
    assert produce(c, rows, TIMES, 0, acks="all") == [0, 1, 2]
    consumer = consumer_for(c)
    try:
        (found,) = consumer.offsets_for_times([TopicPartition(TIMES, 0, base + 5_000)], 20)
        assert found.error is None and found.offset == 1
        (exact,) = consumer.offsets_for_times([TopicPartition(TIMES, 0, base + 20_000)], 20)
        assert exact.offset == 2
        (beyond,) = consumer.offsets_for_times([TopicPartition(TIMES, 0, base + 30_000)], 20)
        assert beyond.offset == OFFSET_END  # no such record: the end
        assert consume(consumer, TopicPartition(TIMES, 0, found.offset), 2) == rows[1:]
    finally:
        consumer.close()


def test_long_poll_fetch_returns_as_soon_as_data_arrives(c: TestCluster) -> None:
    leader = leader_of(c, LONG_POLL, 0)
    waiting = consumer_for(c, fetch_wait_max_ms=MAX_WAIT_MS, fetch_min_bytes=1)
    try:
        before = fetch_requests(c, leader)
        waiting.assign([TopicPartition(LONG_POLL, 0, OFFSET_END)])
        assert waiting.poll(0.1) is None  # librdkafka fetches in its own threads
        wait_until(lambda: fetch_requests(c, leader) > before, 20, "a fetch at the leader")
        # the fetch now waits at the leader for up to MAX_WAIT_MS
        rows: list[Row] = [(0, b"k", b"arrived", [], timestamp_ms())]
        assert produce(c, rows, LONG_POLL, 0, acks="1") == [0]
        produced = time.monotonic()
        m = waiting.poll(2 * MAX_WAIT_MS / 1000)
        elapsed = time.monotonic() - produced
    finally:
        waiting.close()
    # the closed consumer's next fetch may still wait at the leader (its connection is
    # muted while a request is in flight); a record completes it, so that the cluster's
    # graceful shutdown at the end of the module does not wait out MAX_WAIT_MS for it
    produce(c, [(1, b"k", b"release", [], timestamp_ms())], LONG_POLL, 0, acks="1")
    assert m is not None and m.error() is None
    assert as_row(m) == rows[0]
    assert_answered_early(elapsed)


def test_producer_and_consumer_carry_on_across_a_leader_restart(c: TestCluster) -> None:
    """kill -9 of the leader of a replication-factor-1 partition, then a restart: the
    idempotent producer's records queued meanwhile land once each, and the consumer
    reads on from where it was (leader epochs move: librdkafka validates its position
    with OffsetForLeaderEpoch). Last in the module: the other topics' leaders move."""
    leader = leader_of(c, RESTART, 0)
    settings = {
        "bootstrap.servers": c.layout.bootstrap_servers,
        "enable.idempotence": True,
        "linger.ms": 5,
        "message.timeout.ms": 90_000,
    }
    producer = Producer(settings)
    reports: list[tuple[KafkaError | None, int | None, bytes | None]] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        reports.append((err, msg.offset(), msg.value()))

    def send(values: list[bytes]) -> None:
        for v in values:
            producer.produce(RESTART, value=v, partition=0, on_delivery=on_delivery)

    before = [f"before-{i}".encode() for i in range(5)]
    after = [f"after-{i}".encode() for i in range(5)]
    consumer = consumer_for(c)
    try:
        send(before)
        assert producer.flush(30) == 0
        read = consume(consumer, TopicPartition(RESTART, 0, OFFSET_BEGINNING), 5)
        assert [(r[0], r[2]) for r in read] == list(enumerate(before))

        c.local.kill_broker(leader)
        send(after)  # queued while the partition has no leader
        restart_once_expired(c, leader)
        assert producer.flush(60) == 0, "records left undelivered"
        read = consume(consumer, None, 5)
    finally:
        consumer.close()
    assert [(r[0], r[2]) for r in read] == [(5 + i, v) for i, v in enumerate(after)]
    assert reports == [(None, i, v) for i, v in enumerate(before + after)]
    wait_until(lambda: c.local.metadata_complete(), 30, "every broker's metadata after the restart")
