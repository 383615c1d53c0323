"""Pure decisions of a log's housekeeping: when to roll, which segments retention deletes.

These take plain numbers (no files), so each rule is tested on its own and reads like
Kafka's description of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from storage.segment import MAX_RELATIVE_OFFSET


class SegmentStats(NamedTuple):
    base_offset: int
    size: int
    largest_timestamp: int


def roll_jitter_ms(fraction: float, segment_ms: int, jitter_ms: int) -> int:
    """The part of segment.jitter.ms a segment rolls early by: ``fraction`` (drawn in
    [0, 1) once per segment) of the jitter, which is capped below segment.ms."""
    return int(fraction * min(jitter_ms, segment_ms))


def roll_reason(
    *,
    segment_size: int,
    base_offset: int,
    incoming_size: int,
    incoming_max_timestamp: int,
    incoming_last_offset: int,
    segment_bytes: int,
    segment_ms: int,
    index_full: bool,
    first_batch_timestamp: int | None,
    created_ms: int,
    now_ms: int,
) -> str | None:
    """Why the active segment must roll before an append, or None (Kafka's shouldRoll).

    An empty segment never rolls for size or time. The age is measured between record
    timestamps (incoming batch against the segment's first batch) when the first batch
    has one, else by the wall clock since the segment was created or loaded.
    """
    if incoming_last_offset - base_offset > MAX_RELATIVE_OFFSET:
        return f"offset {incoming_last_offset} does not fit a segment based at {base_offset}"
    if segment_size == 0:
        return None
    if segment_size + incoming_size > segment_bytes:
        return f"size {segment_size} + {incoming_size} exceeds segment.bytes {segment_bytes}"
    if index_full:
        return "an index is full"
    if first_batch_timestamp is not None and first_batch_timestamp >= 0:
        age = incoming_max_timestamp - first_batch_timestamp
    else:
        age = now_ms - created_ms
    if age > segment_ms:
        return f"segment age {age} ms exceeds segment.ms {segment_ms}"
    return None


Predicate = Callable[[SegmentStats], bool]


def deletable_count(
    segments: Sequence[SegmentStats],
    next_offsets: Sequence[int],
    high_watermark: int,
    predicate: Predicate,
) -> int:
    """How many of the oldest segments may go: a prefix of segments, each matching
    ``predicate`` and wholly below the high watermark (its next segment's base, or for
    the last one the log end, ``next_offsets[i]``, is <= the high watermark). An empty
    last segment is never deleted."""
    count = 0
    for i, seg in enumerate(segments):
        is_last_and_empty = i == len(segments) - 1 and seg.size == 0
        if is_last_and_empty or next_offsets[i] > high_watermark or not predicate(seg):
            break
        count += 1
    return count


def time_breached(now_ms: int, retention_ms: int) -> Predicate:
    """retention.ms: the segment's newest record is older than the limit (-1: never)."""
    return lambda seg: retention_ms >= 0 and now_ms - seg.largest_timestamp > retention_ms


def size_breached(total_size: int, retention_bytes: int) -> Predicate:
    """retention.bytes: delete oldest segments while the log stays at or above the
    limit without them (-1: never)."""
    excess = total_size - retention_bytes

    def predicate(seg: SegmentStats) -> bool:
        nonlocal excess
        if retention_bytes < 0 or excess - seg.size < 0:
            return False
        excess -= seg.size
        return True

    return predicate


def start_offset_breached(
    next_offsets: Sequence[int], segments: Sequence[SegmentStats], log_start_offset: int
) -> Predicate:
    """DeleteRecords: a segment whose every offset is below the log start offset."""
    following = {s.base_offset: n for s, n in zip(segments, next_offsets)}
    return lambda seg: following[seg.base_offset] <= log_start_offset


#: A retention rule: given the segments' stats and each one's next offset, the
#: predicate of the segments it deletes.
Rule = Callable[[Sequence[SegmentStats], Sequence[int]], Predicate]


def retention_rules(
    *,
    log_start_offset: int,
    deletes: bool,
    now_ms: int,
    retention_ms: int,
    retention_bytes: int,
) -> list[Rule]:
    """The passes of one retention run, in order, each over the segments the previous
    left: segments wholly below the log start offset (DeleteRecords), then with
    cleanup.policy delete those past retention.ms, then those beyond retention.bytes."""
    rules: list[Rule] = [
        lambda stats, nxt: start_offset_breached(nxt, stats, log_start_offset),
    ]
    if deletes:
        rules.append(lambda stats, nxt: time_breached(now_ms, retention_ms))
        rules.append(lambda stats, nxt: size_breached(sum(s.size for s in stats), retention_bytes))
    return rules
