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
from storage.segment import LogSegment

log = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """A ListOffsets answer: the offset and the timestamp found there (-1 if none)."""

    timestamp: int
    offset: int
    leader_epoch: int = -1


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
    """(timestamp, offset) of the record with the largest timestamp, the first one of
    them; None when no record has a timestamp. The active segment (the last) knows it
    from its batches, the others from their time index's last entry."""
    best: tuple[int, int] | None = None
    for i, seg in enumerate(segments):
        if i == len(segments) - 1:
            seg.load_tail()
            ts, off = seg.max_timestamp, seg.offset_of_max_timestamp
        else:
            ts, off = seg.time_index.last_entry()
        if ts >= 0 and (best is None or ts > best[0]):
            best = (ts, off)
    return best


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
