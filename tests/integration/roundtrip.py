"""What the real-client modules (test_clients_*.py) share, so that each keeps only its own
client's calls: the records a produce/consume round trip sends and expects back, and the
checks made on the broker side, where the client cannot hide anything (the batches the
leader stores, the leader's fetch counter, the cluster's settled metadata).

A record is a ``Row``: (offset, key, value, headers, timestamp), offset first, as a
consumer hands it back; a producer sends the rest and must be told that offset.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from protocol import ApiKey
from protocol.messages import FetchRequest
from protocol.records.batch import BatchHeader, iter_batches
from tests.integration.cluster import TestCluster
from tests.polling import wait_until

Row = tuple[int, bytes | None, bytes, list[tuple[str, bytes]], int]

#: the batch attribute's compression id for each client's codec name (the Python clients
#: say None for no codec, librdkafka says "none")
CODEC_IDS: dict[str | None, int] = {
    None: 0, "none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4,
}  # fmt: skip
#: the consumer's fetch max wait in the long-poll tests; the record must come well before
MAX_WAIT_MS = 10_000


def sample(tag: str, base_ts: int, n: int = 5) -> list[Row]:
    """Records to send and expect back (offset first): a null key, several headers, a
    record without headers. Values compress well even alone (clients send a batch
    uncompressed when compressing would not make it smaller)."""
    rows: list[Row] = []
    for i in range(n):
        key = None if i == 1 else f"{tag}-k{i}".encode()
        value = f"{tag}-v{i}-".encode() + b"x" * (200 + 40 * i)
        headers = [] if i == 2 else [("h1", f"{i}".encode()), ("h2", b"\x00\xff")]
        rows.append((i, key, value, headers, base_ts + i))
    return rows


def timestamp_ms() -> int:
    """A client-side record timestamp near now: retention must not see it as old."""
    return int(time.time() * 1000) - 60_000


def as_rows(records: Iterable[Any]) -> list[Row]:
    """kafka-python's and aiokafka's ConsumerRecords (the same attributes) as rows."""
    return [(r.offset, r.key, r.value, list(r.headers), r.timestamp) for r in records]


def broker_addresses(c: TestCluster) -> set[tuple[int, str, int]]:
    """(id, host, port) of every broker, as metadata must advertise them."""
    return {(i, "127.0.0.1", c.layout.client_ports[i]) for i in c.broker_ids}


def leader_of(c: TestCluster, topic: str, partition: int) -> int:
    (t,) = c.metadata(0, [topic]).topics
    return int(next(p.leader_id for p in t.partitions if p.partition_index == partition))


def stored_batches(c: TestCluster, topic: str, partition: int) -> list[BatchHeader]:
    """The batch headers of the partition as the leader stores them (a raw fetch)."""
    body = FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=[],
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
            partition=partition, fetch_offset=0, partition_max_bytes=1 << 20)])],
    )  # fmt: skip
    response = c.request(leader_of(c, topic, partition), ApiKey.FETCH, 12, body)
    (data,) = response.responses[0].partitions
    assert data.error_code == 0
    return [header for _, header in iter_batches(bytes(data.records))]


def checked_batches(
    c: TestCluster, topic: str, partition: int, count: int, idempotent: bool | None = None
) -> list[BatchHeader]:
    """The partition's stored batches, once they are seen to hold ``count`` records and,
    where ``idempotent`` is given, to carry a producer id exactly when it says so."""
    batches = stored_batches(c, topic, partition)
    assert sum(b.records_count for b in batches) == count
    if idempotent is not None:
        assert {b.producer_id >= 0 for b in batches} == {idempotent}
    return batches


def assert_compressed(batches: list[BatchHeader], codec: str | None) -> None:
    """Every batch is compressed with ``codec``: a codec the client quietly dropped shows
    here. (librdkafka ties its lz4 feature to FindCoordinator in ApiVersions, a Kafka
    0.8.2-era probe: the brokers must advertise it, or librdkafka's lz4 batches go out
    uncompressed and fail this.)"""
    assert {b.compression for b in batches} == {CODEC_IDS[codec]}


def fetch_requests(c: TestCluster, broker: int) -> float:
    """Fetch requests ``broker`` has received from consumers (its metrics counter; the
    followers' fetches, which never stop, are counted apart)."""
    name = 'minikafka_fetch_requests_total{sender="consumer"}'
    return c.metric(broker, name) or 0.0


def assert_answered_early(elapsed: float) -> None:
    """A long-polling fetch returned ``elapsed`` seconds after a record arrived: without an
    early completion the record would have waited out the fetch's MAX_WAIT_MS."""
    assert elapsed < MAX_WAIT_MS / 1000 / 2, f"record arrived after {elapsed:.1f}s"


def restart_once_expired(c: TestCluster, broker: int) -> None:
    """Restart the killed ``broker`` once ZooKeeper has expired its session."""
    wait_until(
        lambda: broker not in c.registered(),
        c.session_timeout_s + 10,
        "the killed broker's session to expire",
    )
    c.restart(broker)
