"""aiokafka against a 3-broker minikafka cluster started as `minikafka cluster up`.

AIOKafkaAdminClient lists the cluster and creates topics; AIOKafkaProducer writes with
acks 0, 1 and all (all with idempotence, so InitProducerId and sequence checks are on the
path) and every codec; AIOKafkaConsumer reads back by assign and seek (earliest, latest,
by timestamp) and gets exactly what was written: keys, values, headers, timestamps,
offsets. The stored batches are read raw from the leader, so a codec the client dropped
would show. A long-polling fetch returns as soon as a record arrives.

aiokafka never uses flexible versions, so this module covers the
older request versions. One cluster per module; every wait is a poll with a deadline, and
blocking helpers run in a thread so the clients' background tasks keep going.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

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
    sample,
    timestamp_ms,
)
from tests.polling import until

pytestmark = pytest.mark.timeout(240)

CODECS: tuple[str | None, ...] = (None, "gzip", "snappy", "lz4", "zstd")
ACKS: tuple[int | str, ...] = (0, 1, "all")
CASES = [(codec, acks) for codec in CODECS for acks in ACKS]
#: one partition per (codec, acks) case, so every case's offsets start at 0
ROUNDTRIP = "aio-roundtrip"
SEEK = "aio-seek"
TIMES = "aio-times"
LONG_POLL = "aio-long-poll"
TOPICS = {ROUNDTRIP: (len(CASES), 2), SEEK: (1, 2), TIMES: (1, 3), LONG_POLL: (1, 1)}


@pytest.fixture(scope="module")
def c(cluster3: TestCluster) -> Iterator[TestCluster]:
    """The cluster, with the module's topics made by the admin client."""

    async def create() -> None:
        async with admin_client(cluster3) as admin:
            new = [NewTopic(name, n, rf) for name, (n, rf) in TOPICS.items()]
            response = await admin.create_topics(new, timeout_ms=30_000)
            assert [e[1] for e in response.topic_errors] == [0] * len(TOPICS)

    asyncio.run(create())
    yield cluster3


@asynccontextmanager
async def admin_client(c: TestCluster) -> AsyncIterator[AIOKafkaAdminClient]:
    admin = AIOKafkaAdminClient(bootstrap_servers=c.layout.bootstrap_servers)
    await admin.start()
    try:
        yield admin
    finally:
        await admin.close()


@asynccontextmanager
async def consumer_client(c: TestCluster, **config: Any) -> AsyncIterator[AIOKafkaConsumer]:
    config.setdefault("fetch_max_wait_ms", 100)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=c.layout.bootstrap_servers, enable_auto_commit=False, **config
    )
    await consumer.start()
    try:
        yield consumer
    finally:
        await consumer.stop()


async def produce(
    c: TestCluster, rows: list[Row], topic: str, partition: int, **config: Any
) -> list[int | None]:
    """Send ``rows`` with a new AIOKafkaProducer; the offsets it reports (None: acks 0)."""
    producer = AIOKafkaProducer(bootstrap_servers=c.layout.bootstrap_servers, **config)
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic, key=k, value=v, headers=h, partition=partition, timestamp_ms=ts
            )
            for _, k, v, h, ts in rows
        ]
        await producer.flush()
        results = [await asyncio.wait_for(f, 30) for f in futures]
    finally:
        await producer.stop()
    return [None if r is None else r.offset for r in results]


async def consume(consumer: AIOKafkaConsumer, tp: TopicPartition, offset: int, n: int) -> list[Row]:
    """Assign ``tp``, seek to ``offset`` and read ``n`` records (or fail after 20 s)."""
    consumer.assign([tp])
    consumer.seek(tp, offset)
    got: list[Row] = []
    deadline = time.monotonic() + 20
    while len(got) < n and time.monotonic() < deadline:
        for records in (await consumer.getmany(tp, timeout_ms=200)).values():
            got += as_rows(records)
    assert len(got) >= n, f"{len(got)} of {n} records from {tp} at {offset}"
    return got


# -- the tests --------------------------------------------------------------------------------


async def test_metadata_lists_brokers_controller_and_topics(c: TestCluster) -> None:
    controller = await asyncio.to_thread(c.controller)
    expected = broker_addresses(c)
    async with admin_client(c) as admin:
        cluster = await admin.describe_cluster()
        assert cluster["controller_id"] == controller
        assert {(b["node_id"], b["host"], b["port"]) for b in cluster["brokers"]} == expected
        assert set(TOPICS) <= set(await admin.list_topics())
        (described,) = await admin.describe_topics([ROUNDTRIP])
        assert sorted(p["partition"] for p in described["partitions"]) == list(range(len(CASES)))
    async with consumer_client(c) as consumer:
        assert set(TOPICS) <= await consumer.topics()
        view = consumer._client.cluster
        assert {(b.nodeId, b.host, b.port) for b in view.brokers()} == expected
        assert view.controller is not None and view.controller.nodeId == controller


async def test_admin_creates_topics(c: TestCluster) -> None:
    async with admin_client(c) as admin:
        response = await admin.create_topics([NewTopic("aio-created", 4, 3)], timeout_ms=30_000)
        assert [(e[0], e[1]) for e in response.topic_errors] == [("aio-created", 0)]
        again = await admin.create_topics([NewTopic("aio-created", 1, 1)], timeout_ms=30_000)
        assert [e[1] for e in again.topic_errors] == [36]  # TOPIC_ALREADY_EXISTS
        (described,) = await admin.describe_topics(["aio-created"])
    partitions = described["partitions"]
    assert sorted(p["partition"] for p in partitions) == [0, 1, 2, 3]
    assert all(sorted(p["replicas"]) == [0, 1, 2] for p in partitions)
    # the response came once every broker knew the topic
    for i in c.broker_ids:
        (topic,) = (await asyncio.to_thread(c.metadata, i, ["aio-created"])).topics
        assert topic.error_code == 0 and len(topic.partitions) == 4


@pytest.mark.parametrize(("codec", "acks"), CASES)
async def test_produce_and_consume_every_codec_and_acks(
    c: TestCluster, codec: str | None, acks: int | str
) -> None:
    partition = CASES.index((codec, acks))
    rows = sample(f"{codec}-{acks}", timestamp_ms())
    idempotent = acks == "all"
    offsets = await produce(
        c, rows, ROUNDTRIP, partition, acks=acks, compression_type=codec,
        enable_idempotence=idempotent,
    )  # fmt: skip
    if acks != 0:
        assert offsets == [r[0] for r in rows]

    async with consumer_client(c) as consumer:
        got = await consume(consumer, TopicPartition(ROUNDTRIP, partition), 0, len(rows))
    assert got == rows

    batches = await asyncio.to_thread(
        checked_batches, c, ROUNDTRIP, partition, len(rows), idempotent
    )
    assert_compressed(batches, codec)


async def test_seek_to_earliest_and_latest(c: TestCluster) -> None:
    tp = TopicPartition(SEEK, 0)
    first = sample("seek", timestamp_ms(), 3)
    # acks=all: seek_to_end asks for the high watermark, which an acks=1 write to this
    # RF 2 topic may not have reached yet
    assert await produce(c, first, SEEK, 0, acks="all") == [0, 1, 2]
    async with consumer_client(c) as consumer:
        consumer.assign([tp])
        await consumer.seek_to_end(tp)
        assert await consumer.position(tp) == 3
        await consumer.seek_to_beginning(tp)
        assert await consumer.position(tp) == 0
        assert await consumer.beginning_offsets([tp]) == {tp: 0}
        assert await consumer.end_offsets([tp]) == {tp: 3}

        await consumer.seek_to_end(tp)
        latest = await consumer.position(tp)
        (_, k, v, h, ts) = sample("seek-late", timestamp_ms(), 1)[0]
        assert await produce(c, [(latest, k, v, h, ts)], SEEK, 0, acks="all") == [3]
        # from latest, only the record written after the seek
        assert await consume(consumer, tp, latest, 1) == [(3, k, v, h, ts)]
        assert (await consume(consumer, tp, 0, 4))[:3] == first


async def test_seek_by_timestamp(c: TestCluster) -> None:
    tp = TopicPartition(TIMES, 0)
    base = timestamp_ms()
    rows: list[Row] = [(i, f"t{i}".encode(), b"v", [], base + 10_000 * i) for i in range(3)]
    # acks=all: the lookups below see only offsets under the high watermark
    assert await produce(c, rows, TIMES, 0, acks="all") == [0, 1, 2]
    async with consumer_client(c) as consumer:
        found = (await consumer.offsets_for_times({tp: base + 5_000}))[tp]
        assert (found.offset, found.timestamp) == (1, base + 10_000)
        exact = (await consumer.offsets_for_times({tp: base + 20_000}))[tp]
        assert (exact.offset, exact.timestamp) == (2, base + 20_000)
        assert await consumer.offsets_for_times({tp: base + 30_000}) == {tp: None}
        assert await consume(consumer, tp, found.offset, 2) == rows[1:]


async def test_long_poll_fetch_returns_as_soon_as_data_arrives(c: TestCluster) -> None:
    tp = TopicPartition(LONG_POLL, 0)
    leader = await asyncio.to_thread(leader_of, c, LONG_POLL, 0)
    async with consumer_client(c, fetch_max_wait_ms=MAX_WAIT_MS, fetch_min_bytes=1) as waiting:
        before = await asyncio.to_thread(fetch_requests, c, leader)
        waiting.assign([tp])  # its fetcher task fetches from now on
        await waiting.seek_to_end(tp)
        start = await waiting.position(tp)
        receiving = asyncio.ensure_future(waiting.getone(tp))

        async def fetched() -> bool:
            return await asyncio.to_thread(fetch_requests, c, leader) > before

        await until(fetched, 10, "a fetch to reach the leader", interval=0.05)
        # the fetch now waits at the leader for up to MAX_WAIT_MS
        rows: list[Row] = [(start, b"k", b"arrived", [], timestamp_ms())]
        assert await produce(c, rows, LONG_POLL, 0, acks=1) == [start]
        produced = time.monotonic()
        record = await asyncio.wait_for(receiving, 2 * MAX_WAIT_MS / 1000)
        elapsed = time.monotonic() - produced
        # the consumer's next fetch may now wait at the leader, and stopping the consumer
        # would wait out MAX_WAIT_MS for its answer: with its partition paused it fetches no
        # more, and a record completes the fetch in flight
        waiting.pause(tp)
        await produce(c, [(start + 1, b"k", b"release", [], timestamp_ms())], LONG_POLL, 0, acks=1)
    assert as_rows([record]) == rows
    assert_answered_early(elapsed)
