"""Producer state for idempotence: per producer id, its epoch and its last five batches.

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
after it (producer fields are all in the header, so replay reads no records).

Snapshot format (big-endian)::

    version   int16   1
    crc       uint32  CRC-32C of everything after this field
    count     int32   producers
    count times:
      producer_id int64 | epoch int16 | last_timestamp int64 | n int8 (<= 5)
      n times: first_seq int32 | last_seq int32 | first_offset int64 | last_offset int64
               | max_timestamp int64
"""

from __future__ import annotations

import dataclasses
import logging
import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from protocol.errors import ErrorCode
from protocol.records.batch import BatchHeader
from protocol.records.crc import crc32c
from storage.checkpoint import fsync_file, write_atomically
from storage.errors import StorageError
from storage.names import SNAPSHOT_SUFFIX, offset_file_name, parse_offset_file_name

log = logging.getLogger(__name__)

MAX_BATCHES = 5
SNAPSHOT_VERSION = 1
_INT32_MAX = (1 << 31) - 1
_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_PRODUCER = struct.Struct(">qhqb")
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

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def copy(self) -> ProducerStateEntry:
        return dataclasses.replace(self, batches=list(self.batches))

    def add(self, header: BatchHeader) -> None:
        """Record a batch already written (its offsets are final)."""
        if header.producer_epoch != self.epoch:
            self.epoch = header.producer_epoch
            self.batches.clear()
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


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


def check_batch(entry: ProducerStateEntry | None, header: BatchHeader) -> SequenceCheck:
    """Decide whether a batch from a producer may be appended (Kafka's rules).

    - no producer id (-1) or no sequence: nothing to check;
    - a producer we have no state for: any sequence starts it;
    - an epoch older than the known one: INVALID_PRODUCER_EPOCH;
    - same epoch and the sequences of one of the last five batches: a duplicate;
    - a new epoch must start at sequence 0, the same epoch must continue at last + 1:
      otherwise OUT_OF_ORDER_SEQUENCE_NUMBER.
    """
    if header.producer_id < 0 or header.base_sequence < 0 or entry is None:
        return ACCEPT
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

    # -- appends -----------------------------------------------------------------------

    def update(self, header: BatchHeader) -> None:
        """Account a batch written to the log (leader or follower)."""
        if header.producer_id >= 0:
            entry = self.producers.get(header.producer_id)
            if entry is None:
                entry = self.producers[header.producer_id] = ProducerStateEntry(
                    header.producer_id, header.producer_epoch
                )
            entry.add(header)
        self.map_end_offset = header.next_offset

    def replay(self, headers: Iterable[BatchHeader]) -> None:
        for header in headers:
            if header.next_offset > self.map_end_offset:
                self.update(header)

    def rebuild(
        self,
        log_start_offset: int,
        log_end_offset: int,
        headers_from: Callable[[int], Iterable[BatchHeader]],
    ) -> None:
        """The state at the log end: the newest snapshot not above it, then the batch
        headers after that (``headers_from(offset)`` yields the log's from there)."""
        replay_from = self.load(log_start_offset, log_end_offset)
        if replay_from < log_end_offset:
            self.replay(headers_from(replay_from))
        self.map_end_offset = log_end_offset

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers silent for longer than producer.id.expiration.ms."""
        expired = [
            pid for pid, e in self.producers.items() if now_ms - e.last_timestamp > expiration_ms
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
        write_atomically(self.snapshot_path(offset), encode_snapshot(self.producers), sync)
        return offset

    def sync_snapshot(self, offset: int) -> None:
        fsync_file(self.snapshot_path(offset))

    def load(self, log_start_offset: int, log_end_offset: int) -> int:
        """Load the newest readable snapshot in [log start, log end]; delete the ones
        past the log end. Returns the offset to replay the log from."""
        self.producers = {}
        self.map_end_offset = log_start_offset
        self.delete_snapshots_after(log_end_offset)
        for offset in reversed(self.snapshot_offsets()):
            if offset < log_start_offset:
                break
            path = self.snapshot_path(offset)
            try:
                with open(path, "rb") as f:
                    self.producers = decode_snapshot(f.read())
            except (OSError, ValueError) as exc:
                log.warning("ignoring producer snapshot %s: %s", path, exc)
                continue
            self.map_end_offset = offset
            break
        return self.map_end_offset

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


def encode_snapshot(producers: dict[int, ProducerStateEntry]) -> bytes:
    body = bytearray(_COUNT.pack(len(producers)))
    for entry in producers.values():
        body += _PRODUCER.pack(
            entry.producer_id, entry.epoch, entry.last_timestamp, len(entry.batches)
        )
        for b in entry.batches:
            body += _BATCH.pack(b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp)
    return _HEAD.pack(SNAPSHOT_VERSION, crc32c(body)) + bytes(body)


def decode_snapshot(data: bytes) -> dict[int, ProducerStateEntry]:
    """Parse a snapshot; ValueError (struct.error included) when it is not one."""
    if len(data) < _HEAD.size + _COUNT.size:
        raise ValueError("snapshot is truncated")
    version, crc = _HEAD.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise ValueError(f"unknown snapshot version {version}")
    body = memoryview(data)[_HEAD.size :]
    if crc32c(body) != crc:
        raise ValueError("snapshot CRC mismatch")
    (count,) = _COUNT.unpack_from(body, 0)
    pos = _COUNT.size
    producers: dict[int, ProducerStateEntry] = {}
    try:
        for _ in range(count):
            pid, epoch, last_ts, n = _PRODUCER.unpack_from(body, pos)
            pos += _PRODUCER.size
            entry = ProducerStateEntry(pid, epoch, last_ts)
            for _ in range(n):
                entry.batches.append(BatchMetadata(*_BATCH.unpack_from(body, pos)))
                pos += _BATCH.size
            producers[pid] = entry
    except struct.error as exc:
        raise ValueError(f"snapshot is truncated: {exc}") from None
    if pos != len(body):
        raise ValueError("snapshot has trailing bytes")
    return producers
