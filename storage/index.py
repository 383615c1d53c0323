"""Sparse offset and time indexes of a segment (.index, .timeindex).

Entry layouts (big-endian), relative offsets counted from the segment's base offset::

    .index      8 bytes   relative_offset u32 | position u32
    .timeindex 12 bytes   timestamp i64       | relative_offset u32

An offset entry ``(o, p)`` says: the batch that starts at byte ``p`` of the .log has last
offset ``base + o``. A time entry ``(t, o)`` says: the largest timestamp in the segment up
to and including offset ``base + o`` is ``t``. Both are strictly increasing, so lookups
are binary searches for the floor entry.

Reads and writes go through a shared mmap, but only over space that ``posix_fallocate``
has already reserved: the file grows ahead of the write position in small steps
(doubling, at most 1 MiB at a time, capped at ``segment.index.bytes``) and the mapping
covers exactly the reserved bytes. So a full disk surfaces as :class:`StorageError` from
:meth:`reserve` before anything is written -- never as a SIGBUS from touching pages with
no blocks behind them -- and a thousand idle partitions do not reserve 10 MiB each.
Pages dirtied through the mapping are written back by ``fsync`` on the descriptor
(Linux's page cache is shared), which is what :meth:`flush` does.

The file is made by the first entry, not by the segment: an index without a file is an
index without entries (lookups answer from the segment's start), and nothing is lost by
not writing it. Creating a file is the dearest filesystem step (allocating an inode: a
few hundred microseconds of kernel time measured here, where reading, renaming or
opening an existing file takes about ten), and a partition that takes no record would
pay for two empty files; a LeaderAndIsr creating 3,000 partitions paid for 6,000. An
index whose file is absent is opened as an empty one, and :attr:`made` says whether the
file is there. :meth:`trim` cuts the
file to its entries when the segment rolls or closes; on open, a file's entries are its
length / entry size.

Not safe across threads: one thread (the event loop) appends, looks up and trims.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct

from storage.errors import StorageError

_MIN_GROWTH = 4096
_MAX_GROWTH = 1 << 20
_U32_MAX = (1 << 32) - 1


class _Index:
    """Common file handling of both index kinds."""

    ENTRY: struct.Struct

    def __init__(self, path: str, base_offset: int, max_index_size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.entry_size = self.ENTRY.size
        self.max_entries = max(1, max_index_size // self.entry_size)
        #: whether the file exists (see the module doc: the first entry makes it)
        self.made = True
        try:
            self._fd = os.open(path, os.O_RDWR)
            self._allocated = os.fstat(self._fd).st_size
        except FileNotFoundError:
            self._fd, self._allocated, self.made = -1, 0, False
        except OSError as exc:
            raise StorageError(f"opening index {path}: {exc}") from exc
        self.entries = self._allocated // self.entry_size
        self._closed = False
        self._map: mmap.mmap | None = None
        self._remap()

    def _file(self) -> int:
        """The descriptor: reopened if :meth:`seal` released it, the file created if it
        was not made yet (emptied, should a stray one be in its place)."""
        if self._fd < 0:
            if self._closed:
                raise StorageError(f"index {self.path} is closed")
            flags = os.O_RDWR if self.made else os.O_RDWR | os.O_CREAT | os.O_TRUNC
            try:
                self._fd = os.open(self.path, flags, 0o644)
            except OSError as exc:
                raise StorageError(f"opening index {self.path}: {exc}") from exc
            self.made = True
        return self._fd

    # -- file handling -------------------------------------------------------------------

    def _remap(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        if self._allocated > 0:
            self._map = mmap.mmap(self._file(), self._allocated, access=mmap.ACCESS_WRITE)

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    @property
    def size_bytes(self) -> int:
        return self.entries * self.entry_size

    def reserve(self, count: int = 1) -> None:
        """Make sure the next ``count`` entries' bytes are allocated on disk
        (StorageError if not)."""
        need = (self.entries + count) * self.entry_size
        if need <= self._allocated:
            return
        step = min(max(self._allocated, _MIN_GROWTH), _MAX_GROWTH)
        cap = self.max_entries * self.entry_size
        new_size = min(max(need, self._allocated + step), cap)
        new_size -= new_size % self.entry_size
        if new_size < need:
            raise StorageError(f"index {self.path} is full ({self.entries} entries)")
        try:
            os.posix_fallocate(self._file(), self._allocated, new_size - self._allocated)
        except OSError as exc:
            # fallocate may have extended the file before failing: give the space back.
            with contextlib.suppress(OSError):
                os.ftruncate(self._file(), self._allocated)
            raise StorageError(f"growing index {self.path}: {exc}") from exc
        self._allocated = new_size
        self._remap()

    def _write_entry(self, a: int, b: int) -> None:
        at = self.entries * self.entry_size
        if at + self.entry_size > self._allocated:  # (reserve's own test, without a call)
            self.reserve()
        assert self._map is not None  # reserve() mapped the reserved space
        self.ENTRY.pack_into(self._map, at, a, b)
        self.entries += 1

    def trim(self) -> None:
        """Cut the file to its entries (on roll and close)."""
        size = self.entries * self.entry_size
        if size == self._allocated:
            return
        if self._map is not None:
            self._map.close()
            self._map = None
        try:
            os.ftruncate(self._file(), size)
        except OSError as exc:
            raise StorageError(f"trimming index {self.path}: {exc}") from exc
        self._allocated = size
        self._remap()

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self.entries = 0
        if self._map is not None:
            self._map.close()
            self._map = None
        if not self.made:
            return
        try:
            os.ftruncate(self._file(), 0)
        except OSError as exc:
            raise StorageError(f"resetting index {self.path}: {exc}") from exc
        self._allocated = 0

    def seal(self) -> None:
        """Trim, and release the descriptor of an index that takes no more entries (a
        rolled segment's): its mapping stays for lookups. A segment made active again
        by a truncation reopens it on the next write. (CPython's mmap holds its own
        duplicate descriptor, so this saves one descriptor per index.)"""
        self.trim()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def flush(self) -> None:
        """fsync the file; pages written through the mapping are part of it."""
        fd, own = self._fd, False
        if fd < 0:
            if self._closed or not self.made:
                return
            try:
                fd, own = os.open(self.path, os.O_RDONLY), True
            except FileNotFoundError:
                return  # deleted meanwhile: nothing left to make durable
            except OSError as exc:
                raise StorageError(f"flushing index {self.path}: {exc}") from exc
        try:
            os.fsync(fd)
        except OSError as exc:
            raise StorageError(f"flushing index {self.path}: {exc}") from exc
        finally:
            if own:
                os.close(fd)

    def close(self) -> None:
        if self._closed:
            return
        try:
            self.trim()
        finally:
            self._closed = True
            if self._map is not None:
                self._map.close()
                self._map = None
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def rename(self, new_path: str) -> None:
        if self.made:
            os.rename(self.path, new_path)
        self.path = new_path

    # -- reading -------------------------------------------------------------------------

    def raw_entry(self, i: int) -> tuple[int, int]:
        assert self._map is not None
        a, b = self.ENTRY.unpack_from(self._map, i * self.entry_size)
        return int(a), int(b)

    def all_entries(self) -> list[tuple[int, int]]:
        if self._map is None or self.entries == 0:
            return []
        view = memoryview(self._map)[: self.entries * self.entry_size]
        try:
            return [(int(a), int(b)) for a, b in self.ENTRY.iter_unpack(view)]
        finally:
            view.release()

    def _floor_slot(self, key: int, field: int) -> int:
        """Index of the last entry whose ``field`` is <= key, or -1. (The hot path of
        every fetch: locals instead of attribute lookups and method calls.)"""
        lo, hi = 0, self.entries - 1
        if hi < 0 or self._map is None:
            return -1
        found = -1
        unpack, buf, size = self.ENTRY.unpack_from, self._map, self.entry_size
        while lo <= hi:
            mid = (lo + hi) >> 1
            if unpack(buf, mid * size)[field] <= key:
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    def _ceil_slot(self, key: int, field: int) -> int:
        """Index of the first entry whose ``field`` is >= key (``entries`` if none)."""
        lo, hi = 0, self.entries
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.raw_entry(mid)[field] < key:
                lo = mid + 1
            else:
                hi = mid
        return lo


class OffsetIndex(_Index):
    ENTRY = struct.Struct(">II")

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if not 0 <= rel <= _U32_MAX or position > _U32_MAX:
            raise ValueError(
                f"entry ({offset}, {position}) does not fit segment {self.base_offset}"
            )
        if self.entries:  # above the last entry (read from the mapping, not raw_entry)
            assert self._map is not None  # entries lie in the mapped space
            last = self.ENTRY.unpack_from(self._map, (self.entries - 1) * self.entry_size)
            if rel <= last[0]:
                raise ValueError(f"offset {offset} is not above the last index entry")
        self._write_entry(rel, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the floor entry for ``offset``; (base, 0) if none."""
        slot = self._floor_slot(offset - self.base_offset, 0)
        if slot < 0:
            return self.base_offset, 0
        rel, pos = self.raw_entry(slot)
        return self.base_offset + rel, pos

    def lookup_bracket(self, offset: int) -> tuple[int, int, int]:
        """(floor entry's offset, its position, position of the entry after it or -1):
        the batch holding ``offset`` lies after the floor entry's batch and at or
        before the next entry's. Floor (base - 1, 0) if none."""
        slot = self._floor_slot(offset - self.base_offset, 0)
        following = slot + 1
        next_pos = self.raw_entry(following)[1] if following < self.entries else -1
        if slot < 0:
            return self.base_offset - 1, 0, next_pos
        rel, pos = self.raw_entry(slot)
        return self.base_offset + rel, pos, next_pos

    def offset_at_or_after(self, position: int) -> int | None:
        """The offset of the first entry whose batch starts at or after ``position``
        (the last offset of that batch), None when there is none."""
        slot = self._ceil_slot(position, 1)
        return self.base_offset + self.raw_entry(slot)[0] if slot < self.entries else None

    def last_entry(self) -> tuple[int, int]:
        if self.entries == 0:
            return self.base_offset, 0
        rel, pos = self.raw_entry(self.entries - 1)
        return self.base_offset + rel, pos

    def truncate_to(self, offset: int) -> None:
        """Forget entries for offsets >= ``offset``."""
        self.entries = self._ceil_slot(offset - self.base_offset, 0)

    def check(self, log_size: int) -> str | None:
        """Why this index cannot be trusted, or None. Checks the file size, that offsets
        and positions strictly increase, and that positions lie inside the log."""
        if self._allocated % self.entry_size:
            return f"size {self._allocated} is not a multiple of {self.entry_size}"
        prev_rel, prev_pos = -1, -1
        for rel, pos in self.all_entries():
            if rel <= prev_rel or pos <= prev_pos:
                return f"entry ({rel}, {pos}) does not increase"
            prev_rel, prev_pos = rel, pos
        if prev_pos >= log_size:
            return f"position {prev_pos} lies past the log's {log_size} bytes"
        return None


class TimeIndex(_Index):
    ENTRY = struct.Struct(">qI")

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add ``(timestamp, offset)`` if the timestamp grew past the last entry's."""
        if self.entries:
            last_ts, last_rel = self.raw_entry(self.entries - 1)
            if timestamp <= last_ts:
                return
            if offset - self.base_offset < last_rel:
                raise ValueError(f"offset {offset} is below the last time index entry")
        if self.is_full and not skip_full_check:
            return
        if self.is_full:
            # The closing entry of a full index replaces the last one rather than overflow.
            self.entries -= 1
        rel = offset - self.base_offset
        if not 0 <= rel <= _U32_MAX:
            raise ValueError(f"offset {offset} does not fit segment {self.base_offset}")
        self._write_entry(timestamp, rel)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry with timestamp <= ``timestamp``;
        (-1, base) if none."""
        slot = self._floor_slot(timestamp, 0)
        if slot < 0:
            return -1, self.base_offset
        ts, rel = self.raw_entry(slot)
        return ts, self.base_offset + rel

    def last_entry(self) -> tuple[int, int]:
        if self.entries == 0:
            return -1, self.base_offset
        ts, rel = self.raw_entry(self.entries - 1)
        return ts, self.base_offset + rel

    def truncate_to(self, offset: int) -> None:
        """Forget entries for offsets >= ``offset`` (offsets are non-decreasing)."""
        rel = offset - self.base_offset
        n = self.entries
        while n > 0 and self.raw_entry(n - 1)[1] >= rel:
            n -= 1
        self.entries = n

    def check(self, max_rel_offset: int) -> str | None:
        if self._allocated % self.entry_size:
            return f"size {self._allocated} is not a multiple of {self.entry_size}"
        prev_ts, prev_rel = -(1 << 63), -1
        for ts, rel in self.all_entries():
            if ts <= prev_ts or rel < prev_rel:
                return f"entry ({ts}, {rel}) does not increase"
            prev_ts, prev_rel = ts, rel
        if prev_rel > max_rel_offset:
            return f"offset {prev_rel} lies past the segment's end"
        return None
