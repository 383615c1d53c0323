"""Record batches to Arrow columns, vectorized: the hot loop of every read.

Decoding records one by one in Python tops out near 115k records/s per core. Here the
only per-record Python work is walking the records' length prefixes (one varint each,
to find where each record starts); every field is then decoded for all records of many
batches at once with numpy, and keys and values become Arrow binary arrays without a
Python object per record.

The records sections (see :mod:`protocol.records.record`) of all batches lie in one
buffer: the segment chunk or fetch response they were read from, used in place, or for
compressed batches their decompressed sections laid end to end. Finding where each
record starts is sequential within a batch (each record is prefixed by its length), so
the batches are walked in lockstep: step i reads the i-th length prefix of every batch
with one numpy operation. A few batches of many
small records would take many steps for few records; they are walked record by record in
Python instead, whichever is cheaper. After a record's start ``s`` the fields follow in
order::

    attributes int8 | timestamp_delta varlong | offset_delta varint |
    key_length varint | key | value_length varint | value | header_count varint | headers

A varint is decoded for a whole column of positions at once, one numpy pass per byte
of the longest one (most fields fit one or two bytes). Keys and values are cut out of
the buffer with one Arrow ``take`` over a binary array whose offsets interleave (field
start, field end) pairs: element 2i is record i's field and element 2i+1 the bytes
between it and the next record's, so no byte is copied in Python.

Records with headers, and any batch whose fields do not fill its records exactly, go
through the exact decoder of :mod:`protocol.records` (which raises ``InvalidBatch`` for a
corrupt batch): headers are rare in analytics data, and the exact decoder is the
reference the fast path is tested against.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from protocol.records import (
    HEADER_SIZE,
    BatchHeader,
    Compression,
    TimestampType,
    decode_records,
    decompress,
)

Int64s = npt.NDArray[np.int64]

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
#: The per-record columns (topic and partition are constant per read and added by the
#: caller), in the order of Spark's Kafka source schema.
RECORD_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
        ("headers", HEADER_TYPE),
    ]
)
_VARINT_BYTES = 5
_VARLONG_BYTES = 10


class Batch(NamedTuple):
    """One data batch: its header, and where its records section (still compressed or
    not) lies: ``buffer[start:end]``. Batches read together usually share one buffer (a
    chunk of a segment, a fetch response), which the decoder then uses without a copy."""

    header: BatchHeader
    buffer: bytes
    start: int
    end: int

    @property
    def records(self) -> memoryview:
        return memoryview(self.buffer)[self.start : self.end]

    @classmethod
    def at(cls, buffer: bytes, pos: int, header: BatchHeader) -> Batch:
        """The batch whose header is at ``pos`` of ``buffer``."""
        return cls(header, buffer, pos + HEADER_SIZE, pos + header.size)


def decode(batches: Sequence[Batch], start: int, end: int) -> pa.RecordBatch:
    """The records of ``batches`` with offsets in ``[start, end)`` as one Arrow record
    batch of :data:`RECORD_SCHEMA`, in offset order. Control batches must already be
    left out (they hold transaction markers, not data)."""
    batches = [b for b in batches if b.header.records_count > 0]
    if not batches:
        return pa.RecordBatch.from_pylist([], schema=RECORD_SCHEMA)
    fast, exact = _decode_fast(batches)
    if exact:
        rows = pa.Table.from_batches([fast, _decode_exact(exact)]).sort_by("offset")
        fast = rows.combine_chunks().to_batches()[0]
    # rows are in offset order: the range is a slice (no copy), found by binary search
    first, stop = np.searchsorted(fast.column("offset").to_numpy(), [start, end])
    return fast.slice(first, stop - first)


def _sections(batches: list[Batch]) -> tuple[bytes, Int64s, Int64s]:
    """One buffer holding every batch's decompressed records section, and where each
    section starts and ends in it. Uncompressed batches that lie in order in one buffer
    (a segment chunk, a fetch response) are used in place; otherwise the sections are
    laid end to end in a new one."""
    shared = batches[0].buffer
    if all(b.buffer is shared and b.header.compression == Compression.NONE for b in batches):
        starts = np.array([b.start for b in batches], dtype=np.int64)
        ends = np.array([b.end for b in batches], dtype=np.int64)
        if (starts[1:] >= ends[:-1]).all():
            return shared, starts, ends
    sections = [
        b.records if b.header.compression == Compression.NONE
        else decompress(b.header.compression, b.records)
        for b in batches
    ]  # fmt: skip
    bounds = np.cumsum([0, *map(len, sections)], dtype=np.int64)
    return b"".join(sections), bounds[:-1], bounds[1:]


def _decode_fast(batches: list[Batch]) -> tuple[pa.RecordBatch, list[Batch]]:
    """The records of the batches whose records have no headers, decoded column-wise,
    and the other batches (headers, or fields that do not fill their records exactly),
    left to the exact decoder."""
    joined, section_starts, section_ends = _sections(batches)
    buf = np.frombuffer(joined, dtype=np.uint8)
    counts = np.array([b.header.records_count for b in batches], dtype=np.int64)
    walk = _walk_lockstep if counts.max() * _LOCKSTEP_STEP_COST < counts.sum() else _walk
    starts, ends, batch_ok = walk(buf, section_starts, section_ends, counts)
    ts_delta, p = _varints(buf, starts + 1, _VARLONG_BYTES)
    offset_delta, p = _varints(buf, p, _VARINT_BYTES)
    key_len, key_at = _varints(buf, p, _VARINT_BYTES)
    value_len, value_at = _varints(buf, key_at + np.maximum(key_len, 0), _VARINT_BYTES)
    header_count, p = _varints(buf, value_at + np.maximum(value_len, 0), _VARINT_BYTES)
    fits = (header_count == 0) & (p == ends) & (key_len >= -1) & (value_len >= -1)
    batch_ok &= np.logical_and.reduceat(fits, np.cumsum(counts) - counts)
    keep = np.repeat(batch_ok, counts)
    headers = [b.header for b in batches]

    def per_record(values: list[int]) -> Int64s:
        return np.repeat(np.array(values, np.int64), counts)[keep]

    log_append = per_record([h.is_log_append_time for h in headers]).astype(bool)
    timestamp_ms = np.where(
        log_append,
        per_record([h.max_timestamp for h in headers]),
        per_record([h.base_timestamp for h in headers]) + ts_delta[keep],
    )
    data = pa.py_buffer(joined)
    columns = [
        _binary(data, key_at[keep], key_len[keep]),
        _binary(data, value_at[keep], value_len[keep]),
        pa.array(per_record([h.base_offset for h in headers]) + offset_delta[keep]),
        pa.array(timestamp_ms * 1000).cast(RECORD_SCHEMA.field("timestamp").type),
        pa.array(log_append.astype(np.int32)),
        pa.nulls(int(keep.sum()), HEADER_TYPE),
    ]
    rows = pa.RecordBatch.from_arrays(columns, schema=RECORD_SCHEMA)
    return rows, [b for b, ok in zip(batches, batch_ok) if not ok]


#: A lockstep step costs about as much as walking this many records in Python.
_LOCKSTEP_STEP_COST = 16

Walk = tuple[Int64s, Int64s, npt.NDArray[np.bool_]]


def _walk_lockstep(
    buf: npt.NDArray[np.uint8], section_starts: Int64s, section_ends: Int64s, counts: Int64s
) -> Walk:
    """(body start, body end) of every record, in batch then record order, and whether
    each batch's length prefixes tile its section exactly. Step i reads the i-th prefix
    of every batch that has an i-th record."""
    pos = section_starts.copy()
    ok = np.ones(len(counts), dtype=bool)
    starts = np.zeros((len(counts), int(counts.max())), dtype=np.int64)
    lengths = np.zeros_like(starts)
    for i in range(starts.shape[1]):
        active = np.flatnonzero(counts > i)
        length, after = _varints(buf, pos[active], _VARINT_BYTES)
        starts[active, i] = after
        lengths[active, i] = np.maximum(length, 0)
        ok[active[length < 0]] = False
        pos[active] = np.minimum(after + np.maximum(length, 0), section_ends[active])
    ok &= pos == section_ends
    within = np.arange(starts.shape[1])[None, :] < counts[:, None]
    return starts[within], starts[within] + lengths[within], ok


def _walk(
    buf: npt.NDArray[np.uint8], section_starts: Int64s, section_ends: Int64s, counts: Int64s
) -> Walk:
    """What :func:`_walk_lockstep` returns, one record at a time (for few batches of many
    records)."""
    data = buf.data
    starts: list[int] = []
    ends: list[int] = []
    ok = np.ones(len(counts), dtype=bool)
    for b, count in enumerate(counts.tolist()):
        pos, stop = int(section_starts[b]), int(section_ends[b])
        for _ in range(count):
            raw, pos = _unsigned_varint(data, pos, stop)
            starts.append(pos)
            pos = min(pos + (raw >> 1), stop)  # zigzag of a length >= 0 is its double
            ends.append(pos)
            ok[b] &= raw >= 0 and raw & 1 == 0
        ok[b] &= pos == stop
    return np.array(starts, np.int64), np.array(ends, np.int64), ok


def _unsigned_varint(data: memoryview, pos: int, stop: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it; (-1, pos) when it runs
    past ``stop`` or past 5 bytes."""
    raw = 0
    for i in range(min(_VARINT_BYTES, stop - pos)):
        byte = data[pos + i]
        raw |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            return raw, pos + i + 1
    return -1, pos


def _varints(buf: npt.NDArray[np.uint8], pos: Int64s, width: int) -> tuple[Int64s, Int64s]:
    """Zigzag varints at every position of ``pos``: (values, positions after them). One
    numpy pass per byte of the longest varint, so fields that fit a byte or two cost one
    or two passes. A varint longer than ``width`` is given a position past the buffer,
    which the callers' checks refuse; reads past the buffer's end (only a corrupt record
    makes them) see its last byte again, and fail the same checks."""
    unsigned = np.zeros(len(pos), dtype=np.uint64)
    after = pos.copy()
    more = np.ones(len(pos), dtype=bool)
    for lane in range(width):
        byte = buf.take(pos + lane, mode="clip")
        unsigned |= np.where(more, (byte & 0x7F).astype(np.uint64) << np.uint64(7 * lane), 0)
        after += more
        more &= byte >= 0x80
        if not more.any():
            break
    after[more] = len(buf)
    values = (unsigned >> np.uint64(1)).astype(np.int64) ^ -(unsigned & np.uint64(1)).astype(
        np.int64
    )
    return values, after


def _binary(data: pa.Buffer, starts: Int64s, lengths: Int64s) -> pa.Array:
    """A binary array of ``data[starts[i]:starts[i]+lengths[i]]``, null where the length
    is -1. Starts must grow and fields must not overlap (true of records in order)."""
    valid = lengths >= 0
    ends = starts + np.where(valid, lengths, 0)
    bounds = np.empty(2 * len(starts) + 1, dtype=np.int32)
    bounds[0:-1:2] = starts
    bounds[1::2] = ends
    bounds[-1] = ends[-1] if len(ends) else 0
    interleaved = pa.Array.from_buffers(
        pa.binary(), 2 * len(starts), [None, pa.py_buffer(bounds), data]
    )
    fields = pc.take(interleaved, pa.array(np.arange(0, 2 * len(starts), 2, dtype=np.int32)))
    mask = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.binary(), len(starts), [mask, *fields.buffers()[1:]])


def _decode_exact(batches: list[Batch]) -> pa.RecordBatch:
    """Record by record with the protocol's decoder: the reference path."""
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    offsets: list[int] = []
    timestamps: list[int] = []
    types: list[int] = []
    headers: list[list[dict[str, object]] | None] = []
    for batch in batches:
        header = batch.header
        section = decompress(header.compression, batch.records)
        kind = TimestampType(int(header.is_log_append_time))
        for record in decode_records(section, header.records_count):
            keys.append(record.key)
            values.append(record.value)
            offsets.append(record.offset(header))
            timestamps.append(record.timestamp(header) * 1000)
            types.append(int(kind))
            headers.append(
                [{"key": k, "value": v} for k, v in record.headers] if record.headers else None
            )
    return pa.RecordBatch.from_arrays(
        [
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.array(offsets, pa.int64()),
            pa.array(timestamps, pa.int64()).cast(RECORD_SCHEMA.field("timestamp").type),
            pa.array(types, pa.int32()),
            pa.array(headers, HEADER_TYPE),
        ],
        schema=RECORD_SCHEMA,
    )
