"""LogSegment's read ends: a read that reached the end of the file lets the next read
from that offset start without an index lookup or a header read, and no change that
rewrites or shortens the file (truncation, a failed append, recovery) lets a stale
position be used; a rolled, deleted or swapped-out segment keeps its file as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from storage_helpers import make_batch, open_log

from protocol.records.batch import read_header
from storage.errors import StorageError
from storage.file_region import FileRegion
from storage.index import OffsetIndex
from storage.segment import LogSegment


def segment(tmp: os.PathLike[str], interval: int = 200) -> LogSegment:
    return LogSegment(
        str(tmp), 0, index_interval_bytes=interval, max_index_size=4096, created_ms=0,
        create=True,
    )  # fmt: skip


def append(seg: LogSegment, base_offset: int, records: int) -> bytes:
    data: bytes = make_batch(records, base_offset=base_offset, timestamp=1_000 + base_offset)
    seg.append(data, [(0, read_header(data))])
    return data


def region_of(seg: LogSegment, offset: int) -> tuple[int, int]:
    """(position, length) a whole-tail read from ``offset`` must return: the batch that
    translate_offset finds (which never consults the read ends) to the end of the file."""
    found = seg.translate_offset(offset)
    assert found is not None
    return found[0], seg.size - found[0]


def read_tail(seg: LogSegment, offset: int) -> tuple[int, int]:
    region = seg.read(offset, 1 << 20)
    assert region is not None
    return region.position, len(region)


def forbid_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any index lookup or file read fails the test from now on."""

    def forbidden(*args: object) -> object:
        raise AssertionError("looked the offset up")

    monkeypatch.setattr(os, "pread", forbidden)
    monkeypatch.setattr(OffsetIndex, "lookup_bracket", forbidden)


def test_a_reader_that_keeps_up_reads_without_a_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two appends after a read (so the offset read next is not the latest append's)."""
    seg = segment(tmp_path)
    offset = 0
    for _ in range(20):
        append(seg, offset, 3)
        offset += 3
    assert read_tail(seg, 0) == (0, seg.size)  # ends at the file's end: remembered
    start = seg.size
    append(seg, offset, 2)
    append(seg, offset + 2, 5)
    forbid_lookups(monkeypatch)
    assert read_tail(seg, offset) == (start, seg.size - start)
    monkeypatch.undo()
    assert read_tail(seg, offset) == region_of(seg, offset)


def test_reads_from_read_ends_match_the_index_lookup(tmp_path: Path) -> None:
    """Several readers at different offsets, reads ending at the file's end or inside
    it (max_size, max_position, a consumer's high watermark), appends of one or more
    batches in between: each read returns what the index lookup and header scan give."""
    seg = segment(tmp_path, interval=150)
    next_offset = 0
    readers = [0, 0, 0]
    consumer = 0
    for step in range(60):
        batches = 1 + step % 3
        data = bytearray()
        parts = []
        for j in range(batches):
            one = make_batch(1 + (step + j) % 4, base_offset=next_offset)
            parts.append((len(data), read_header(one)))
            data += one
            next_offset = read_header(one).next_offset
        seg.append(bytes(data), parts)
        for r, offset in enumerate(readers):
            if step % (r + 1):
                continue  # readers fall behind at different paces
            want_pos, want_len = region_of(seg, offset)
            region = seg.read(offset, 1 << 20)
            assert region is not None and (region.position, len(region)) == (
                want_pos,
                want_len,
            ), (step, r, offset)
            readers[r] = next_offset
        # a read cut short by max_size or max_position neither breaks nor feeds the memory
        cut = seg.read(readers[2], 1, min_one_message=True)
        if cut is not None and len(cut):
            whole = read_header(cut.read())
            assert len(cut) == whole.size
        stop = seg.read(0, 1 << 20, max_position=seg.size // 2)
        assert stop is not None and stop.position == 0
        # a consumer reading up to a high watermark a few offsets behind the end
        high_watermark = next_offset - 3
        stop_at = seg.translate_offset(high_watermark)
        if consumer < high_watermark and stop_at is not None:
            start, _ = region_of(seg, consumer)
            upto = seg.read(consumer, 1 << 20, stop_at[0], True, high_watermark)
            assert upto is not None and (upto.position, len(upto)) == (start, stop_at[0] - start)
            consumer = high_watermark
    assert seg.read(next_offset, 1 << 20) is None  # a read end nothing was appended at yet


def test_a_consumer_read_ending_at_its_max_position_is_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read up to the batch of a given offset (a consumer's, up to the high watermark)
    lets the next read from that offset start without a lookup."""
    seg = segment(tmp_path)
    for i in range(12):
        append(seg, 2 * i, 2)
    found = seg.translate_offset(10)
    assert found is not None
    stop = found[0]
    region = seg.read(0, 1 << 20, max_position=stop, max_position_offset=10)
    assert region is not None and (region.position, len(region)) == (0, stop)
    append(seg, 24, 3)
    forbid_lookups(monkeypatch)
    assert read_tail(seg, 10) == (stop, seg.size - stop)
    monkeypatch.undo()
    assert read_tail(seg, 10) == region_of(seg, 10)


def test_the_first_batch_is_whole_when_max_size_cuts_a_read_end(tmp_path: Path) -> None:
    seg = segment(tmp_path)
    append(seg, 0, 3)
    read_tail(seg, 0)  # remembers offset 3
    big = append(seg, 3, 40)
    append(seg, 43, 2)
    region = seg.read(3, 10)
    assert isinstance(region, FileRegion) and len(region) == len(big)
    cut = seg.read(3, 10, min_one_message=False)
    assert cut is not None and len(cut) == 10


def test_a_truncation_forgets_the_read_ends(tmp_path: Path) -> None:
    """A read end cut away, and bigger batches appended at the same offsets: the old
    position now lies inside a batch, and is not used."""
    seg = segment(tmp_path)
    for i in range(10):
        append(seg, 2 * i, 2)
    read_tail(seg, 0)  # remembers offset 20 at the end
    append(seg, 20, 2)
    read_tail(seg, 20)  # remembers offset 22
    seg.truncate_to(14)
    append(seg, 14, 30)  # offsets 14..43 now: 20 and 22 lie inside it
    append(seg, 44, 1)
    for offset in (20, 22):
        assert read_tail(seg, offset) == region_of(seg, offset)


def test_a_failed_append_leaves_reads_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seg = segment(tmp_path)
    append(seg, 0, 4)
    read_tail(seg, 0)  # remembers offset 4
    real_write = os.write

    def failing(fd: int, data: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", failing)
    with pytest.raises(StorageError):
        append(seg, 4, 3)
    monkeypatch.setattr(os, "write", real_write)
    append(seg, 4, 7)
    append(seg, 11, 1)
    assert read_tail(seg, 4) == region_of(seg, 4)


def test_recovery_forgets_the_read_ends(tmp_path: Path) -> None:
    """Recovery cuts a corrupt tail holding a read end; a bigger batch appended there
    puts the stale position inside it."""
    seg = segment(tmp_path)
    for i in range(5):
        append(seg, 3 * i, 3)
    corrupt_at = seg.size
    append(seg, 15, 3)
    read_tail(seg, 0)  # remembers offset 18 at the end
    with open(seg.log_path, "r+b") as f:  # (the segment's descriptor only appends)
        f.seek(corrupt_at + 40)
        f.write(b"\xff")  # inside the last batch: its CRC fails
    result = seg.recover()
    assert result.truncated_bytes > 0 and seg.size == corrupt_at
    append(seg, 15, 30)
    append(seg, 45, 1)
    assert read_tail(seg, 18) == region_of(seg, 18)


def test_a_rolled_segment_hands_the_read_on_to_the_next(tmp_path: Path) -> None:
    """A read end at a segment's end whose next batch went to a new segment: the old
    segment holds nothing there, and the log reads it from the new one."""
    lg = open_log(str(tmp_path))
    for _ in range(4):
        lg.append(make_batch(2), leader_epoch=0)
    region = lg.read(0, 1 << 20)
    assert region is not None  # a read to the end: offset 8 remembered
    old = lg.local.active_segment
    lg.roll()
    lg.append(make_batch(3), leader_epoch=0)
    lg.append(make_batch(1), leader_epoch=0)
    assert old.read(8, 1 << 20) is None
    moved = lg.read(8, 1 << 20)
    new = lg.local.active_segment
    assert moved is not None and moved.fileno() == new.fd
    assert (moved.position, len(moved)) == region_of(new, 8)
    lg.close()


def test_the_cleaners_swap_reads_from_the_new_segment(tmp_path: Path) -> None:
    """A segment replaced by a smaller one (as compaction makes): a read at an offset a
    read of the old segment remembered uses the new segment's positions."""
    lg = open_log(str(tmp_path))
    for _ in range(6):
        lg.append(make_batch(2), leader_epoch=0)
    assert lg.read(0, 1 << 20) is not None  # remembers offset 12
    for _ in range(3):
        lg.append(make_batch(2), leader_epoch=0)
    assert lg.read(12, 1 << 20) is not None  # remembers offset 18
    lg.roll()
    lg.append(make_batch(1), leader_epoch=0)
    old = lg.local.segments[0]
    cleaned = lg.local.new_segment(0, create=True, file_suffix=".swap")
    for pos, header in old.iter_headers():
        if header.base_offset % 4 == 0 or header.base_offset >= 12:  # some batches go
            data = os.pread(old.fd, header.size, pos)
            cleaned.append(data, [(0, header)])
    cleaned.flush()
    assert lg.local.replace_segments([old], cleaned)
    for offset in (12, 14, 16):
        region = lg.read(offset, 1 << 20, max_offset=18)
        found = cleaned.translate_offset(offset)
        assert region is not None and found is not None
        assert region.fileno() == cleaned.fd and region.position == found[0]
    lg.close()
