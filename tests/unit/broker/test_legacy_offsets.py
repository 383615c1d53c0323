"""ListOffsets v0's rule (broker.legacy_offsets), on plain numbers."""

from __future__ import annotations

from broker.legacy_offsets import capped_at_high_watermark, offset_points, offsets_before
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

#: segments (base offset, bytes, last modified ms): three written at 100, 200, 300
SEGMENTS = [(0, 4096, 100), (10, 4096, 200), (20, 1000, 300)]


def test_points_are_the_segment_bases_and_the_log_end_when_the_last_segment_has_bytes() -> None:
    assert offset_points(SEGMENTS, 0, 25, 999) == [(0, 100), (10, 200), (20, 300), (25, 999)]
    empty_tail = [*SEGMENTS[:2], (20, 0, 300)]
    assert offset_points(empty_tail, 0, 20, 999) == [(0, 100), (10, 200), (20, 300)]
    # a log start inside the first segment raises its point
    assert offset_points(SEGMENTS, 4, 25, 999)[0] == (4, 100)


def test_offsets_before_a_time_go_backwards_newest_first() -> None:
    points = offset_points(SEGMENTS, 0, 25, 999)
    assert offsets_before(points, LATEST_TIMESTAMP, 10) == [25, 20, 10, 0]
    assert offsets_before(points, LATEST_TIMESTAMP, 2) == [25, 20]
    assert offsets_before(points, EARLIEST_TIMESTAMP, 10) == [0]
    assert offsets_before(points, 250, 10) == [10, 0]  # the last point written by 250
    assert offsets_before(points, 200, 1) == [10]
    assert offsets_before(points, 99, 10) == []
    assert offsets_before(points, LATEST_TIMESTAMP, 0) == []
    assert offsets_before([], LATEST_TIMESTAMP, 5) == []


def test_a_consumer_never_sees_past_the_high_watermark() -> None:
    assert capped_at_high_watermark([25, 20, 10, 0], 22) == [22, 20, 10, 0]
    assert capped_at_high_watermark([25, 20, 10, 0], 5) == [5, 0]
    assert capped_at_high_watermark([20, 10], 25) == [20, 10]
