"""ListOffsets v0's answer: up to ``max_num_offsets`` segment boundaries before a time.

Before message timestamps existed (ListOffsets v1, KIP-79), a log could only say where
its segments begin and when each was last written. ListOffsets v0 asks for the offsets
"before" a time and gets a list, newest first, drawn from these points:

- one per segment: its base offset (raised to the log start offset when retention or
  DeleteRecords moved the start into it) with the segment file's modification time;
- when the last segment holds any bytes, one more: the log end offset with the time now.

The time ``-1`` (LATEST) starts at the last point, ``-2`` (EARLIEST) at the first;
any other time starts at the last point whose time is at or before it (no point: an
empty list). From the start the points are taken backwards, at most
``max_num_offsets`` of them, and answered in descending order (Kafka's
``legacyFetchOffsetsBefore``). So LATEST with 1 gives the log end, EARLIEST only ever
the log start, and a time between two segments' last writes the base offset of the
older of the two.

A consumer (replica id -1) may not be told offsets beyond the high watermark: if any
offset is above it, those are dropped and the high watermark leads the list instead.

Pure functions over plain numbers; the partition gathers the points from its log.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

#: (offset, time in ms) of one point a v0 answer may name
OffsetTime = tuple[int, int]


def offset_points(
    segments: Sequence[tuple[int, int, int]], log_start: int, log_end: int, now_ms: int
) -> list[OffsetTime]:
    """The points of a log whose ``segments`` are (base offset, size in bytes, last
    modified ms), oldest first."""
    points = [(max(base, log_start), modified) for base, _, modified in segments]
    if segments and segments[-1][1] > 0:
        points.append((log_end, now_ms))
    return points


def offsets_before(points: Sequence[OffsetTime], timestamp: int, max_num_offsets: int) -> list[int]:
    """Up to ``max_num_offsets`` offsets of ``points`` at or before ``timestamp``
    (LATEST / EARLIEST as above), newest first."""
    if timestamp == LATEST_TIMESTAMP:
        start = len(points) - 1
    elif timestamp == EARLIEST_TIMESTAMP:
        start = 0
    else:
        start = len(points) - 1
        while start >= 0 and points[start][1] > timestamp:
            start -= 1
    count = max(0, min(max_num_offsets, start + 1))
    return sorted((points[start - j][0] for j in range(count)), reverse=True)


def capped_at_high_watermark(offsets: Sequence[int], high_watermark: int) -> list[int]:
    """A consumer's list: when an offset is above the high watermark, the high watermark
    first and then the offsets not above it (``offsets`` newest first)."""
    if not any(o > high_watermark for o in offsets):
        return list(offsets)
    return [high_watermark, *(o for o in offsets if o <= high_watermark)]
