"""Transactions in the log: markers, the last stable offset, read_committed reads.

A transactional producer's batches carry the transactional bit; the coordinator ends
each transaction with a control batch holding one COMMIT or ABORT marker
(:mod:`protocol.records.control`). :mod:`storage.producer_state` follows the open
transactions; this module holds what the :class:`~storage.log.Log` does with them:

- **Markers.** Appending a control batch reads its one record (control batches are a
  few dozen bytes, and rare); an ABORT that completes a transaction adds an entry to the
  active segment's aborted index (:mod:`storage.txn_index`). A marker appended as leader
  (from the coordinator) is checked first: an older producer epoch is refused with
  INVALID_PRODUCER_EPOCH, an older coordinator epoch with TRANSACTION_COORDINATOR_FENCED.
- **Last stable offset** (LSO): the first offset of the earliest transaction that is
  open, or completed with its marker not yet below the high watermark; the high
  watermark when there is none; never above the high watermark nor below the log start.
  ``Log.last_stable_offset`` reads it from the producer state's incrementally kept
  first unstable offset.
- **read_committed.** ``Log.read(..., isolation_level=READ_COMMITTED)`` ends the read at
  the LSO. ``Log.aborted_transactions(start, upper)`` lists the aborted transactions
  with data in ``[start, upper)``, from the ``.txnindex`` of the segment holding
  ``start`` and the following ones until an entry's LSO reaches ``upper``
  (:func:`collect_aborted`).

How the Fetch handler uses it: for a consumer fetch with isolation_level 1 it reads
with ``isolation_level=READ_COMMITTED`` (so the region ends at the LSO, and it answers
``last_stable_offset`` with ``Log.last_stable_offset``), then fills the partition's
``aborted_transactions`` with ``Log.aborted_transactions(fetch_offset, region)`` (the
region the read returned) as ``(producer_id, first_offset)`` pairs. The range searched
ends where the region's bytes end, found as Kafka finds it (the offset index's first
entry at or after the region's end, else the segment's end), never past the LSO: a
search up to the LSO would go through every later entry of the log on every fetch of
a consumer catching up. With read_uncommitted it sends null (None) there, as now.
The consumer drops the batches of a listed producer from the entry's first offset up
to that producer's ABORT marker.

After a crash the aborted index of every segment from the one holding the recovery
point (and of any segment whose index files were unusable) is rebuilt by replaying the
producer state from a snapshot at or below that segment's base. A snapshot carries the
completed transactions whose marker was not yet below the high watermark, so that a
reload keeps them unstable, as they were.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence

from protocol.errors import ErrorCode
from protocol.records.batch import CONTROL_MASK, BatchHeader, InvalidBatch
from protocol.records.builder import read_batch
from protocol.records.control import ControlMarker, parse_control_record
from storage.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    StorageError,
    TransactionCoordinatorFencedError,
)
from storage.file_region import FileRegion
from storage.local_log import LocalLog
from storage.producer_state import (
    CompletedTxn,
    ProducerStateEntry,
    ProducerStateManager,
    check_marker,
)
from storage.segment import LogSegment
from storage.txn_index import AbortedTransaction, AbortedTxn

log = logging.getLogger(__name__)


def marker_at(buf: bytes | bytearray | memoryview, pos: int, where: str) -> ControlMarker | None:
    """The marker of the control batch at ``pos`` in ``buf``, None when it has no record
    (a control batch the cleaner emptied)."""
    try:
        _, records = read_batch(buf, pos, check_crc=False)
        return parse_control_record(records[0]) if records else None
    except InvalidBatch as exc:
        raise CorruptRecordError(f"{where}: control batch at {pos}: {exc}") from None


def read_marker(seg: LogSegment, pos: int, header: BatchHeader) -> ControlMarker | None:
    """The marker of the control batch at ``pos`` of a segment; None (logged) when it
    cannot be parsed: a log is still loaded, its transaction stays open."""
    try:
        data = os.pread(seg.fd, header.size, pos)
    except OSError as exc:
        raise StorageError(f"reading {seg.log_path} at {pos}: {exc}") from exc
    try:
        return marker_at(data, 0, seg.log_path)
    except CorruptRecordError as exc:
        log.warning("unreadable transaction marker: %s", exc)
        return None


def with_markers(
    found: Iterable[tuple[LogSegment, int, BatchHeader]],
) -> Iterator[tuple[BatchHeader, ControlMarker | None]]:
    """Each batch header of a log scan, with its marker when it is a control batch."""
    for seg, pos, header in found:
        yield header, read_marker(seg, pos, header) if header.is_control else None


def check_markers(
    buf: memoryview,
    batches: Sequence[tuple[int, BatchHeader]],
    producers: dict[int, ProducerStateEntry],
    where: str,
) -> None:
    """The leader's checks of markers from the coordinator (see the module doc)."""
    for pos, header in batches:
        if not header.is_control:
            continue
        marker = marker_at(buf, pos, where)
        epoch = (
            -1 if marker is None or marker.coordinator_epoch is None else marker.coordinator_epoch
        )
        verdict = check_marker(producers.get(header.producer_id), header, epoch)
        if verdict.error_code == ErrorCode.INVALID_PRODUCER_EPOCH:
            raise InvalidProducerEpochError(f"{where}: {verdict.message}")
        if verdict.error_code:
            raise TransactionCoordinatorFencedError(f"{where}: {verdict.message}")


def markers_in(
    buf: memoryview, batches: Sequence[tuple[int, BatchHeader]], where: str, attributes: int
) -> dict[int, ControlMarker | None] | None:
    """The markers of the control batches about to be appended, by position (read
    before any byte is written: one that cannot be is refused); None when there is
    none (``attributes``: the batches' attributes or-ed together)."""
    if not attributes & CONTROL_MASK:
        return None
    return {pos: marker_at(buf, pos, where) for pos, h in batches if h.is_control}


def complete(
    state: ProducerStateManager,
    local: LocalLog,
    batches: Sequence[tuple[int, BatchHeader]],
    markers: dict[int, ControlMarker | None],
) -> None:
    """Account batches just appended, some of them control batches: their transactions
    complete; an ABORT's entry goes to the active segment's aborted index (a failed
    write takes the log offline)."""
    for pos, header in batches:
        done = state.update(header, markers.get(pos))
        if done is not None and done.aborted:
            try:
                local.active_segment.txn_index.append(aborted_entry(done))
            except StorageError as exc:
                local.failed = str(exc)
                raise


def first_stale(segments: Sequence[LogSegment]) -> int | None:
    """The base of the first segment whose aborted index recovery found untrustworthy."""
    return next((s.base_offset for s in segments if s.txn_index_stale), None)


def rebuild_producer_state(
    state: ProducerStateManager,
    local: LocalLog,
    log_start_offset: int,
    high_watermark: int,
    txn_index_from: int | None,
) -> None:
    """Reload ``state`` at the log end (from the newest snapshot, replaying the batches
    after it) and forget the completed transactions below ``high_watermark``; with
    ``txn_index_from`` (a segment base) the aborted index of every segment from there
    on is emptied and refilled by the replay, which then starts from a snapshot at or
    below that base."""
    on_completed: Callable[[CompletedTxn], None] | None = None
    if txn_index_from is not None:
        segments, first = local.segments, txn_index_from
        for seg in segments:
            if seg.base_offset >= first:
                seg.txn_index.reset()
                seg.txn_index_stale = False

        def on_completed(txn: CompletedTxn) -> None:
            if txn.aborted and txn.last_offset >= first:
                seg = segments[local.segment_for(txn.last_offset)]
                seg.txn_index.append(aborted_entry(txn))

    state.rebuild(
        log_start_offset,
        local.log_end_offset,
        lambda offset: with_markers(local.iter_batch_headers(offset)),
        replay_from_at_most=txn_index_from,
        on_completed=on_completed,
    )
    state.on_high_watermark(high_watermark)


def aborted_entry(txn: CompletedTxn) -> AbortedTxn:
    return AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset)


def last_stable_offset(
    first_unstable: int | None, high_watermark: int, log_start_offset: int
) -> int:
    if first_unstable is None or first_unstable >= high_watermark:
        return high_watermark
    return first_unstable if first_unstable > log_start_offset else log_start_offset


def collect_aborted_txns(
    segments: Sequence[LogSegment], start: int, upper: int
) -> list[AbortedTxn]:
    """The aborted index entries of the transactions with data in ``[start, upper)``
    (``segments`` in order, the first one holding ``start``; see :mod:`.txn_index`)."""
    found: list[AbortedTxn] = []
    for seg in segments:
        entries, complete = seg.txn_index.collect(start, upper)
        found += entries
        if complete:
            break
    return found


def fetch_upper_bound(segments: Sequence[LogSegment], region: FileRegion) -> int | None:
    """An offset above every record of ``region`` (a read of one of ``segments``): the
    offset index's first entry at or after the region's end, else the segment's next
    offset. None when the region is of none of them."""
    for seg in segments:
        if seg.fd == region.fd:
            found = seg.offset_index.offset_at_or_after(region.position + region.length)
            return seg.next_offset if found is None else found
    return None


def collect_aborted(
    segments: Sequence[LogSegment], start: int, read: int | FileRegion, lso: int
) -> list[AbortedTransaction]:
    """:func:`collect_aborted_txns` as a Fetch response lists them, for a read from
    ``start`` that returned the region ``read`` (or that ends before the offset
    ``read``), never beyond ``lso``."""
    upper = read if isinstance(read, int) else fetch_upper_bound(segments, read)
    if upper is None or upper > lso:
        upper = lso
    return [
        AbortedTransaction(t.producer_id, t.first_offset)
        for t in collect_aborted_txns(segments, start, upper)
    ]
