"""The cleaning pass: compaction of one log (Kafka's LogCleaner.Cleaner).

Given a log whose offsets ``[first_dirty, first_uncleanable)`` are dirty (written since
the last pass) and everything below them clean:

1. **Offset map.** Every keyed record of the dirty section, in order, puts its key's
   digest and offset into an :class:`~storage.offset_map.OffsetMap`, until the map is
   full; the pass then covers the dirty section up to ``end_offset``, the first offset
   not mapped. Aborted transactional data is not mapped (:mod:`storage.cleaner_txns`).
2. **Groups.** The segments below ``end_offset`` (never the active one: the caller's
   ``first_uncleanable`` is at most its base) are grouped into runs whose total size
   stays within segment.bytes, whose indexes stay within segment.index.bytes, and
   whose offsets fit one segment (:func:`group_segments`).
3. **Rewrite.** Each group becomes one new segment, named by the group's first base
   offset, written as ``.cleaned``. A record survives when it is the latest of its key
   (its offset is at least the map's offset for the key, or the key is not in the
   map); a record without a key never survives (a compacted topic refuses them). A
   tombstone (null value) survives until its batch's delete horizon: the first pass that
   keeps it stamps the batch with ``now + delete.retention.ms`` (the DELETE_HORIZON
   attribute bit, the horizon in base_timestamp, record timestamp deltas shifted to
   match), and the first pass after that horizon drops it. Aborted transactional data
   goes whole, and transaction markers go once nothing of their transaction is left and
   their own delete horizon has passed (:mod:`storage.cleaner_txns`, which also writes
   the new segment's ``.txnindex``); the caller's ``first_uncleanable`` is at most the
   last stable offset, so no open transaction is cleaned. A batch keeps its base
   offset, last offset delta, codec, max timestamp and producer fields; a batch left
   with no record is dropped, except the last batch of each producer id (its sequence
   state must survive a reload; for a producer with only markers, its markers) and the
   last batch of the group (it pins the group's offset range, which crash recovery of
   a ``.swap`` relies on), which stay as empty batches. A batch that loses nothing is
   copied byte for byte.
4. **Swap** (:mod:`storage.local_log`): the new segment is fsynced and renamed ``.swap``
   (from here recovery finishes the swap), the old segments are renamed ``.deleted``
   and replaced in the segment list, and ``.swap`` is renamed to the plain names.

Offsets never change: removed records leave gaps, which consumers skip.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from protocol.records.batch import (
    COMPRESSION_MASK,
    DELETE_HORIZON_MASK,
    HEADER_SIZE,
    BatchHeader,
    Compression,
    InvalidBatch,
    iter_batches,
    read_header,
)
from protocol.records.builder import pack_batch, read_batch
from protocol.records.compression import compress
from protocol.records.control import ControlMarker
from protocol.records.record import Record, encode_records
from storage import transactions
from storage.checkpoint import fsync_dir
from storage.cleaner_txns import CleanedTxns
from storage.errors import RecordError, StorageError
from storage.index import TimeIndex
from storage.log import Log
from storage.names import CLEANED_SUFFIX, SWAP_SUFFIX
from storage.offset_map import OffsetMap
from storage.recovery import remove_segment_files
from storage.segment import MAX_RELATIVE_OFFSET, LogSegment

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_READ_CHUNK = 1 << 20
_WRITE_CHUNK = 1 << 20

#: Called with the bytes just read or written; may sleep (log.cleaner.io.max.bytes.per.second).
Throttle = Callable[[int], None]
#: Runs a function on the thread that owns the log (the broker's event loop) and returns
#: its result; the segment list changes only there.
OnOwner = Callable[[Callable[[], bool]], bool]


class CleanerError(StorageError):
    """A pass could not clean the log (the manager marks the log uncleanable)."""


@dataclass(slots=True)
class CleanerStats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    segments_cleaned: int = 0


@dataclass(frozen=True, slots=True)
class PassResult:
    #: the first offset after the section this pass deduplicated: the next pass's
    #: first dirty offset (the cleaner's checkpoint)
    end_offset: int
    stats: CleanerStats = field(default_factory=CleanerStats)
    #: False when the pass stopped early (shutdown, or the log changed under it:
    #: truncation, retention); the groups before were swapped in, the checkpoint must
    #: not move
    complete: bool = True


# -- reading batches -------------------------------------------------------------------


def segment_batches(seg: LogSegment) -> Iterator[tuple[int, BatchHeader, memoryview]]:
    """(position, header, bytes) of each whole batch of a segment, read in large chunks."""
    pos, size = 0, seg.size
    while pos < size:
        try:
            chunk = os.pread(seg.fd, min(_READ_CHUNK, size - pos), pos)
        except OSError as exc:
            raise StorageError(f"reading {seg.log_path} at {pos}: {exc}") from exc
        view = memoryview(chunk)
        consumed = 0
        for rel, header in iter_batches(view):
            yield pos + rel, header, view[rel : rel + header.size]
            consumed = rel + header.size
        if consumed == 0:
            if len(chunk) < HEADER_SIZE:
                return
            # One batch larger than the chunk: read it whole.
            length = int.from_bytes(chunk[8:12], "big", signed=True) + 12
            if length <= len(chunk) or pos + length > size:
                return
            whole = memoryview(os.pread(seg.fd, length, pos))
            for _, header in iter_batches(whole):
                yield pos, header, whole
            consumed = length
        pos += consumed


# -- step 1: the offset map ------------------------------------------------------------


def build_offset_map(
    segments: Sequence[LogSegment],
    start: int,
    end: int,
    offset_map: OffsetMap,
    stats: CleanerStats,
    throttle: Throttle,
    txns: CleanedTxns | None = None,
) -> int:
    """Put the keys of the batches in ``[start, end)`` into ``offset_map``; returns the
    first offset not mapped (``end`` unless the map filled up first). ``txns`` knows
    the aborted transactions, whose data is not mapped."""
    for seg in segments:
        if seg.next_offset <= start or seg.base_offset >= end:
            continue
        for _, header, data in segment_batches(seg):
            if header.last_offset < start or header.is_control:
                continue
            if header.base_offset >= end:
                return end
            if txns is not None and txns.is_aborted(header):
                continue
            records = _records(seg, header, data)
            if offset_map.full or len(offset_map) + len(records) > offset_map.slots:
                if offset_map.latest_offset < 0:
                    raise CleanerError(
                        f"{seg.log_path}: the offset map ({offset_map.slots} keys) cannot "
                        f"hold one batch of {len(records)} records"
                    )
                return header.base_offset
            for record in records:
                if record.key is not None:
                    offset_map.put(record.key, header.base_offset + record.offset_delta)
            stats.bytes_read += header.size
            throttle(header.size)
    return end


def _marker(seg: LogSegment, data: memoryview) -> ControlMarker | None:
    try:
        return transactions.marker_at(data, 0, seg.log_path)
    except RecordError as exc:
        raise CleanerError(str(exc)) from exc


def _records(seg: LogSegment, header: BatchHeader, data: memoryview) -> list[Record]:
    try:
        return read_batch(data)[1]
    except InvalidBatch as exc:
        raise CleanerError(f"{seg.log_path}: batch at offset {header.base_offset}: {exc}") from exc


# -- step 2: groups --------------------------------------------------------------------


def group_segments(
    segments: Sequence[LogSegment], next_offsets: Sequence[int], max_size: int, max_index_size: int
) -> list[list[LogSegment]]:
    """Consecutive runs of ``segments`` whose merged segment stays within ``max_size``
    bytes, whose offset and time indexes stay within ``max_index_size`` bytes (the
    entries the old indexes hold), and whose offsets, up to ``next_offsets[i]`` (the
    next segment's base), fit a segment's relative offsets."""
    groups: list[list[LogSegment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        size = segments[i].size
        entries = _index_entries(segments[i])
        i += 1
        while i < len(segments):
            seg = segments[i]
            more = _index_entries(seg)
            if (
                size + seg.size > max_size
                or (entries + more) * TimeIndex.ENTRY.size > max_index_size
                or next_offsets[i] - 1 - group[0].base_offset > MAX_RELATIVE_OFFSET
            ):
                break
            group.append(seg)
            size += seg.size
            entries += more
            i += 1
        groups.append(group)
    return groups


def _index_entries(seg: LogSegment) -> int:
    return max(seg.offset_index.entries, seg.time_index.entries)


# -- step 3: which records survive -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Retention:
    """What decides a record's fate in one pass."""

    offset_map: OffsetMap
    now_ms: int
    delete_retention_ms: int
    #: producer id -> last offset of its last data batch in the log (-1: markers only)
    producer_last_offsets: dict[int, int]

    def keeps(self, header: BatchHeader, record: Record) -> bool:
        if record.key is None:
            return False
        offset = header.base_offset + record.offset_delta
        if offset < self.offset_map.get(record.key):
            return False
        if record.value is None and header.attributes & DELETE_HORIZON_MASK:
            return self.now_ms < header.base_timestamp
        return True

    def keeps_empty(self, header: BatchHeader, last_of_group: bool) -> bool:
        producer_last = self.producer_last_offsets.get(header.producer_id)
        if last_of_group or producer_last == header.last_offset:
            return True
        return producer_last == -1 and header.is_control


def emptied(header: BatchHeader) -> bytearray:
    """The batch with no record (an empty batch has no records section to decompress:
    written uncompressed)."""
    empty = header._replace(attributes=header.attributes & ~COMPRESSION_MASK, records_count=0)
    return pack_batch(empty, b"")


def clean_marker(
    header: BatchHeader, data: memoryview, removable: bool, rules: Retention, last: bool
) -> bytes | bytearray | memoryview | None:
    """A control batch as it leaves this pass: kept, stamped with its delete horizon
    (the first time it may go), or removed after that horizon."""
    if not removable:
        return data
    if not header.attributes & DELETE_HORIZON_MASK:
        records = read_batch(data, check_crc=False)[1]
        return _rewrite(header, records, rules, stamp=True)
    if rules.now_ms < header.base_timestamp:
        return data
    return emptied(header) if rules.keeps_empty(header, last) else None


def clean_batch(
    header: BatchHeader, data: memoryview, records: list[Record], rules: Retention, last: bool
) -> bytes | bytearray | memoryview | None:
    """The batch as it leaves this pass: ``data`` untouched, rewritten bytes, or None."""
    kept = [r for r in records if rules.keeps(header, r)]
    needs_horizon = not header.attributes & DELETE_HORIZON_MASK and any(
        r.value is None for r in kept
    )
    if len(kept) == len(records) and not needs_horizon:
        return data
    if not kept:
        return emptied(header) if rules.keeps_empty(header, last) else None
    return _rewrite(header, kept, rules, needs_horizon)


def _rewrite(header: BatchHeader, kept: list[Record], rules: Retention, stamp: bool) -> bytearray:
    """``kept`` in a batch like ``header``; ``stamp`` sets the delete horizon."""
    needs_horizon = stamp
    base_timestamp = header.base_timestamp
    attributes = header.attributes
    if needs_horizon:
        base_timestamp = rules.now_ms + rules.delete_retention_ms
        attributes |= DELETE_HORIZON_MASK
        shift = header.base_timestamp - base_timestamp
        kept = [r._replace(timestamp_delta=r.timestamp_delta + shift) for r in kept]
    section = encode_records(kept)
    codec = header.compression
    body = section if codec == Compression.NONE else compress(codec, section)
    rewritten = header._replace(
        attributes=attributes, base_timestamp=base_timestamp, records_count=len(kept)
    )
    return pack_batch(rewritten, body)


# -- the pass ----------------------------------------------------------------------------


def clean_log(
    lg: Log,
    *,
    first_dirty: int,
    first_uncleanable: int,
    offset_map: OffsetMap,
    now_ms: int,
    throttle: Throttle = lambda n: None,
    on_owner: OnOwner = lambda fn: fn(),
    stopping: Callable[[], bool] = lambda: False,
) -> PassResult:
    """One pass over ``lg`` (see the module docstring). Blocking: runs in a cleaner
    thread; only the final swap of each group runs through ``on_owner``. ``stopping``
    (broker shutdown) ends the pass before its next group."""
    stats = CleanerStats()
    every = lg.segments  # one snapshot: a roll meanwhile must not shift the next bases
    segments, nexts = every[:-1], [s.base_offset for s in every[1:]]  # never the active
    offset_map.clear()
    start = max(first_dirty, lg.log_start_offset)
    # (an aborted transaction's marker may lie beyond the section, in the active segment)
    in_map = [s for s in every if s.next_offset > start]
    mapped = CleanedTxns(transactions.collect_aborted_txns(in_map, start, first_uncleanable))
    end = build_offset_map(segments, start, first_uncleanable, offset_map, stats, throttle, mapped)
    cleanable = [s for s in segments if s.base_offset < end]
    if not cleanable:
        return PassResult(end, stats)
    rules = Retention(
        offset_map,
        now_ms,
        lg.config.delete_retention_ms,
        {
            pid: entry.batches[-1].last_offset if entry.batches else -1
            for pid, entry in list(lg.producer_state.producers.items())
        },
    )
    upper = nexts[len(cleanable) - 1]  # the groups rewrite whole segments
    txns = CleanedTxns(transactions.collect_aborted_txns(every, every[0].base_offset, upper))
    config = lg.config
    for group in group_segments(cleanable, nexts, config.segment_bytes, config.segment_index_bytes):
        if stopping():
            return PassResult(end, stats, complete=False)
        cleaned = _write_group(lg, group, rules, txns, stats, throttle)
        try:
            swapped = on_owner(partial(lg.local.replace_segments, group, cleaned))
        except Exception:
            if cleaned not in lg.segments:  # never swapped in: its .swap must not be
                cleaned.delete_files()  # finished by a later recovery
            raise
        if not swapped:
            cleaned.delete_files()
            log.info("%s: the log changed during cleaning; pass abandoned", lg.tp)
            return PassResult(end, stats, complete=False)
        stats.segments_cleaned += len(group)
    return PassResult(end, stats)


def _write_group(
    lg: Log,
    group: list[LogSegment],
    rules: Retention,
    txns: CleanedTxns,
    stats: CleanerStats,
    throttle: Throttle,
) -> LogSegment:
    """The group's surviving batches in a new segment, fsynced and renamed ``.swap``."""
    base = group[0].base_offset
    for suffix in (CLEANED_SUFFIX, SWAP_SUFFIX):  # leftovers of an abandoned pass
        remove_segment_files(lg.directory, base, suffix)
    out = lg.local.new_segment(base, create=True, file_suffix=CLEANED_SUFFIX)
    txns.cleaned_index = out.txn_index
    try:
        buf = bytearray()
        pending: list[tuple[int, BatchHeader]] = []
        last_seg = group[-1]
        for seg in group:
            for (_, header, data), last_batch in _with_last(segment_batches(seg)):
                stats.bytes_read += header.size
                throttle(header.size)
                result: bytes | bytearray | memoryview | None = data
                is_last = last_batch and seg is last_seg
                if header.is_control:
                    removable = txns.marker_removable(header, _marker(seg, data))
                    result = clean_marker(header, data, removable, rules, is_last)
                elif txns.is_aborted(header):
                    stats.records_read += header.records_count
                    result = emptied(header) if rules.keeps_empty(header, is_last) else None
                else:
                    records = _records(seg, header, data)
                    stats.records_read += len(records)
                    result = clean_batch(header, data, records, rules, is_last)
                if result is None:
                    continue
                kept = read_header(result)
                stats.records_kept += 0 if kept.is_control else kept.records_count
                pending.append((len(buf), kept))
                buf += result
                if len(buf) >= _WRITE_CHUNK:
                    _flush_pending(out, buf, pending, stats, throttle)
        _flush_pending(out, buf, pending, stats, throttle)
        out.on_become_inactive()
        out.flush()
        out.change_file_suffix(SWAP_SUFFIX)
        _fsync_dir(lg.directory)
    except Exception:
        out.delete_files()
        raise
    return out


def _with_last(items: Iterator[_T]) -> Iterator[tuple[_T, bool]]:
    """Each item with whether it is the last (one item of look-ahead)."""
    try:
        previous = next(items)
    except StopIteration:
        return
    for item in items:
        yield previous, False
        previous = item
    yield previous, True


def _flush_pending(
    out: LogSegment,
    buf: bytearray,
    pending: list[tuple[int, BatchHeader]],
    stats: CleanerStats,
    throttle: Throttle,
) -> None:
    if pending:
        out.append(buf, pending)
        stats.bytes_written += len(buf)
        throttle(len(buf))
    buf.clear()
    pending.clear()


def _fsync_dir(directory: str) -> None:
    try:
        fsync_dir(directory)
    except OSError as exc:
        raise StorageError(f"fsync of {directory}: {exc}") from exc
