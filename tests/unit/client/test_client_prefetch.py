"""PartitionPrefetcher: pipelined fetches at predicted offsets, every record taken once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.errors import KafkaError
from client.prefetch import PartitionPrefetcher, take_from
from protocol import ErrorCode
from tests.records import record_batch

pytestmark = pytest.mark.timeout(30)


def batch(base: int, n: int, value_size: int = 20) -> bytes:
    return record_batch(
        n, key=None, value=b"v" * value_size, timestamps=[1000] * n, base_offset=base
    )


def test_take_from_skips_batches_before_the_position_and_leaves_a_partial_tail() -> None:
    a, b, c = batch(0, 3), batch(3, 2), batch(5, 4)
    taken = take_from(a + b + c[:-3], 3)
    assert (taken.records, taken.bytes, taken.position) == (2, len(b), 5)


def test_take_from_counts_a_straddling_batch_from_the_position_on() -> None:
    taken = take_from(batch(10, 5) + batch(15, 1), 12)
    assert (taken.records, taken.position) == (3 + 1, 16)


def test_take_from_accepts_offsets_missing_after_the_position() -> None:
    # a compacted log: the fetch at 4 is answered from the next batch there is
    taken = take_from(batch(9, 2), 4)
    assert (taken.records, taken.position) == (2, 11)
    assert take_from(b"", 7).position == 7


@dataclass
class FakeLog:
    """A partition as a broker serves it: segments of batches; a fetch returns the
    segment's bytes from the batch holding the offset on, cut at the byte limit (a
    partial batch at the end) but always with its first batch whole, never crossing
    into the next segment."""

    segments: list[list[tuple[int, bytes]]] = field(default_factory=list)

    @classmethod
    def of(cls, segment_counts: list[list[int]]) -> FakeLog:
        log, offset = cls(), 0
        for counts in segment_counts:
            segment = []
            for n in counts:
                segment.append((offset, batch(offset, n)))
                offset += n
            log.segments.append(segment)
        return log

    @property
    def end(self) -> int:
        last = [s for s in self.segments if s]
        return 0 if not last else last[-1][-1][0] + take_from(last[-1][-1][1], 0).records

    def fetch(self, offset: int, max_bytes: int) -> tuple[int, bytes]:
        if offset > self.end:
            return ErrorCode.OFFSET_OUT_OF_RANGE, b""
        for segment in self.segments:
            data = [raw for base, raw in segment if base + take_from(raw, base).records > offset]
            if data:
                return ErrorCode.NONE, b"".join(data)[: max(max_bytes, len(data[0]))]
        return ErrorCode.NONE, b""


class FakeConnection:
    """Answers Fetch requests from a FakeLog, in order, each after yielding once (so
    that requests issued together are all outstanding before the first answer)."""

    def __init__(self, log: FakeLog) -> None:
        self.log = log
        self.fetched: list[int] = []
        self.outstanding = 0
        self.most_outstanding = 0
        self.error = ErrorCode.NONE

    async def request(
        self, api_key: int, body: Any, *, version: int | None = None, timeout_s: float | None = None
    ) -> Any:
        part = body.topics[0].partitions[0]
        self.fetched.append(part.fetch_offset)
        self.outstanding += 1
        self.most_outstanding = max(self.most_outstanding, self.outstanding)
        try:
            await asyncio.sleep(0)
            code, records = self.log.fetch(part.fetch_offset, part.partition_max_bytes)
            if self.error != ErrorCode.NONE:
                code = self.error
            partition = SimpleNamespace(
                partition_index=part.partition,
                error_code=code,
                high_watermark=self.log.end,
                log_start_offset=0,
                records=records,
            )
            topic = SimpleNamespace(topic=body.topics[0].topic, partitions=[partition])
            return SimpleNamespace(error_code=0, responses=[topic])
        finally:
            self.outstanding -= 1

    def close(self) -> None:
        pass


async def consume_all(
    log: FakeLog, *, depth: int, max_bytes: int, start: int = 0
) -> tuple[int, list[int], PartitionPrefetcher, FakeConnection]:
    """Take responses until the log end; the records counted and each new position."""
    conn = FakeConnection(log)
    prefetcher = PartitionPrefetcher(
        conn, "t", 0, start, depth=depth, partition_max_bytes=max_bytes
    )
    records, positions = 0, []
    try:
        for _ in range(10 * log.end + 10):  # bounded: each response takes a batch
            if prefetcher.position >= log.end:
                break
            taken = await prefetcher.next()
            assert taken.position == prefetcher.position
            records += taken.records
            positions.append(taken.position)
    finally:
        prefetcher.close()
    return records, positions, prefetcher, conn


async def test_two_fetches_stay_in_flight_and_every_record_is_taken_once() -> None:
    log = FakeLog.of([[10] * 40, [10] * 40])
    size = len(batch(0, 10))
    records, positions, prefetcher, conn = await consume_all(log, depth=2, max_bytes=size * 3)
    assert records == log.end == 800
    assert positions == sorted(set(positions))  # strictly advancing
    assert conn.most_outstanding == 2
    # the short response at the first segment's end put the fetch after it astray, once
    assert prefetcher.mispredicted == 1


async def test_one_in_flight_fetches_each_offset_in_turn() -> None:
    log = FakeLog.of([[5] * 12])
    size = len(batch(0, 5))
    records, positions, prefetcher, conn = await consume_all(log, depth=1, max_bytes=size * 2)
    assert records == 60 and conn.most_outstanding == 1 and prefetcher.mispredicted == 0
    assert conn.fetched == [0, *positions[:-1]]


@settings(max_examples=60, deadline=None)
@given(
    segments=st.lists(
        st.lists(st.integers(1, 12), min_size=1, max_size=12), min_size=1, max_size=4
    ),
    depth=st.integers(1, 4),
    limit_batches=st.integers(1, 5),
    start=st.integers(0, 5),
)
def test_any_log_is_counted_exactly_whatever_the_predictions(
    segments: list[list[int]], depth: int, limit_batches: int, start: int
) -> None:
    log = FakeLog.of(segments)
    start = min(start, log.end)
    max_bytes = len(batch(0, 6)) * limit_batches
    records, positions, _, conn = asyncio.run(
        consume_all(log, depth=depth, max_bytes=max_bytes, start=start)
    )
    assert records == log.end - start
    assert positions == sorted(positions)
    assert conn.most_outstanding <= depth


async def test_no_fetch_is_predicted_past_the_high_watermark() -> None:
    log = FakeLog.of([[4] * 6])
    size = len(batch(0, 4))
    _, _, prefetcher, conn = await consume_all(log, depth=3, max_bytes=size * 2)
    assert max(conn.fetched) < log.end
    log.segments[0].append((24, batch(24, 4)))  # the log grows: the next fetch is at 24
    taken = await prefetcher.next()
    assert (taken.records, taken.position) == (4, 28)
    assert conn.fetched[-1] == 24
    prefetcher.close()


async def test_a_partition_error_raises() -> None:
    conn = FakeConnection(FakeLog.of([[1]]))
    conn.error = ErrorCode.NOT_LEADER_OR_FOLLOWER
    prefetcher = PartitionPrefetcher(conn, "t", 0, 0)
    with pytest.raises(KafkaError) as info:
        await prefetcher.next()
    assert info.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    prefetcher.close()


async def test_a_cancelled_wait_leaves_the_prefetcher_usable_from_its_position() -> None:
    log = FakeLog.of([[3] * 10])
    conn = FakeConnection(log)
    two_batches = len(batch(0, 3)) * 2
    prefetcher = PartitionPrefetcher(conn, "t", 0, 0, depth=2, partition_max_bytes=two_batches)
    assert (await prefetcher.next()).position == 6  # the stride is learnt: 2 in flight next
    waiting = asyncio.ensure_future(prefetcher.next())
    for _ in range(20):  # let it issue its fetches and start waiting (a few loop turns)
        if len(conn.fetched) == 3:
            break
        await asyncio.sleep(0)
    assert conn.fetched == [0, 6, 12]
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    records = 0
    while prefetcher.position < log.end:
        records += (await prefetcher.next()).records
    assert records == 24 and conn.fetched[3] == 6  # resumed at the position, not at 12
    prefetcher.close()


def test_depth_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="depth"):
        PartitionPrefetcher(FakeConnection(FakeLog()), "t", 0, 0, depth=0)
