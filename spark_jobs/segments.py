"""Reading an offset range of one partition's segments, read-only, as Arrow batches.

Each ``.log`` holds v2 batches back to back (docs/architecture.md, "On disk"). A read of
``[start, end)`` begins in the segment holding ``start``, at the position its ``.index``
gives (floor entry: the batch at that position has last offset <= the target, so
scanning from it misses nothing), and goes on through the following segments until a
batch starts at or above ``end``.

The tail of a live segment may be torn (a batch still being written) and a broker that
crashed may have left garbage after the last whole batch: a batch cut short, one whose
length cannot be, or one whose CRC does not match ends the read of that segment, as
recovery would end the log there. Control batches (transaction markers) are skipped.
Files are opened read-only and never locked, truncated or rewritten. (storage.reader
walks a file batch by batch, two reads each, from its start; a Spark read starts at an
index position and reads large chunks, so it has its own loop over them.)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from protocol.records import (
    LOG_OVERHEAD,
    InvalidBatch,
    iter_batches,
    peek_offset_and_length,
)
from protocol.records.batch import check_crc32c
from spark_jobs.arrow_records import Batch, decode
from spark_jobs.committed import committed_batches
from spark_jobs.log_dirs import Replica
from storage.names import INDEX_SUFFIX, LOG_SUFFIX, offset_file_name

log = logging.getLogger(__name__)

#: Bytes of segment read, and batches decoded, at a time: large enough that numpy's work
#: per call dwarfs its overhead (about 8,000 records of 1 KiB), small enough that the
#: chunk's memory is reused from the allocator's free lists: a 32 MiB ``pread`` gets
#: fresh pages from the kernel each time and reads at a third of the speed, and Spark's
#: JVM side digests Arrow batches of a few thousand rows with less CPU than batches of
#: tens of thousands (tests/bench/bench_spark.py).
CHUNK_BYTES = 8 << 20
#: The .index entry: relative offset u32, position u32, big-endian.
_INDEX_ENTRY = np.dtype([("offset", ">u4"), ("position", ">u4")])


def start_position(partition_dir: str, base: int, offset: int) -> int:
    """Where to start scanning segment ``base`` for ``offset``: the floor entry of its
    .index, or 0. Only the increasing prefix of entries counts (a live broker's index
    file is preallocated, its unused tail zero-filled)."""
    path = os.path.join(partition_dir, offset_file_name(base, INDEX_SUFFIX))
    try:
        entries = np.fromfile(path, dtype=_INDEX_ENTRY)
    except (FileNotFoundError, ValueError):
        return 0
    positions = entries["position"].astype(np.int64)
    grows = np.flatnonzero(np.diff(positions) <= 0)
    usable = entries[: grows[0] + 1] if len(grows) else entries
    usable = usable[usable["position"] > 0]  # the first batch is never indexed
    slot = int(np.searchsorted(usable["offset"].astype(np.int64), offset - base, "right")) - 1
    return int(usable["position"][slot]) if slot >= 0 else 0


def batches_in(path: str, position: int, end: int, *, controls: bool = False) -> Iterator[Batch]:
    """Whole, valid data batches (and control batches with ``controls``) of the segment
    file ``path`` from ``position``, until one starts at or above offset ``end`` or the
    file's whole batches end."""
    size = CHUNK_BYTES
    with open(path, "rb") as f:
        while True:
            chunk = os.pread(f.fileno(), size, position)
            consumed = 0
            try:
                for pos, header in iter_batches(chunk):
                    if header.base_offset >= end:
                        return
                    check_crc32c(chunk, pos, header)
                    consumed = pos + header.size
                    if controls or not header.is_control:
                        yield Batch.at(chunk, pos, header)
            except InvalidBatch as exc:
                log.warning("%s: the log ends at position %d (%s)", path, position + consumed, exc)
                return
            if consumed:
                position += consumed
                size = CHUNK_BYTES
            elif len(chunk) == size:  # one batch larger than a chunk: read it whole
                size = peek_offset_and_length(chunk)[1] + LOG_OVERHEAD
            else:
                return  # the end of the file, or a torn batch after the last whole one


def read_range(
    replica: Replica, start: int, end: int, aborted: Sequence[tuple[int, int]] | None = None
) -> Iterator[pa.RecordBatch]:
    """The records of ``replica`` with offsets in ``[start, end)``, as Arrow batches of
    :data:`spark_jobs.arrow_records.RECORD_SCHEMA` in offset order: one per chunk read,
    so the decoder works on the chunk in place. With ``aborted`` (read_committed: the
    aborted transactions, :mod:`.committed`) their records are left out."""
    pending: list[Batch] = []
    for path, position in segment_reads(replica, start):
        found = batches_in(path, position, end, controls=aborted is not None)
        if aborted is not None:
            found = committed_batches(found, aborted)
        for batch in found:
            if batch.header.next_offset <= start:
                continue
            if pending and batch.buffer is not pending[-1].buffer:
                yield decode(pending, start, end)
                pending = []
            pending.append(batch)
    if pending:
        yield decode(pending, start, end)


def segment_reads(replica: Replica, start: int) -> list[tuple[str, int]]:
    """(segment file, position to start at) for the segments that may hold offsets at
    or above ``start``, in order."""
    bases = replica.segments
    first = max(0, int(np.searchsorted(np.asarray(bases), start, "right")) - 1)
    reads = []
    for i, base in enumerate(bases[first:]):
        path = os.path.join(replica.path, offset_file_name(base, LOG_SUFFIX))
        position = start_position(replica.path, base, start) if i == 0 else 0
        reads.append((path, position))
    return reads


def offset_for_timestamp(replica: Replica, timestamp: int) -> int | None:
    """The first offset at or after the log start, below the high watermark, whose
    record's timestamp is >= ``timestamp`` (ListOffsets' rule), or None if none is."""
    start, end = replica.log_start_offset, replica.high_watermark
    for path, position in segment_reads(replica, start):
        for batch in batches_in(path, position, end):
            if batch.header.max_timestamp < timestamp or batch.header.next_offset <= start:
                continue
            rows = decode([batch], start, end)
            times = rows.column("timestamp").cast(pa.int64()).to_numpy() // 1000
            hits = np.flatnonzero(times >= timestamp)
            if len(hits):
                return int(rows.column("offset")[int(hits[0])].as_py())
    return None


def largest_timestamp(path: str) -> int:
    """The largest record timestamp in the segment file ``path`` (-1 when it has no
    whole batch): the age retention.ms measures, read from the batch headers."""
    return max(
        (b.header.max_timestamp for b in batches_in(path, 0, 1 << 63, controls=True)),
        default=-1,
    )
