"""ListOffsets by timestamp over a log's segments: which offset a timestamp points at.

The special timestamps (Kafka's): -1 the log end, -2 the log start, -3 the record with
the largest timestamp. Any other finds the first record whose timestamp is >= it: the
segments' largest timestamps skip whole segments, the time index narrows the search to
a batch, and only that batch's records are decoded (unless it uses LogAppendTime, where
every record has the batch's max_timestamp).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass

from protocol.records.batch import BatchHeader, InvalidBatch
from protocol.records.builder import read_batch
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from storage.leader_epoch import LeaderEpochCache
from storage.segment import LogSegment

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """A ListOffsets answer: the offset and the timestamp found there (-1 if none)."""

    timestamp: int
    offset: int
    leader_epoch: int = -1


def list_offset(
    segments: Sequence[LogSegment],
    epochs: LeaderEpochCache,
    log_start_offset: int,
    log_end_offset: int,
    timestamp: int,
) -> TimestampOffset | None:
    """ListOffsets: -2 earliest, -1 latest, -3 the record with the largest timestamp,
    else the first record whose timestamp is >= ``timestamp`` (None if none)."""
    if timestamp == EARLIEST_TIMESTAMP:
        return TimestampOffset(-1, log_start_offset, epochs.epoch_for_offset(log_start_offset))
    if timestamp == LATEST_TIMESTAMP:
        return TimestampOffset(-1, log_end_offset, epochs.latest_epoch)
    if timestamp == MAX_TIMESTAMP:
        found = largest_timestamp(segments)
    else:
        found = first_at_or_after(segments, timestamp, log_start_offset)
    if found is None:
        return None
    ts, offset = found
    return TimestampOffset(ts, offset, epochs.epoch_for_offset(offset))


def first_at_or_after(
    segments: Sequence[LogSegment], timestamp: int, log_start_offset: int
) -> tuple[int, int] | None:
    """(timestamp, offset) of the first record at or after ``log_start_offset`` whose
    timestamp is >= ``timestamp``; None if there is none."""
    for seg in segments:
        if seg.size == 0 or seg.largest_timestamp < timestamp:
            continue
        found = seg.find_offset_by_timestamp(timestamp, log_start_offset)
        if found is None:
            continue
        return _first_record_at_or_after(seg, found[0], found[1], timestamp, log_start_offset)
    return None


def largest_timestamp(segments: Sequence[LogSegment]) -> tuple[int, int] | None:
    """(timestamp, offset) of the record with the largest timestamp, the lowest offset
    among equals; None when no record has a timestamp.

    Segments know the first batch that reached their largest timestamp (the active one
    from its batches, the others from their time index's last entry, which only grows),
    as that batch's last offset; the first segment with the overall largest wins. That
    batch's records are then decoded to find the record itself (KIP-734 as current
    Kafka answers it: the exact record, not the batch)."""
    best: tuple[LogSegment, int, int] | None = None
    for i, seg in enumerate(segments):
        if i == len(segments) - 1:
            seg.load_tail()
            ts, off = seg.max_timestamp, seg.offset_of_max_timestamp
        else:
            ts, off = seg.time_index.last_entry()
        if ts >= 0 and (best is None or ts > best[1]):
            best = (seg, ts, off)
    if best is None:
        return None
    seg, ts, batch_last_offset = best
    found = seg.translate_offset(batch_last_offset)
    if found is None:
        return ts, batch_last_offset
    pos, header = found
    # The largest timestamp is reached by no record before it, so the first record at
    # or after it is the first record stamped with it.
    return _first_record_at_or_after(seg, pos, header, ts, header.base_offset)


def _first_record_at_or_after(
    seg: LogSegment, pos: int, header: BatchHeader, timestamp: int, min_offset: int
) -> tuple[int, int]:
    """The first record of the batch at ``pos`` with timestamp >= ``timestamp`` and
    offset >= ``min_offset``: records are decoded only here, for ListOffsets."""
    if header.is_log_append_time:
        return header.max_timestamp, max(header.base_offset, min_offset)
    try:
        data = os.pread(seg.fd, header.size, pos)
        _, records = read_batch(data, check_crc=False)
    except (OSError, InvalidBatch) as exc:
        log.warning("cannot read records of batch %d: %s", header.base_offset, exc)
        return header.max_timestamp, max(header.base_offset, min_offset)
    for record in records:
        ts = record.timestamp(header)
        off = record.offset(header)
        if ts >= timestamp and off >= min_offset:
            return ts, off
    return header.max_timestamp, header.last_offset
