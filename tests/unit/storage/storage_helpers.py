"""Helpers of the storage tests: a tiny RecordBatch v2 builder (uncompressed records
only, so these tests depend on nothing but the batch header module), log openers, and
the comparison of a log's lookups with those of indexes rebuilt from scratch."""

from __future__ import annotations

import os
import shutil
import struct

from protocol.records.batch import iter_batches
from protocol.records.crc import crc32c
from protocol.values import TopicPartition
from storage.clock import MockClock
from storage.config import LogConfig
from storage.log import Log

_HEADER = struct.Struct(">qiibIhiqqqhii")


def _varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def _record(offset_delta: int, ts_delta: int, value: bytes) -> bytes:
    body = (
        b"\x00"
        + _varint(ts_delta)
        + _varint(offset_delta)
        + _varint(-1)
        + _varint(len(value))
        + value
        + _varint(0)
    )
    return _varint(len(body)) + body


def make_batch(
    values: list[bytes] | int = 1,
    *,
    base_offset: int = 0,
    timestamp: int = 1_000,
    ts_step: int = 1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    leader_epoch: int = -1,
    attributes: int = 0,
) -> bytes:
    if isinstance(values, int):
        values = [b"v%d" % i for i in range(values)]
    records = b"".join(_record(i, i * ts_step, v) for i, v in enumerate(values))
    n = len(values)
    max_ts = timestamp + (n - 1) * ts_step
    length = 61 - 12 + len(records)
    head = _HEADER.pack(
        base_offset,
        length,
        leader_epoch,
        2,
        0,
        attributes,
        n - 1,
        timestamp,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        n,
    )
    buf = bytearray(head + records)
    struct.pack_into(">I", buf, 17, crc32c(memoryview(buf)[21:]))
    return bytes(buf)


# -- opening logs and comparing them with indexes rebuilt from scratch -------------------

TP = TopicPartition("t", 0)
#: Small segments and a dense index, so a few batches exercise rolls and index entries.
SMALL = LogConfig(segment_bytes=1500, index_interval_bytes=200, segment_index_bytes=4096)


def open_log(
    path: str, config: LogConfig = SMALL, clock: MockClock | None = None, **kwargs: object
) -> Log:
    return Log.open(path, TP, config, clock or MockClock(), **kwargs)  # type: ignore[arg-type]


def fill(lg: Log, batches: int, records: int = 3, start_ts: int = 1_000, **kw: object) -> None:
    for i in range(batches):
        lg.append(make_batch(records, timestamp=start_ts + 10 * i, **kw), leader_epoch=0)  # type: ignore[arg-type]


def all_batches(lg: Log) -> list[tuple[int, int, bytes]]:
    """(base offset, last offset, bytes) of every batch, read through the log."""
    out = []
    for seg in lg.segments:
        data = os.pread(seg.fd, seg.size, 0)
        for pos, h in iter_batches(data):
            out.append((h.base_offset, h.last_offset, bytes(data[pos : pos + h.size])))
    return out


def rebuilt_copy(src: str, dst: str, like: Log | None = None) -> Log:
    """A copy of the log directory with every index deleted, opened (indexes rebuilt),
    with the log start offset and config of ``like``."""
    shutil.copytree(src, dst)
    for name in os.listdir(dst):
        if name.endswith((".index", ".timeindex")):
            os.unlink(os.path.join(dst, name))
    if like is None:
        return open_log(dst, clean_shutdown=True)
    return open_log(dst, like.config, clean_shutdown=True, log_start_offset=like.log_start_offset)


def assert_lookups_agree(lg: Log, reference: Log, exact_time_index: bool = True) -> None:
    """Every offset and timestamp lookup of ``lg`` matches ``reference``'s, and the
    offset index entries are identical; so are the time index entries of inactive
    segments with ``exact_time_index`` (a clean close followed by more appends leaves
    an extra, harmless closing entry that a rebuild does not make)."""
    assert lg.log_end_offset == reference.log_end_offset
    assert [s.base_offset for s in lg.segments] == [s.base_offset for s in reference.segments]
    for a, b in zip(lg.segments, reference.segments):
        assert a.offset_index.all_entries() == b.offset_index.all_entries()
    # The active segment's closing time entry exists only after a clean close.
    for a, b in zip(lg.segments[:-1], reference.segments[:-1]):
        assert not exact_time_index or a.time_index.all_entries() == b.time_index.all_entries()
    for offset in range(lg.log_start_offset, lg.log_end_offset + 1):
        got = lg.read(offset, 1)
        want = reference.read(offset, 1)
        assert (got is None) == (want is None), offset
        if got is not None and want is not None:
            assert (got.position, got.length) == (want.position, want.length), offset
    timestamps = [h.max_timestamp for _, _, h in reference.iter_batch_headers(0)]
    lo = min(timestamps, default=0) - 2
    hi = max(timestamps, default=0) + 2
    for ts in range(lo, hi + 1):
        assert lg.fetch_offset_by_timestamp(ts) == reference.fetch_offset_by_timestamp(ts), ts


def crash(lg: Log) -> None:
    """Drop the log like a killed process would: no trim, no snapshot, no checkpoint."""
    for seg in lg.segments:
        for index in (seg.offset_index, seg.time_index):
            if index._map is not None:
                index._map.close()
            if index._fd >= 0:
                os.close(index._fd)
        os.close(seg.fd)
