"""The aborted transaction index: a segment's ``.txnindex``.

One entry per transaction that an ABORT marker in the segment completed, appended when
the marker is written (leader and follower alike), in the order of the markers' offsets.
Each entry is 34 bytes, big-endian, the layout Kafka writes (so Kafka's tools read ours)::

    version            int16   0
    producer_id        int64
    first_offset       int64   the transaction's first record in this partition
    last_offset        int64   the ABORT marker's offset
    last_stable_offset int64   the partition's LSO once this transaction completed

A read_committed fetch of ``[start, upper)`` must learn every aborted transaction that
has data in that range: an entry overlaps it when ``last_offset >= start`` and
``first_offset < upper``. The marker of such a transaction may lie in a later segment
than the data, so the search goes on segment after segment; it stops at the first
entry whose ``last_stable_offset >= upper``: when that transaction completed, every
transaction that had begun below ``upper`` had completed too, and their entries are
behind it (:meth:`TransactionIndex.collect` says whether it reached such an entry).

The file is created at the first entry (most segments never hold an aborted
transaction) and kept in memory (entries are few); truncation cuts the entries whose
marker is at or above the truncation offset. Not safe across threads except
:meth:`flush`, which only fsyncs.
"""

from __future__ import annotations

import errno
import os
import struct
from bisect import bisect_left
from itertools import pairwise
from typing import NamedTuple

from storage.errors import StorageError

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class AbortedTransaction(NamedTuple):
    """What a Fetch response lists per aborted transaction (its field names)."""

    producer_id: int
    first_offset: int


def encode_entry(txn: AbortedTxn) -> bytes:
    return ENTRY.pack(VERSION, *txn)


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """The entries of a ``.txnindex``; ValueError when the bytes are not one."""
    if len(data) % ENTRY_SIZE:
        raise ValueError(f"{len(data)} bytes are not a whole number of {ENTRY_SIZE}-byte entries")
    entries: list[AbortedTxn] = []
    for version, *fields in ENTRY.iter_unpack(data):
        if version != VERSION:
            raise ValueError(f"unknown aborted transaction entry version {version}")
        entries.append(AbortedTxn(*fields))
    return entries


class TransactionIndex:
    def __init__(self, path: str) -> None:
        self.path = path
        self._entries: list[AbortedTxn] | None = None  # loaded on first use
        self._lasts: list[int] = []  # each entry's last_offset, for bisection
        self._fd = -1
        self._dirty = False

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = self._load()
            self._lasts = [e.last_offset for e in self._entries]
        return self._entries

    def _load(self) -> list[AbortedTxn]:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"reading {self.path}: {exc}") from exc
        return decode_entries(data)

    def check(self) -> str | None:
        """Why the file cannot be trusted (recovery rebuilds it then), or None."""
        try:
            entries = self.entries
        except ValueError as exc:
            return str(exc)
        if any(b.last_offset < a.last_offset for a, b in pairwise(entries)):
            return "entries are out of order"
        return None

    def append(self, txn: AbortedTxn) -> None:
        entries = self.entries
        if entries and txn.last_offset < entries[-1].last_offset:
            raise StorageError(
                f"{self.path}: aborted transaction ending at {txn.last_offset} appended after "
                f"one ending at {entries[-1].last_offset}"
            )
        data = encode_entry(txn)
        try:
            if self._fd < 0:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if os.write(self._fd, data) != len(data):
                raise OSError("short write")
        except OSError as exc:
            raise StorageError(f"appending to {self.path}: {exc}") from exc
        entries.append(txn)
        self._lasts.append(txn.last_offset)
        self._dirty = True

    def collect(self, start: int, upper: int) -> tuple[list[AbortedTxn], bool]:
        """The entries overlapping ``[start, upper)``, and whether the search is complete
        (an entry with ``last_stable_offset >= upper`` was reached; see the module doc)."""
        entries = self.entries
        found: list[AbortedTxn] = []
        for i in range(bisect_left(self._lasts, start), len(entries)):
            txn = entries[i]
            if txn.first_offset < upper:
                found.append(txn)
            if txn.last_stable_offset >= upper:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or above ``offset``."""
        entries = self.entries
        keep = bisect_left(self._lasts, offset)
        if keep == len(entries):
            return
        del entries[keep:], self._lasts[keep:]
        self._rewrite()

    def reset(self) -> None:
        """Forget every entry (recovery rebuilds them from the log)."""
        self._entries, self._lasts = [], []
        self._rewrite()

    def _rewrite(self) -> None:
        self._close_fd()
        try:
            if not self.entries:
                if os.path.exists(self.path):
                    os.unlink(self.path)
                return
            with open(self.path, "r+b") as f:
                f.truncate(len(self.entries) * ENTRY_SIZE)
        except OSError as exc:
            raise StorageError(f"cutting {self.path}: {exc}") from exc

    def rename(self, path: str) -> None:
        if os.path.exists(self.path):
            os.rename(self.path, path)
        self.path = path

    def flush(self) -> None:
        fd = self._fd
        if self._dirty and fd >= 0:
            try:
                os.fsync(fd)
            except OSError as exc:
                if exc.errno != errno.EBADF:  # closed meanwhile by a truncation: rewritten
                    raise StorageError(f"flushing {self.path}: {exc}") from exc
            self._dirty = False

    def _close_fd(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def close(self) -> None:
        self._close_fd()

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"deleting {self.path}: {exc}") from exc
