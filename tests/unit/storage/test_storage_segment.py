"""LogSegment: appends with sparse index entries, lookups, reads, truncation."""

from __future__ import annotations

import os

import pytest
from storage_helpers import make_batch

from protocol.records.batch import read_header
from storage.segment import LogSegment

Filled = tuple[LogSegment, list[tuple[int, int, int]]]


def segment(tmp: os.PathLike[str], base: int = 0, interval: int = 200) -> LogSegment:
    return LogSegment(
        str(tmp), base, index_interval_bytes=interval, max_index_size=4096, created_ms=0,
        create=True,
    )  # fmt: skip


def append(seg: LogSegment, base_offset: int, records: int, ts: int) -> bytes:
    data: bytes = make_batch(records, base_offset=base_offset, timestamp=ts)
    seg.append(data, [(0, read_header(data))])
    return data


@pytest.fixture
def filled(tmp_path: os.PathLike[str]) -> Filled:
    """30 batches of 3 records from offset 100; (base offset, position, max ts) each."""
    seg = segment(tmp_path, base=100)
    layout = []
    for i in range(30):
        pos = seg.size
        append(seg, 100 + 3 * i, 3, 5_000 + 10 * i)
        layout.append((100 + 3 * i, pos, 5_000 + 10 * i + 2))
    return seg, layout


def test_sparse_index_follows_the_interval_rule(filled: Filled) -> None:
    seg, layout = filled
    entries = seg.offset_index.all_entries()
    assert entries, "200-byte interval over 30 batches must index some"
    by_pos = {pos: base for base, pos, _ in layout}
    for rel, pos in entries:
        assert pos in by_pos  # every entry points at a batch start
        assert seg.base_offset + rel == by_pos[pos] + 2  # ... with that batch's last offset
    assert entries[0][1] > 0  # the first batch is never indexed
    assert len(entries) < len(layout)  # sparse


def test_translate_offset_at_every_offset(filled: Filled) -> None:
    seg, layout = filled
    for base, pos, _ in layout:
        for off in (base, base + 1, base + 2):
            found = seg.translate_offset(off)
            assert found is not None and found[0] == pos, off
            assert found[1].base_offset == base
    assert seg.translate_offset(50)[0] == 0  # type: ignore[index]  # below the base
    assert seg.translate_offset(190) is None  # past the end


def test_read_returns_a_file_region_not_bytes(filled: Filled) -> None:
    seg, layout = filled
    region = seg.read(110, 250)
    assert region is not None
    assert not isinstance(region, bytes | bytearray)
    assert region.fileno() == seg.fd and region.position == layout[3][1]
    assert len(region) == 250  # may end inside a batch, as Kafka's fetches do
    data = region.read()
    assert read_header(data).base_offset == 109


def test_read_min_one_message_returns_the_first_batch_whole(filled: Filled) -> None:
    seg, _ = filled
    region = seg.read(100, 1)
    assert region is not None
    assert len(region) == read_header(region.read()).size
    cut = seg.read(100, 1, min_one_message=False)
    assert cut is not None and len(cut) == 1


def test_read_stops_at_max_position(filled: Filled) -> None:
    seg, layout = filled
    region = seg.read(100, 10_000, max_position=layout[2][1])
    assert region is not None and len(region) == layout[2][1]


def test_find_offset_by_timestamp_at_boundaries(filled: Filled) -> None:
    seg, layout = filled
    for base, _, max_ts in layout:
        found = seg.find_offset_by_timestamp(max_ts, 0)
        assert found is not None and found[1].base_offset == base
        found = seg.find_offset_by_timestamp(max_ts - 2, 0)  # the batch's first timestamp
        assert found is not None and found[1].base_offset == base
    first = seg.find_offset_by_timestamp(0, 0)
    assert first is not None and first[1].base_offset == 100
    assert seg.find_offset_by_timestamp(layout[-1][2] + 1, 0) is None


def test_truncate_removes_the_batch_holding_the_offset(filled: Filled) -> None:
    seg, layout = filled
    removed = seg.truncate_to(131)  # inside the batch 130..132
    assert removed > 0
    assert seg.size == layout[10][1]
    assert seg.next_offset == 130
    assert all(seg.base_offset + rel < 131 for rel, _ in seg.offset_index.all_entries())
    assert seg.max_timestamp == layout[9][2]
    append(seg, 130, 3, 6_000)
    assert seg.translate_offset(131)[0] == layout[10][1]  # type: ignore[index]


def test_truncate_to_the_base_empties_the_segment(filled: Filled) -> None:
    seg, _ = filled
    seg.truncate_to(100)
    assert seg.size == 0 and seg.next_offset == 100
    assert seg.offset_index.entries == 0 and seg.time_index.entries == 0


def test_close_trims_and_reopen_knows_the_tail(tmp_path: os.PathLike[str]) -> None:
    seg = segment(tmp_path)
    for i in range(20):
        append(seg, 2 * i, 2, 100 + i)
    entries = seg.offset_index.all_entries()
    seg.close()
    assert os.path.getsize(os.path.join(tmp_path, f"{0:020d}.index")) == len(entries) * 8
    again = LogSegment(
        str(tmp_path), 0, index_interval_bytes=200, max_index_size=4096, created_ms=0
    )
    assert again.check_indexes() is None
    assert again.next_offset == 40
    assert again.max_timestamp == 120
    assert again.time_index.last_entry() == (120, 39)  # the closing time entry
    again.close()


def test_recover_rebuilds_identical_indexes(filled: Filled) -> None:
    seg, _ = filled
    before = (seg.offset_index.all_entries(), seg.time_index.all_entries())
    result = seg.recover()
    assert result.truncated_bytes == 0 and result.batches == 30 and result.next_offset == 190
    assert (seg.offset_index.all_entries(), seg.time_index.all_entries()) == before


@pytest.mark.parametrize("interval", [1, 100, 250, 10_000])
def test_translate_offset_with_dense_and_sparse_indexes(
    tmp_path: os.PathLike[str], interval: int
) -> None:
    """Every batch indexed (interval 1), some, or none: the same answers."""
    seg = segment(tmp_path, base=0, interval=interval)
    layout = []
    offset = 0
    for i in range(40):
        n = 1 + i % 4
        pos = seg.size
        append(seg, offset, n, 100 + i)
        layout.append((offset, offset + n - 1, pos))
        offset += n
    for first, last, pos in layout:
        for off in range(first, last + 1):
            found = seg.translate_offset(off)
            assert found is not None and found[0] == pos and found[1].base_offset == first, off
    assert seg.translate_offset(offset) is None


def test_the_latest_appended_batch_is_found_without_a_read(
    filled: Filled, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caught-up follower fetches from the batch just appended: its start is known."""
    seg, _ = filled
    pos = seg.size
    data = append(seg, 190, 4, 9_000)

    def forbidden(*args: object) -> bytes:
        raise AssertionError("the file was read")

    monkeypatch.setattr(os, "pread", forbidden)
    for offset in range(190, 194):
        found = seg.translate_offset(offset)
        assert found is not None and found[0] == pos
        assert found[1] == read_header(data)
    region = seg.read(190, 1 << 20)
    assert region is not None and (region.position, len(region)) == (pos, len(data))
    monkeypatch.undo()
    # an earlier batch is still found the usual way
    found = seg.translate_offset(188)
    assert found is not None and found[1].base_offset == 187


def test_a_truncation_forgets_the_latest_append(filled: Filled) -> None:
    """A truncation cuts the remembered batch away: lookups see the file as it is, and
    a batch appended at the same offset is the one found."""
    seg, layout = filled
    cut_base, cut_pos, _ = layout[-2]  # below the latest append
    seg.truncate_to(cut_base)
    assert seg.translate_offset(layout[-1][0]) is None
    assert seg.translate_offset(cut_base) is None
    replaced = append(seg, cut_base, 7, 9_000)  # another batch at the same offset
    found = seg.translate_offset(cut_base + 6)
    assert found is not None and found[0] == cut_pos and found[1] == read_header(replaced)
