"""Read-only access to partition directories, for tools and jobs outside the broker.

:class:`~storage.log.Log` owns a directory: opening it may rebuild indexes, remove
leftovers and truncate a torn tail. Readers that must not change anything -- the
``dump-log`` command, the Spark data sources reading a running broker's logs -- use
these functions instead. They read the .log files only (the indexes are caches), never
write, and stop quietly at the end of what is whole: a batch still being appended, or a
torn tail awaiting recovery, is not returned.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

from protocol.records.batch import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, read_header
from storage.errors import StorageError
from storage.names import LOG_SUFFIX, parse_offset_file_name


class FileBatch(NamedTuple):
    position: int
    header: BatchHeader
    data: bytes  # the whole batch


class Damage(NamedTuple):
    """Where a file stops holding whole batches, and why."""

    position: int
    reason: str


def segment_files(partition_dir: str) -> list[tuple[int, str]]:
    """(base offset, path) of each .log of a partition directory, in offset order."""
    try:
        names = os.listdir(partition_dir)
    except OSError as exc:
        raise StorageError(f"listing {partition_dir}: {exc}") from exc
    found = ((parse_offset_file_name(n, LOG_SUFFIX), n) for n in names)
    return sorted((base, os.path.join(partition_dir, n)) for base, n in found if base is not None)


def iter_file_batches(path: str) -> Iterator[FileBatch | Damage]:
    """Every whole batch of one .log file, then a :class:`Damage` if the file does not
    end on a batch boundary (structure only: the caller checks CRCs if it cares)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise StorageError(f"opening {path}: {exc}") from exc
    try:
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            head = os.pread(fd, HEADER_SIZE, pos)
            if len(head) < HEADER_SIZE:
                yield Damage(pos, f"{size - pos} trailing bytes are too few for a batch header")
                return
            length = int.from_bytes(head[8:12], "big", signed=True)
            if length < HEADER_SIZE - LOG_OVERHEAD or pos + length + LOG_OVERHEAD > size:
                yield Damage(
                    pos, f"batch length {length} is impossible with {size - pos} bytes left"
                )
                return
            if head[16] != 2:
                yield Damage(pos, f"magic {head[16]} is not 2")
                return
            data = os.pread(fd, length + LOG_OVERHEAD, pos)
            yield FileBatch(pos, read_header(data), data)
            pos += len(data)
    except OSError as exc:
        raise StorageError(f"reading {path}: {exc}") from exc
    finally:
        os.close(fd)


def iter_batches(partition_dir: str, start_offset: int = 0) -> Iterator[tuple[BatchHeader, bytes]]:
    """(header, bytes) of every whole batch holding offsets >= ``start_offset``, across
    the partition's segments; stops at the first damage."""
    files = segment_files(partition_dir)
    bases = [b for b, _ in files]
    first = 0
    for i, base in enumerate(bases):
        if base <= start_offset:
            first = i
    for _, path in files[first:]:
        for item in iter_file_batches(path):
            if isinstance(item, Damage):
                return
            if item.header.last_offset >= start_offset:
                yield item.header, item.data
