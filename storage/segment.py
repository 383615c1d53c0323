"""LogSegment: one .log file of record batches with its .index, .timeindex, .txnindex.

The .log holds v2 batches back to back, exactly as produced (after the leader rewrote
base_offset and partition_leader_epoch). The segment is named by its base offset, and
every batch in it has offsets in ``[base_offset, base_offset + 2**32)`` so relative
offsets fit the indexes' u32 fields; positions fit u32 because segments are capped at
2 GiB (segment.bytes is an int32 in Kafka).

Index rule (as Kafka's): before a batch is appended at position ``p``, if more than
``index.interval.bytes`` were appended since the last offset index entry, add the offset
entry ``(batch.last_offset, p)`` and a time entry ``(max timestamp so far, offset of that
batch)`` if the maximum grew. So the first batch of a segment is never indexed, a lookup
below the first entry starts at position 0, and recovery rebuilds identical indexes.

Where the latest append's first batch starts is remembered (base and last offset, position,
header): a follower that is caught up fetches from exactly that batch next, and a fetch
waiting at the log end reads it as soon as the append completes it, so that read finds
its start without the index lookup and header read. Anything that cuts the file forgets
it (truncation, a failed append, recovery); the next append sets it again.

Where recent reads ended is remembered too (read ends: offset -> position, the few
newest). A reader that keeps up (a follower, or a consumer) asks next for exactly the
offset where its previous read ended; when appends came in between, that batch is no
longer the latest append, and without this memory the read would search the index and
read a header. A read records its end only where it knows the offset there: at the end
of the file (the segment's next offset; the position is where the next append will
start), or at the ``max_position`` its caller found for an offset (a consumer's read up
to the high watermark).

Invariant of every entry ``(offset, position)``: ``position <= size``, every batch
before ``position`` ends below ``offset``, and every batch from ``position`` on ends at
or above it. So while ``position < size`` the batch at ``position`` is the first that
can hold ``offset``, exactly what :meth:`translate_offset` would find; an entry at the
file's end (nothing appended there yet) is not used. Appends keep the invariant (they
add batches at the end, with offsets above every earlier one); anything that cuts the
file clears the memory (see :meth:`_cut`), and so does recovery. A segment that rolls,
is deleted or is replaced by the cleaner's swap keeps its file as it was, so its
entries stay true (the cleaned segment is a new object, with an empty memory).

Appends use ``os.write`` on an O_APPEND descriptor. A write that fails part way is
truncated away before :class:`StorageError` is raised, and index space is reserved before
the log is written, so a failed append leaves the segment exactly as it was.

Not safe across threads, except :meth:`flush`, which only fsyncs descriptors and may run
in a worker thread while the event loop appends.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from protocol.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    BatchHeader,
    InvalidBatch,
    read_header,
    validate,
)
from storage.errors import StorageError
from storage.file_region import FileRegion
from storage.index import OffsetIndex, TimeIndex
from storage.names import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    offset_file_name,
)
from storage.txn_index import TransactionIndex

log = logging.getLogger(__name__)

#: Largest distance between a segment's base offset and an offset it may hold.
MAX_RELATIVE_OFFSET = (1 << 32) - 1
_SCAN_CHUNK = 4096
#: How many read ends a segment remembers: one per reader that keeps up (a partition's
#: followers and a few consumers), the oldest forgotten first.
_READ_ENDS = 8
_RECOVERY_CHUNK = 8 << 20


@dataclass(frozen=True, slots=True)
class RecoveryResult:
    """What :meth:`LogSegment.recover` kept and cut."""

    valid_bytes: int
    truncated_bytes: int
    batches: int
    next_offset: int
    reason: str | None  # why the tail was cut, None when nothing was


class LogSegment:
    def __init__(
        self,
        directory: str,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_size: int,
        created_ms: int,
        create: bool = False,
        file_suffix: str = "",
    ) -> None:
        """``file_suffix`` follows each file's name (``.cleaned``, ``.swap``: a segment
        the log cleaner is writing or swapping in)."""
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self.file_suffix = file_suffix

        def path(suffix: str) -> str:
            return os.path.join(directory, offset_file_name(base_offset, suffix) + file_suffix)

        self.log_path = path(LOG_SUFFIX)
        index_path = path(INDEX_SUFFIX)
        time_path = path(TIME_INDEX_SUFFIX)
        flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0)
        try:
            self._fd = os.open(self.log_path, flags, 0o644)
            self.size = os.fstat(self._fd).st_size
        except OSError as exc:
            raise StorageError(f"opening segment {self.log_path}: {exc}") from exc
        # an index file is made by its first entry (storage.index); a missing one is empty
        self.offset_index = OffsetIndex(index_path, base_offset, max_index_size)
        self.time_index = TimeIndex(time_path, base_offset, max_index_size)
        #: aborted transactions whose ABORT marker is here (the Log appends them)
        self.txn_index = TransactionIndex(path(TXN_INDEX_SUFFIX))
        #: set by :meth:`recover`: the log must rebuild the .txnindex from the batches
        self.txn_index_stale = False
        self.deleted = False
        # In-memory tail state; exact for the active segment (see load_tail).
        self.last_offset = base_offset - 1
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset - 1
        self._bytes_since_index = 0
        self._tail_loaded = self.size == 0
        self._first_batch_timestamp: int | None = None
        #: (base offset, last offset, position, header) of the latest append's first
        #: batch while the file still holds it (see the module doc)
        self._last_append: tuple[int, int, int, BatchHeader] | None = None
        #: offset -> position where a read ended, oldest first (see the module doc)
        self._read_ends: dict[int, int] = {}

    # -- state -------------------------------------------------------------------------

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def next_offset(self) -> int:
        self.load_tail()
        return self.last_offset + 1

    def load_tail(self) -> None:
        """Learn the last offset and max timestamp without scanning the segment: from
        the last index entries, then the batch headers after the last offset entry (at
        most about ``index.interval.bytes`` of them)."""
        if self._tail_loaded:
            return
        _, entry_pos = self.offset_index.last_entry()
        ts, ts_offset = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = ts, ts_offset
        self.last_offset = self.base_offset - 1
        for _, header in self.iter_headers(entry_pos):
            self.last_offset = header.last_offset
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp = header.max_timestamp
                self.offset_of_max_timestamp = header.last_offset
        self._bytes_since_index = self.size - entry_pos
        self._tail_loaded = True

    @property
    def largest_timestamp(self) -> int:
        """The segment's largest record timestamp, for time retention; the file's
        modification time when no batch carries a timestamp (as Kafka does)."""
        ts = self.max_timestamp if self._tail_loaded else self.time_index.last_entry()[0]
        if ts >= 0:
            return ts
        try:
            return int(os.fstat(self._fd).st_mtime_ns // 1_000_000)
        except OSError:
            return 0

    def rolling_base_timestamp(self) -> int | None:
        """Max timestamp of the first batch: a segment's age for time-based rolling."""
        if self._first_batch_timestamp is None and self.size >= HEADER_SIZE:
            for _, header in self.iter_headers(0):
                self._first_batch_timestamp = header.max_timestamp
                break
        return self._first_batch_timestamp

    def should_roll_for_index(self) -> bool:
        """Whether an index is full (asked before every append: the fields are read
        here, not through ``is_full``)."""
        offsets, times = self.offset_index, self.time_index
        return offsets.entries >= offsets.max_entries or times.entries >= times.max_entries

    # -- append ------------------------------------------------------------------------

    def append(
        self, data: bytes | bytearray | memoryview, batches: Sequence[tuple[int, BatchHeader]]
    ) -> int:
        """Append ``data``, whose batches are ``(position in data, header)``, already
        validated and offset-assigned. Returns the position the data starts at."""
        if not self._tail_loaded:
            self.load_tail()
        start = self.size
        # Plan index entries first so that their space can be reserved before any write.
        # (Runs on every produce: the index objects' fields are read only when an entry
        # is due, which with small batches is one append in many.)
        offset_entries: list[tuple[int, int]] = []
        time_entries: list[tuple[int, int]] = []
        since = self._bytes_since_index
        interval = self.index_interval_bytes
        max_ts, max_ts_offset = self.max_timestamp, self.offset_of_max_timestamp
        last_time_entry: int | None = None
        for rel_pos, header in batches:
            last_offset = header.base_offset + header.last_offset_delta
            if header.max_timestamp > max_ts:
                max_ts, max_ts_offset = header.max_timestamp, last_offset
            if since > interval:
                if last_time_entry is None:
                    last_time_entry = self.time_index.last_entry()[0]
                    room = self.offset_index.max_entries - self.offset_index.entries
                    time_room = self.time_index.max_entries - self.time_index.entries
                if len(offset_entries) < room:
                    offset_entries.append((last_offset, start + rel_pos))
                    if max_ts > last_time_entry and len(time_entries) < time_room:
                        time_entries.append((max_ts, max_ts_offset))
                        last_time_entry = max_ts
                    since = 0
            since += header.batch_length + LOG_OVERHEAD
        if offset_entries:
            self.offset_index.reserve(len(offset_entries))
        if time_entries:
            self.time_index.reserve(len(time_entries))
        self._write(data, start)
        try:
            for off, pos in offset_entries:
                self.offset_index.append(off, pos)
            for ts, off in time_entries:
                self.time_index.maybe_append(ts, off)
        except StorageError:
            self.offset_index.truncate_to(batches[0][1].base_offset)
            self.time_index.truncate_to(batches[0][1].base_offset)
            self._cut(start)
            raise
        self.size = start + len(data)
        self.last_offset = batches[-1][1].last_offset
        rel_pos, first = batches[0]
        self._last_append = (first.base_offset, first.last_offset, start + rel_pos, first)
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, max_ts_offset
        self._bytes_since_index = since
        if self._first_batch_timestamp is None and start == 0:
            self._first_batch_timestamp = batches[0][1].max_timestamp
        return start

    def _write(self, data: bytes | bytearray | memoryview, start: int) -> None:
        view = data if type(data) is memoryview else memoryview(data)
        if view.format != "B":
            view = view.cast("B")
        total = len(view)
        written = 0
        try:
            written = os.write(self._fd, view)
            while written < total:  # a short write: the disk is filling up
                written += os.write(self._fd, view[written:])
        except OSError as exc:
            self._cut(start)
            raise StorageError(
                f"appending {len(view)} bytes to {self.log_path} at {start} failed after "
                f"{written} bytes: {exc}"
            ) from exc

    def _cut(self, size: int) -> None:
        """Truncate the .log back to ``size`` (a failed append, truncation, recovery).
        Both memories of positions are forgotten: the batches they point at may be gone,
        and batches appended again at the same offsets may differ."""
        self._last_append = None
        self._read_ends.clear()
        try:
            os.ftruncate(self._fd, size)
        except OSError as exc:
            raise StorageError(f"cannot truncate {self.log_path} back to {size}: {exc}") from exc
        self.size = size

    # -- reading -----------------------------------------------------------------------

    def iter_headers(
        self, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from ``start``, reading headers only. Stops
        at the end or at anything that is not a plausible v2 header."""
        limit = self.size if end is None else min(end, self.size)
        buf = b""
        buf_pos = start
        pos = start
        while pos + HEADER_SIZE <= limit:
            if pos < buf_pos or pos + HEADER_SIZE > buf_pos + len(buf):
                try:
                    buf = os.pread(self._fd, _SCAN_CHUNK, pos)
                except OSError as exc:
                    raise StorageError(f"reading {self.log_path} at {pos}: {exc}") from exc
                buf_pos = pos
                if len(buf) < HEADER_SIZE:
                    return
            header = read_header(buf, pos - buf_pos)
            if header.magic != 2 or header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
                return
            if pos + header.size > limit:
                return
            yield pos, header
            pos += header.size

    def translate_offset(
        self, offset: int, start_position: int = 0
    ) -> tuple[int, BatchHeader] | None:
        """The first batch whose last offset is >= ``offset``: floor index entry, then a
        forward scan of batch headers.

        Shortcut for densely indexed segments (batches larger than the index interval):
        when the floor entry's batch ends just before the next entry's batch begins,
        that batch holds ``offset`` and one header read finds it. Before either, the
        latest append's first batch, when it holds ``offset``, is known without a read."""
        last = self._last_append
        if last is not None and last[0] <= offset <= last[1] and last[2] >= start_position:
            return last[2], last[3]
        floor_offset, pos, next_pos = self.offset_index.lookup_bracket(offset)
        if floor_offset == offset and pos >= start_position and pos > 0:
            found = self._header_at(pos)
            if found is not None and found[1].last_offset == offset:
                return found
        elif next_pos > start_position:
            found = self._header_at(next_pos)
            if found is not None and found[1].base_offset == floor_offset + 1:
                return found
        for found in self.iter_headers(max(pos, start_position)):
            if found[1].last_offset >= offset:
                return found
        return None

    def _header_at(self, pos: int) -> tuple[int, BatchHeader] | None:
        """The batch header at ``pos`` (one small read), None if there is none."""
        if pos + HEADER_SIZE > self.size:
            return None
        try:
            data = os.pread(self._fd, HEADER_SIZE, pos)
        except OSError as exc:
            raise StorageError(f"reading {self.log_path} at {pos}: {exc}") from exc
        if len(data) < HEADER_SIZE:
            return None
        header = read_header(data)
        if header.magic != 2 or pos + header.size > self.size:
            return None
        return pos, header

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = True,
        max_position_offset: int | None = None,
    ) -> FileRegion | None:
        """A region from the batch holding ``start_offset``, at most ``max_size`` bytes
        (the first whole batch when ``min_one_message``), ending by ``max_position``.
        The region may end inside a batch, as Kafka's fetches do; clients drop the
        partial batch. None when no batch holds ``start_offset``.

        ``start_offset`` where an earlier read ended is found in the read ends (no index
        lookup, no header read; see the module doc); a read that reaches the end of the
        file, or ``max_position`` when ``max_position_offset`` says which offset
        :meth:`translate_offset` placed there, records its own end."""
        size = self.size
        end = size if max_position is None or max_position > size else max_position
        header: BatchHeader | None = None
        pos = self._read_ends.get(start_offset, size)
        if pos == size:  # not a read end, or one where nothing was appended yet
            found = self.translate_offset(start_offset)
            if found is None:
                return None
            pos, header = found
        if pos >= end:
            return FileRegion(self._fd, pos, 0)
        length = end - pos
        if max_size < length:  # ends inside the data: at max_size, or after one batch
            if min_one_message:
                if header is None:
                    found = self.translate_offset(start_offset)
                    assert found is not None  # the read end's batch is in the file
                    header = found[1]
                max_size = max(max_size, header.size)
            return FileRegion(self._fd, pos, min(length, max_size))
        if end == size:
            if self._tail_loaded and self.last_offset + 1 not in self._read_ends:
                self._remember_read_end(self.last_offset + 1, size)
        elif max_position_offset is not None and max_position_offset not in self._read_ends:
            self._remember_read_end(max_position_offset, end)
        return FileRegion(self._fd, pos, length)

    def _remember_read_end(self, offset: int, position: int) -> None:
        """Record a read's end not yet remembered (the next append's start when it
        reached the file's end), forgetting the oldest when full. (Followers reading to
        the same end share one entry: the caller skips a known one without a call.)"""
        ends = self._read_ends
        if len(ends) >= _READ_ENDS:
            del ends[next(iter(ends))]
        ends[offset] = position

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int
    ) -> tuple[int, BatchHeader] | None:
        """The first batch at or after ``starting_offset`` whose max timestamp is >=
        ``timestamp``: the time index gives an offset, the offset index a position, and
        the header scan goes on from there."""
        _, ts_offset = self.time_index.lookup(timestamp)
        _, pos = self.offset_index.lookup(max(ts_offset, starting_offset))
        for found in self.iter_headers(pos):
            header = found[1]
            if header.max_timestamp >= timestamp and header.last_offset >= starting_offset:
                return found
        return None

    # -- recovery and truncation -------------------------------------------------------

    def recover(self, min_offset: int | None = None) -> RecoveryResult:
        """Validate every batch (structure, CRC-32C, offsets increasing and within this
        segment), rebuild both indexes from them, and truncate the file at the first
        invalid batch. ``min_offset``: the first batch must not start below it."""
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index_stale = True  # the Log resets and rebuilds it
        self.last_offset = self.base_offset - 1
        self.max_timestamp, self.offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset - 1
        self._bytes_since_index = 0
        self._first_batch_timestamp = None
        next_expected = (
            self.base_offset if min_offset is None else max(min_offset, self.base_offset)
        )
        buf = bytearray(_RECOVERY_CHUNK)
        view = memoryview(buf)
        buf_pos, buf_len = 0, 0
        pos, batches, reason = 0, 0, None
        file_size = self.size
        while pos < file_size:
            # Make the whole next batch available in the buffer.
            need = min(LOG_OVERHEAD, file_size - pos)
            if pos + need > buf_pos + buf_len:
                buf_pos, buf_len = pos, self._fill(view, pos, file_size)
            if file_size - pos < HEADER_SIZE:
                reason = f"{file_size - pos} trailing bytes are too few for a batch header"
                break
            length = int.from_bytes(
                view[pos - buf_pos + 8 : pos - buf_pos + 12], "big", signed=True
            )
            size = length + LOG_OVERHEAD
            if length < HEADER_SIZE - LOG_OVERHEAD or pos + size > file_size:
                reason = f"batch length {length} is impossible with {file_size - pos} bytes left"
                break
            if pos + size > buf_pos + buf_len:
                if size > len(buf):
                    buf = bytearray(size)
                    view = memoryview(buf)
                buf_pos, buf_len = pos, self._fill(view, pos, file_size)
            rel = pos - buf_pos
            try:
                header = validate(view, rel, rel + size)
            except InvalidBatch as exc:
                reason = str(exc)
                break
            if header.base_offset < next_expected:
                reason = f"base offset {header.base_offset} is below {next_expected}"
                break
            if header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
                reason = f"offset {header.last_offset} does not fit segment {self.base_offset}"
                break
            self._index_batch(header, pos)
            next_expected = header.next_offset
            pos += size
            batches += 1
        truncated = file_size - pos
        self._last_append = None
        self._read_ends.clear()
        if truncated:
            self._cut(pos)
        self.size = pos
        self._tail_loaded = True
        return RecoveryResult(
            pos, truncated, batches, self.last_offset + 1, reason if truncated else None
        )

    def _fill(self, view: memoryview, pos: int, file_size: int) -> int:
        want = min(len(view), file_size - pos)
        try:
            got = os.preadv(self._fd, [view[:want]], pos)
        except OSError as exc:
            raise StorageError(f"reading {self.log_path} at {pos}: {exc}") from exc
        return got

    def _index_batch(self, header: BatchHeader, pos: int) -> None:
        """The append-time index rule, applied to one batch during a rebuild."""
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = (
                header.max_timestamp,
                header.last_offset,
            )
        if self._bytes_since_index > self.index_interval_bytes and not self.offset_index.is_full:
            self.offset_index.append(header.last_offset, pos)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size
        self.last_offset = header.last_offset
        if self._first_batch_timestamp is None:
            self._first_batch_timestamp = header.max_timestamp

    def rebuild_indexes(self) -> RecoveryResult:
        return self.recover()

    def check_indexes(self) -> str | None:
        """Why the index files cannot be trusted, or None. A missing file is one no entry
        was written to, unless the segment is long enough to have had one: more than
        ``index_interval_bytes`` for the offset index, an offset entry for the time
        index (each offset entry comes with a time entry)."""
        if not self.offset_index.made and self.size > self.index_interval_bytes:
            return "index files are missing"
        if not self.time_index.made and self.offset_index.entries:
            return "index files are missing"
        problem = self.offset_index.check(self.size)
        if problem is None:
            problem = self.time_index.check(MAX_RELATIVE_OFFSET)
        if problem is None:
            problem = self.txn_index.check()
        return problem

    def truncate_to(self, offset: int) -> int:
        """Remove the batches holding offsets >= ``offset`` (a batch holding it is removed
        whole). Returns the bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        pos = found[0]
        removed = self.size - pos
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self._cut(pos)
        self._tail_loaded = False
        self.last_offset = self.base_offset - 1
        if pos == 0:
            self._first_batch_timestamp = None
        self.load_tail()
        return removed

    # -- life cycle --------------------------------------------------------------------

    def on_become_inactive(self) -> None:
        """On roll: a closing time index entry for the segment's max timestamp, and both
        indexes trimmed to their entries."""
        self.load_tail()
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(
                self.max_timestamp, self.offset_of_max_timestamp, skip_full_check=True
            )
        self.offset_index.seal()
        self.time_index.seal()

    def seal_indexes(self) -> None:
        """Release the index descriptors of a segment that takes no more appends."""
        self.offset_index.seal()
        self.time_index.seal()

    def flush(self) -> None:
        try:
            os.fdatasync(self._fd)
        except OSError as exc:
            raise StorageError(f"flushing {self.log_path}: {exc}") from exc
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        if self._fd < 0:
            return
        try:
            if not self.deleted and self.time_index.made:
                self.on_become_inactive()
            elif not self.deleted:
                # no time entry yet: the closing one would make the file, at shutdown,
                # for every small partition; the next open reads this tail (load_tail)
                # and a roll writes the closing entry then
                self.offset_index.seal()
        finally:
            self.offset_index.close()
            self.time_index.close()
            self.txn_index.close()
            os.close(self._fd)
            self._fd = -1

    def mark_deleted(self) -> None:
        """Rename the files to ``*.deleted``; descriptors stay open for reads in flight
        until :meth:`delete_files` (file.delete.delay.ms later)."""
        self.deleted = True
        self.change_file_suffix(DELETED_SUFFIX)

    def change_file_suffix(self, suffix: str) -> None:
        """Rename the files from the current suffix to ``suffix`` ("" for the plain
        names), the .log last: recovery goes by the .log's name."""
        old = self.file_suffix
        try:
            for index in (self.offset_index, self.time_index, self.txn_index):
                index.rename(index.path[: len(index.path) - len(old)] + suffix)
            new_log = self.log_path[: len(self.log_path) - len(old)] + suffix
            os.rename(self.log_path, new_log)
            self.log_path = new_log
            self.file_suffix = suffix
        except OSError as exc:
            raise StorageError(f"renaming segment {self.log_path} to {suffix!r}: {exc}") from exc

    def delete_files(self) -> None:
        self.deleted = True
        paths = [self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path]
        self.close()
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StorageError(f"deleting {path}: {exc}") from exc

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path}, size={self.size})"
