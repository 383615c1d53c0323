"""Fetch and ListOffsets: raw record bytes per partition, decoded only on request.

A partition's ``records`` in a FetchResponse are whole RecordBatches back to back, maybe
ending in a partial batch (the broker cuts at the byte limit), and the first batch may
start before the offset asked for (a batch is never split). ``decode`` skips both, and
control batches (transaction markers); ``count`` reads batch headers only.

read_committed: the broker answers only below the last stable offset and lists the
aborted transactions of what it returned, as (producer id, first offset). ``decode``
given them drops each listed producer's transactional batches from that first offset up
to the producer's ABORT marker, as Kafka's consumers do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from client.client import KafkaClient
from client.errors import KafkaError
from protocol import ApiKey, ErrorCode
from protocol.messages import FetchRequest, ListOffsetsRequest
from protocol.records import iter_batches, read_batch
from protocol.records.batch import BatchHeader, InvalidBatch
from protocol.records.control import ControlType, parse_control_record
from protocol.records.record import Header, Record
from protocol.values import READ_UNCOMMITTED


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    #: -1 with no timestamp; ``log_append_time`` tells which kind it is
    timestamp: int
    log_append_time: bool
    key: bytes | None
    value: bytes | None
    headers: list[Header]


@dataclass(frozen=True, slots=True)
class PartitionData:
    partition: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: bytes
    #: (producer id, first offset) of the aborted transactions (read_committed)
    aborted_transactions: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class BatchCount:
    records: int
    bytes: int
    #: offset after the last whole batch (None when there was none)
    next_offset: int | None


def count(records: bytes | memoryview) -> BatchCount:
    """Records and bytes in the whole batches of ``records``, from their headers alone."""
    n = size = 0
    next_offset = None
    for _, header in iter_batches(records):
        n += header.records_count
        size += header.size
        next_offset = header.next_offset
    return BatchCount(n, size, next_offset)


def decode(
    topic: str,
    partition: int,
    records: bytes | memoryview,
    from_offset: int,
    aborted: Sequence[tuple[int, int]] = (),
    limit: int | None = None,
) -> tuple[list[ConsumedRecord], int | None]:
    """The records at or after ``from_offset`` in the whole batches of ``records``, and
    the offset to fetch next (None when no whole batch was there); the records of the
    ``aborted`` transactions (producer id, first offset) left out. With ``limit``, the
    batches after the first ``limit`` records are left undecoded (the offset to fetch next
    is then the one after the last batch decoded): a page of 50 small records does not
    build the thousands a fetch carries."""
    out: list[ConsumedRecord] = []
    next_offset = None
    committed = AbortedFilter(aborted)
    for pos, _ in iter_batches(records):
        if limit is not None and len(out) >= limit:
            break
        header, items = read_batch(records, pos)
        next_offset = header.next_offset
        if not committed.keep(header, lambda items=items: is_abort(items)):  # type: ignore[misc]
            continue
        for r in items:
            offset = header.base_offset + r.offset_delta
            if offset < from_offset:
                continue
            out.append(
                ConsumedRecord(
                    topic,
                    partition,
                    offset,
                    r.timestamp(header),
                    header.is_log_append_time,
                    r.key,
                    r.value,
                    r.headers,
                )
            )
    return out, next_offset


class AbortedFilter:
    """Which batches a read_committed reader keeps, fed every batch in offset order:
    from each listed aborted transaction's first offset, its producer's transactional
    batches are dropped until that producer's ABORT marker; control batches are never
    kept. ``aborted``: (producer id, first offset) pairs, as a Fetch lists them."""

    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        self._waiting = sorted(aborted, key=lambda a: a[1])  # not reached yet
        self._dropping: set[int] = set()  # producers inside an aborted transaction

    def keep(self, header: BatchHeader, abort_marker: Callable[[], bool]) -> bool:
        """Whether to keep the batch of ``header``; ``abort_marker`` tells (when asked)
        whether a control batch is an ABORT marker."""
        waiting = self._waiting
        while waiting and waiting[0][1] <= header.last_offset:
            self._dropping.add(waiting.pop(0)[0])
        if header.is_control:
            if header.producer_id in self._dropping and abort_marker():
                self._dropping.discard(header.producer_id)
            return False
        return not (header.is_transactional and header.producer_id in self._dropping)


def is_abort(items: Sequence[Record]) -> bool:
    """Whether a control batch's records are an ABORT marker."""
    try:
        return bool(items) and parse_control_record(items[0]).type == ControlType.ABORT
    except InvalidBatch:
        return False


def fetch_body(
    topic: str,
    offsets: Mapping[int, int],
    *,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    partition_max_bytes: int,
    isolation_level: int = READ_UNCOMMITTED,
) -> Any:
    """A sessionless Fetch (session id 0, epoch -1) of ``offsets`` (partition -> offset)."""
    parts = [
        FetchRequest.FetchPartition(
            partition=p, fetch_offset=o, partition_max_bytes=partition_max_bytes
        )
        for p, o in sorted(offsets.items())
    ]
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=parts)],
        forgotten_topics_data=[],
    )


def read_fetch_response(body: Any, topic: str) -> dict[int, PartitionData]:
    """Per partition of ``topic``; a top-level error raises KafkaError."""
    if getattr(body, "error_code", 0) != ErrorCode.NONE:
        raise KafkaError(body.error_code, "fetch")
    out = {}
    for t in body.responses:
        if t.topic != topic:
            continue
        for p in t.partitions:
            out[p.partition_index] = PartitionData(
                p.partition_index,
                p.error_code,
                p.high_watermark,
                p.log_start_offset,
                p.records if p.records is not None else b"",
                tuple(
                    (a.producer_id, a.first_offset)
                    for a in getattr(p, "aborted_transactions", None) or ()
                ),
            )
    return out


async def list_offsets(
    client: KafkaClient,
    topic: str,
    timestamps: Mapping[int, int],
    *,
    isolation_level: int = READ_UNCOMMITTED,
) -> dict[int, int]:
    """partition -> offset for each ``timestamps`` entry (LATEST_TIMESTAMP,
    EARLIEST_TIMESTAMP or a time in ms), asking each partition's leader; retried across
    leader changes."""

    async def once() -> dict[int, int]:
        result: dict[int, int] = {}
        for leader, parts in client.view.by_leader(topic, sorted(timestamps)).items():
            if leader < 0:
                raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic} {parts}")
            body = ListOffsetsRequest(
                replica_id=-1,
                isolation_level=isolation_level,
                topics=[
                    ListOffsetsRequest.ListOffsetsTopic(
                        name=topic,
                        partitions=[
                            ListOffsetsRequest.ListOffsetsPartition(
                                partition_index=p, timestamp=timestamps[p]
                            )
                            for p in parts
                        ],
                    )
                ],
            )
            response = await client.request(leader, ApiKey.LIST_OFFSETS, body)
            for t in response.topics:
                for p in t.partitions:
                    if p.error_code != ErrorCode.NONE:
                        raise KafkaError(p.error_code, f"{topic}-{p.partition_index}")
                    result[p.partition_index] = p.offset
        return result

    return await client.retrying(once, refresh_topics=[topic])


class Fetcher:
    """Fetches a topic's partitions from their leaders, one request per leader at a time.

    ``positions`` (partition -> next offset) is the caller's to advance. Not safe across
    tasks."""

    def __init__(
        self,
        client: KafkaClient,
        topic: str,
        positions: dict[int, int],
        *,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        max_bytes: int = 50 * 1024 * 1024,
        partition_max_bytes: int = 1024 * 1024,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> None:
        self.client = client
        self.topic = topic
        self.positions = positions
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.partition_max_bytes = partition_max_bytes
        self.isolation_level = isolation_level

    async def fetch_from(self, leader: int, partitions: list[int]) -> dict[int, PartitionData]:
        body = fetch_body(
            self.topic,
            {p: self.positions[p] for p in partitions},
            max_wait_ms=self.max_wait_ms,
            min_bytes=self.min_bytes,
            max_bytes=self.max_bytes,
            partition_max_bytes=self.partition_max_bytes,
            isolation_level=self.isolation_level,
        )
        timeout = self.max_wait_ms / 1000 + self.client.config.request_timeout_s
        response = await self.client.request(leader, ApiKey.FETCH, body, timeout_s=timeout)
        return read_fetch_response(response, self.topic)

    def leaders(self) -> dict[int, list[int]]:
        return self.client.view.by_leader(self.topic, sorted(self.positions))
