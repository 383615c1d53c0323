"""Producer state: per producer id, its epoch, its last five batches, its open transaction.

An idempotent producer numbers its records per partition (base_sequence) and retries a
batch with the same numbers. The leader keeps, per producer id, the epoch and the
sequence and offset ranges of the last :data:`MAX_BATCHES` batches (the producer has at
most five in flight), so that a retry is answered with the original offsets instead of
being written twice, and a gap is refused with OUT_OF_ORDER_SEQUENCE_NUMBER.

:func:`check_batch` is the decision, a pure function of the state and the batch header.
:class:`ProducerStateManager` holds the state of one partition and its snapshots:
``<offset>.snapshot`` holds the state of every batch below ``offset``; one is written on
roll (at the new segment's base offset) and on clean shutdown (at the log end), and a
reload starts from the newest snapshot not above the log end and replays batch headers
after it (producer fields are all in the header, so replay reads no records but the
one record of each control batch, the marker).

Transactions (Kafka's rules): a transactional batch of a producer with no open
transaction opens one at its base offset; a control batch with a COMMIT or ABORT marker
completes it (a marker with no transaction open completes nothing: the transaction wrote
nothing here) and records the marker's coordinator epoch. The manager keeps the open
transactions by first offset (:attr:`ProducerStateManager.ongoing`, a dict whose order is
that of the offsets, since transactions open in log order) and the completed ones whose
marker is not yet below the high watermark (:attr:`ProducerStateManager.unreplicated`:
until the marker is replicated a leader change may cut it, so the transaction still
counts as unstable). The first unstable offset, the least first offset of both, is kept
up to date on each transaction event and high-watermark move, never by a scan of the
producers; a batch of a producer outside transactions costs one bit test.

Snapshot format (big-endian), version 2; version 1 (no transaction fields) still loads::

    version   int16   2
    crc       uint32  CRC-32C of everything after this field
    count     int32   producers
    count times:
      producer_id int64 | epoch int16 | last_timestamp int64
      | coordinator_epoch int32 | current_txn_first_offset int64 (-1: none)   (v2 only)
      | n int8 (<= 5)
      n times: first_seq int32 | last_seq int32 | first_offset int64 | last_offset int64
               | max_timestamp int64
    unreplicated int32                                                        (v2 only)
    unreplicated times: first_offset int64 | marker_offset int64

The producer's two transaction fields are those Kafka's own snapshot carries. The
completed transactions whose marker was not below the high watermark yet are ours:
with them a reload (a restart, a truncation) keeps such a transaction unstable, as it
was, without replaying the log from below the high watermark.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from protocol.errors import ErrorCode
from protocol.records.batch import CONTROL_MASK, TRANSACTIONAL_MASK, BatchHeader
from protocol.records.control import ControlMarker, ControlType
from protocol.records.crc import crc32c
from storage.checkpoint import fsync_file, write_atomically
from storage.errors import StorageError
from storage.names import SNAPSHOT_SUFFIX, offset_file_name, parse_offset_file_name

log = logging.getLogger(__name__)

MAX_BATCHES = 5
SNAPSHOT_VERSION = 2
_INT32_MAX = (1 << 31) - 1
_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_PRODUCER_V1 = struct.Struct(">qhqb")
_PRODUCER = struct.Struct(">qhqiqb")
_TXN = struct.Struct(">qq")
_TXN_OR_CONTROL = TRANSACTIONAL_MASK | CONTROL_MASK
_BATCH = struct.Struct(">iiqqq")


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    epoch: int
    last_timestamp: int = -1
    batches: list[BatchMetadata] = field(default_factory=list)
    coordinator_epoch: int = -1
    #: first offset of the producer's open transaction, -1 when none is open
    current_txn_first_offset: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def copy(self) -> ProducerStateEntry:
        # every idempotent append makes one: built directly, dataclasses.replace is slower
        return ProducerStateEntry(
            self.producer_id,
            self.epoch,
            self.last_timestamp,
            list(self.batches),
            self.coordinator_epoch,
            self.current_txn_first_offset,
        )

    def add(self, header: BatchHeader) -> None:
        """Record a batch already written (its offsets are final). A control batch
        only moves the epoch (it has no sequences)."""
        if header.producer_epoch != self.epoch:
            self.epoch = header.producer_epoch
            self.batches.clear()
        if header.attributes & CONTROL_MASK:
            self.last_timestamp = max(self.last_timestamp, header.max_timestamp)
            return
        self.batches.append(
            BatchMetadata(
                header.base_sequence,
                header.last_sequence,
                header.base_offset,
                header.last_offset,
                header.max_timestamp,
            )
        )
        del self.batches[:-MAX_BATCHES]
        self.last_timestamp = max(self.last_timestamp, header.max_timestamp)


class SequenceCheck(NamedTuple):
    """The verdict on one batch: ``error_code`` 0 to append it, or the Kafka error; a
    ``duplicate`` (error_code 0) is a retry already in the log at those offsets."""

    error_code: int = 0
    duplicate: BatchMetadata | None = None
    message: str = ""


ACCEPT = SequenceCheck()


class CompletedTxn(NamedTuple):
    """A transaction a marker completed. ``last_offset`` is the marker's offset;
    ``last_stable_offset`` is the partition's LSO right after it (the first offset of
    the earliest transaction still open, else the offset after the marker): the
    aborted index stores it."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool
    last_stable_offset: int


def check_marker(
    entry: ProducerStateEntry | None, header: BatchHeader, epoch: int
) -> SequenceCheck:
    """A marker written as leader (coordinator epoch ``epoch``): refused when the
    producer's epoch is newer (INVALID_PRODUCER_EPOCH) or the producer has seen a newer
    coordinator (TRANSACTION_COORDINATOR_FENCED), as Kafka refuses them."""
    if entry is None:
        return ACCEPT
    if header.producer_epoch < entry.epoch:
        return SequenceCheck(
            ErrorCode.INVALID_PRODUCER_EPOCH,
            message=f"marker of producer {header.producer_id} has epoch {header.producer_epoch}"
            f", older than {entry.epoch}",
        )
    if epoch < entry.coordinator_epoch:
        return SequenceCheck(
            ErrorCode.TRANSACTION_COORDINATOR_FENCED,
            message=f"marker of producer {header.producer_id} has coordinator epoch {epoch}, "
            f"older than {entry.coordinator_epoch}",
        )
    return ACCEPT


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


def check_batch(entry: ProducerStateEntry | None, header: BatchHeader) -> SequenceCheck:
    """Decide whether a batch from a producer may be appended (Kafka's rules).

    - no producer id (-1), or a producer we have no state for: nothing to check (any
      sequence starts it);
    - an epoch older than the known one: INVALID_PRODUCER_EPOCH, a batch without a
      sequence too (the group coordinator writes a TxnOffsetCommit so: a fenced
      producer's late one would be left pending, unstable, until whatever marker of
      that producer id comes next ended it);
    - no sequence: nothing more to check;
    - same epoch and the sequences of one of the last five batches: a duplicate;
    - a new epoch must start at sequence 0, the same epoch must continue at last + 1:
      otherwise OUT_OF_ORDER_SEQUENCE_NUMBER;
    - a producer with a transaction open writes only transactional batches (or its
      marker): otherwise INVALID_TXN_STATE.
    """
    if header.producer_id < 0 or entry is None:
        return ACCEPT
    if header.base_sequence < 0:
        if header.producer_epoch < entry.epoch:
            return SequenceCheck(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                message=f"producer {header.producer_id} epoch {header.producer_epoch} is "
                f"older than {entry.epoch}",
            )
        return ACCEPT
    if (
        entry.current_txn_first_offset >= 0
        and not header.attributes & _TXN_OR_CONTROL
        and header.producer_epoch == entry.epoch
    ):
        return SequenceCheck(
            ErrorCode.INVALID_TXN_STATE,
            message=f"producer {header.producer_id} has a transaction open at offset "
            f"{entry.current_txn_first_offset}: expected a transactional batch",
        )
    if header.producer_epoch < entry.epoch:
        return SequenceCheck(
            ErrorCode.INVALID_PRODUCER_EPOCH,
            message=f"producer {header.producer_id} epoch {header.producer_epoch} is older "
            f"than {entry.epoch}",
        )
    if header.producer_epoch != entry.epoch:
        if header.base_sequence != 0:
            return SequenceCheck(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                message=f"producer {header.producer_id} new epoch {header.producer_epoch} "
                f"starts at sequence {header.base_sequence}, not 0",
            )
        return ACCEPT
    last_seq = header.last_sequence
    for meta in entry.batches:
        if meta.first_seq == header.base_sequence and meta.last_seq == last_seq:
            return SequenceCheck(duplicate=meta)
    if not in_sequence(entry.last_seq, header.base_sequence):
        return SequenceCheck(
            ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
            message=f"producer {header.producer_id} sent sequence {header.base_sequence}, "
            f"expected {entry.last_seq + 1}",
        )
    return ACCEPT


class ProducerStateManager:
    """State of one partition's producers. Not safe across threads."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerStateEntry] = {}
        #: Offset up to which (exclusive) the state reflects the log.
        self.map_end_offset = 0
        #: open transactions: first offset -> producer id, in offset order
        self.ongoing: dict[int, int] = {}
        #: completed transactions whose marker is not below the high watermark yet:
        #: first offset -> marker offset
        self.unreplicated: dict[int, int] = {}
        #: the least first offset of both, None when both are empty
        self.first_unstable_offset: int | None = None

    # -- appends -----------------------------------------------------------------------

    def update(
        self, header: BatchHeader, marker: ControlMarker | None = None
    ) -> CompletedTxn | None:
        """Account a batch written to the log (leader or follower); ``marker`` is the
        control record of a control batch. Returns the transaction it completed."""
        self.map_end_offset = header.next_offset
        if header.producer_id < 0:
            return None
        entry = self.producers.get(header.producer_id)
        if entry is None:
            entry = self.producers[header.producer_id] = ProducerStateEntry(
                header.producer_id, header.producer_epoch
            )
        entry.add(header)
        if not header.attributes & _TXN_OR_CONTROL:
            return None
        if not header.attributes & CONTROL_MASK:
            if entry.current_txn_first_offset < 0:
                entry.current_txn_first_offset = header.base_offset
                self.ongoing[header.base_offset] = header.producer_id
                if self.first_unstable_offset is None:
                    self.first_unstable_offset = header.base_offset
            return None
        if marker is None or marker.type not in (ControlType.ABORT, ControlType.COMMIT):
            return None
        if marker.coordinator_epoch is not None:
            entry.coordinator_epoch = marker.coordinator_epoch
        first = entry.current_txn_first_offset
        if first < 0:
            return None
        entry.current_txn_first_offset = -1
        lso = header.last_offset + 1
        for offset, pid in self.ongoing.items():
            if pid != header.producer_id:
                lso = offset
                break
        del self.ongoing[first]
        self.unreplicated[first] = header.last_offset
        return CompletedTxn(
            header.producer_id, first, header.last_offset, marker.type == ControlType.ABORT, lso
        )

    def on_high_watermark(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is below the high watermark."""
        done = [f for f, last in self.unreplicated.items() if last < high_watermark]
        for first in done:
            del self.unreplicated[first]
        self._update_first_unstable()

    def _update_first_unstable(self) -> None:
        firsts = [next(iter(self.ongoing))] if self.ongoing else []
        if self.unreplicated:
            firsts.append(min(self.unreplicated))
        self.first_unstable_offset = min(firsts) if firsts else None

    def replay(
        self,
        headers: Iterable[tuple[BatchHeader, ControlMarker | None]],
        on_completed: Callable[[CompletedTxn], None] | None = None,
    ) -> None:
        for header, marker in headers:
            if header.next_offset > self.map_end_offset:
                done = self.update(header, marker)
                if done is not None and on_completed is not None:
                    on_completed(done)

    def rebuild(
        self,
        log_start_offset: int,
        log_end_offset: int,
        headers_from: Callable[[int], Iterable[tuple[BatchHeader, ControlMarker | None]]],
        *,
        replay_from_at_most: int | None = None,
        on_completed: Callable[[CompletedTxn], None] | None = None,
    ) -> None:
        """The state at the log end: the newest snapshot not above it (nor above
        ``replay_from_at_most``), then the batches after that (``headers_from(offset)``
        yields the log's headers from there, each control batch's with its marker);
        ``on_completed`` sees each transaction the replay completes."""
        replay_from = self.load(log_start_offset, log_end_offset, replay_from_at_most)
        if replay_from < log_end_offset:
            self.replay(headers_from(replay_from), on_completed)
        self.map_end_offset = log_end_offset

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers silent for longer than producer.id.expiration.ms."""
        expired = [
            pid
            for pid, e in self.producers.items()
            if now_ms - e.last_timestamp > expiration_ms and e.current_txn_first_offset < 0
        ]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    # -- snapshots ---------------------------------------------------------------------

    def snapshot_path(self, offset: int) -> str:
        return os.path.join(self.directory, offset_file_name(offset, SNAPSHOT_SUFFIX))

    def snapshot_offsets(self) -> list[int]:
        try:
            names = os.listdir(self.directory)
        except OSError as exc:
            raise StorageError(f"listing {self.directory}: {exc}") from exc
        found = (parse_offset_file_name(n, SNAPSHOT_SUFFIX) for n in names)
        return sorted(o for o in found if o is not None)

    def take_snapshot(self, sync: bool = True) -> int:
        """Write the state as ``<map_end_offset>.snapshot`` (on roll and clean shutdown)
        and return that offset. On roll ``sync=False`` keeps the fsync off the append
        path; the roll's background flush calls :meth:`sync_snapshot`."""
        offset = self.map_end_offset
        data = encode_snapshot(self.producers, self.unreplicated)
        write_atomically(self.snapshot_path(offset), data, sync)
        return offset

    def sync_snapshot(self, offset: int) -> None:
        fsync_file(self.snapshot_path(offset))

    def load(self, log_start_offset: int, log_end_offset: int, at_most: int | None = None) -> int:
        """Load the newest readable snapshot in [log start, log end] (and not above
        ``at_most``); delete the ones past the log end. Returns the offset to replay
        the log from."""
        self.producers = {}
        self.map_end_offset = log_start_offset
        self.delete_snapshots_after(log_end_offset)
        self._set_transactions()
        for offset in reversed(self.snapshot_offsets()):
            if at_most is not None and offset > at_most:
                continue
            if offset < log_start_offset:
                break
            path = self.snapshot_path(offset)
            try:
                with open(path, "rb") as f:
                    self.producers, unreplicated = decode_snapshot_state(f.read())
            except (OSError, ValueError) as exc:
                log.warning("ignoring producer snapshot %s: %s", path, exc)
                continue
            self.map_end_offset = offset
            self._set_transactions(unreplicated)
            break
        return self.map_end_offset

    def _set_transactions(self, unreplicated: dict[int, int] | None = None) -> None:
        """The open transactions as the loaded producers say, and the completed ones
        not yet replicated as the snapshot says."""
        opened = sorted(
            (e.current_txn_first_offset, pid)
            for pid, e in self.producers.items()
            if e.current_txn_first_offset >= 0
        )
        self.ongoing = dict(opened)
        self.unreplicated = dict(unreplicated or {})
        self._update_first_unstable()

    def delete_snapshots_after(self, offset: int) -> None:
        for o in self.snapshot_offsets():
            if o > offset:
                self._unlink(o)

    def delete_snapshots_before(self, offset: int) -> None:
        for o in self.snapshot_offsets():
            if o < offset:
                self._unlink(o)

    def _unlink(self, offset: int) -> None:
        try:
            os.unlink(self.snapshot_path(offset))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"deleting producer snapshot: {exc}") from exc


def encode_snapshot(
    producers: dict[int, ProducerStateEntry], unreplicated: dict[int, int] | None = None
) -> bytes:
    body = bytearray(_COUNT.pack(len(producers)))
    for entry in producers.values():
        body += _PRODUCER.pack(
            entry.producer_id,
            entry.epoch,
            entry.last_timestamp,
            entry.coordinator_epoch,
            entry.current_txn_first_offset,
            len(entry.batches),
        )
        for b in entry.batches:
            body += _BATCH.pack(b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp)
    txns = unreplicated or {}
    body += _COUNT.pack(len(txns))
    for first, last in txns.items():
        body += _TXN.pack(first, last)
    return _HEAD.pack(SNAPSHOT_VERSION, crc32c(body)) + bytes(body)


def decode_snapshot(data: bytes) -> dict[int, ProducerStateEntry]:
    """The producers of a snapshot; ValueError when it is not one."""
    return decode_snapshot_state(data)[0]


def decode_snapshot_state(
    data: bytes,
) -> tuple[dict[int, ProducerStateEntry], dict[int, int]]:
    """Parse a snapshot: its producers and its unreplicated transactions (first offset
    -> marker offset); ValueError (struct.error included) when it is not one."""
    if len(data) < _HEAD.size + _COUNT.size:
        raise ValueError("snapshot is truncated")
    version, crc = _HEAD.unpack_from(data, 0)
    if version not in (1, SNAPSHOT_VERSION):
        raise ValueError(f"unknown snapshot version {version}")
    body = memoryview(data)[_HEAD.size :]
    if crc32c(body) != crc:
        raise ValueError("snapshot CRC mismatch")
    (count,) = _COUNT.unpack_from(body, 0)
    pos = _COUNT.size
    producers: dict[int, ProducerStateEntry] = {}
    try:
        for _ in range(count):
            if version == 1:
                pid, epoch, last_ts, n = _PRODUCER_V1.unpack_from(body, pos)
                coordinator_epoch, txn_first = -1, -1
                pos += _PRODUCER_V1.size
            else:
                pid, epoch, last_ts, coordinator_epoch, txn_first, n = _PRODUCER.unpack_from(
                    body, pos
                )
                pos += _PRODUCER.size
            entry = ProducerStateEntry(pid, epoch, last_ts, [], coordinator_epoch, txn_first)
            for _ in range(n):
                entry.batches.append(BatchMetadata(*_BATCH.unpack_from(body, pos)))
                pos += _BATCH.size
            producers[pid] = entry
        unreplicated: dict[int, int] = {}
        if version >= 2:
            (count,) = _COUNT.unpack_from(body, pos)
            pos += _COUNT.size
            for _ in range(count):
                first, last = _TXN.unpack_from(body, pos)
                unreplicated[first] = last
                pos += _TXN.size
    except struct.error as exc:
        raise ValueError(f"snapshot is truncated: {exc}") from None
    if pos != len(body):
        raise ValueError("snapshot has trailing bytes")
    return producers, unreplicated
