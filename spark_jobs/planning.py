"""Offset ranges: from options and each partition's bounds to Spark's input partitions.

Pure decisions, shared by the log-dir and the wire readers (they differ only in how
they learn a partition's bounds and look a timestamp up):

- :func:`resolve` turns an :class:`~spark_jobs.options.OffsetSpec` into one offset of a
  partition (-2/-1 to its earliest/latest, a timestamp through the lookup given);
- :func:`plan` gives each subscribed partition its ``[start, end)``;
- :func:`cut` cuts ranges at given offsets (log dirs: at segment boundaries, so that a
  partition of many segments is read by several tasks);
- :func:`split` cuts large ranges into more Spark partitions when ``minPartitions`` asks
  for more partitions than there are topic-partitions (Spark's rule: each range gets a
  share of the partitions proportional to its size);
- :func:`limit` caps a micro-batch at ``maxOffsetsPerTrigger`` offsets, shared between
  partitions in proportion to what each has waiting.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from protocol.values import TopicPartition
from spark_jobs.options import EARLIEST, LATEST, OffsetSpec, OptionError

#: (partition, timestamp) -> the first offset at or after it, or None.
TimestampLookup = Callable[[TopicPartition, int], int | None]


class DataLoss(RuntimeError):
    """Offsets a query asked for are gone (retention removed them): failOnDataLoss."""


class Bounds(NamedTuple):
    """The readable offsets of a partition: ``[earliest, latest)``."""

    earliest: int
    latest: int


class OffsetRange(NamedTuple):
    tp: TopicPartition
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def resolve(
    spec: OffsetSpec,
    tp: TopicPartition,
    bounds: Bounds,
    lookup: TimestampLookup,
    *,
    timestamp_strategy: str = "error",
    fail_on_data_loss: bool = True,
) -> int:
    """The offset ``spec`` names for ``tp``, within its bounds."""
    timestamp = spec.timestamp_for(tp)
    if timestamp is not None:
        found = lookup(tp, timestamp)
        if found is not None:
            return found
        if timestamp_strategy == "latest":
            return bounds.latest
        raise OptionError(f"{tp}: no record has a timestamp at or after {timestamp}")
    offset = spec.offset_for(tp)
    if offset == EARLIEST:
        return bounds.earliest
    if offset == LATEST:
        return bounds.latest
    if offset < bounds.earliest and fail_on_data_loss:
        raise DataLoss(f"{tp}: offset {offset} is below the earliest, {bounds.earliest}")
    return min(max(offset, bounds.earliest), bounds.latest)


def plan(
    tps: list[TopicPartition],
    bounds: Mapping[TopicPartition, Bounds],
    starting: OffsetSpec,
    ending: OffsetSpec,
    lookup: TimestampLookup,
    *,
    timestamp_strategy: str = "error",
    fail_on_data_loss: bool = True,
) -> list[OffsetRange]:
    """``[start, end)`` of each partition of a batch query (empty ranges dropped)."""
    ranges = []
    for tp in tps:
        b = bounds[tp]
        start = resolve(
            starting,
            tp,
            b,
            lookup,
            timestamp_strategy=timestamp_strategy,
            fail_on_data_loss=fail_on_data_loss,
        )
        end = resolve(ending, tp, b, lookup, fail_on_data_loss=fail_on_data_loss)
        if end > start:
            ranges.append(OffsetRange(tp, start, end))
    return ranges


def cut(
    ranges: list[OffsetRange], points: Mapping[TopicPartition, Sequence[int]]
) -> list[OffsetRange]:
    """Each range cut at the offsets ``points`` gives for its partition that lie inside
    it."""
    pieces = []
    for r in ranges:
        inside = sorted(p for p in points.get(r.tp, ()) if r.start < p < r.end)
        edges = [r.start, *inside, r.end]
        pieces += [OffsetRange(r.tp, a, b) for a, b in itertools.pairwise(edges)]
    return pieces


def split(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Ranges cut into about ``min_partitions`` pieces in all, each range into a number of
    pieces proportional to its size (at least one); unchanged when there are already
    enough ranges."""
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    pieces = []
    for r in ranges:
        parts = max(1, math.ceil(r.size / total * min_partitions)) if total else 1
        cuts = [r.start + r.size * i // parts for i in range(parts + 1)]
        pieces += [OffsetRange(r.tp, a, b) for a, b in itertools.pairwise(cuts) if b > a]
    return pieces


def limit(
    start: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    max_offsets: int | None,
) -> dict[TopicPartition, int]:
    """The end offsets of the next micro-batch: ``latest``, or with ``max_offsets`` set,
    at most that many offsets in all, each partition's share proportional to what it
    has waiting (rounded down, the remainder handed out in partition order so the batch
    is exactly as large as allowed)."""
    waiting = {tp: max(latest[tp] - start.get(tp, latest[tp]), 0) for tp in latest}
    total = sum(waiting.values())
    if max_offsets is None or total <= max_offsets:
        return dict(latest)
    share = {tp: n * max_offsets // total for tp, n in waiting.items()}
    left = max_offsets - sum(share.values())
    for tp in sorted(waiting):
        extra = min(left, waiting[tp] - share[tp])
        share[tp] += extra
        left -= extra
    return {tp: start.get(tp, latest[tp]) + share[tp] for tp in latest}
