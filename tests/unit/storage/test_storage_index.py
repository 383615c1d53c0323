"""Offset and time indexes: entries, floor lookups, growth in small steps, cap, trim."""

from __future__ import annotations

import os

import pytest

from storage.errors import StorageError
from storage.index import OffsetIndex, TimeIndex


def test_offset_index_floor_lookup_at_every_boundary(tmp_path: os.PathLike[str]) -> None:
    idx = OffsetIndex(os.path.join(tmp_path, "0.index"), 100, 4096)
    for i in range(1, 11):
        idx.append(100 + 10 * i, 1000 * i)
    assert idx.lookup(50) == (100, 0)  # below the base
    assert idx.lookup(100) == (100, 0)  # the base, before the first entry
    assert idx.lookup(109) == (100, 0)
    assert idx.lookup(110) == (110, 1000)  # exactly the first entry
    assert idx.lookup(115) == (110, 1000)  # between entries
    assert idx.lookup(200) == (200, 10000)  # the last entry
    assert idx.lookup(10**9) == (200, 10000)  # past the end
    idx.close()


def test_offset_index_refuses_non_increasing_entries(tmp_path: os.PathLike[str]) -> None:
    idx = OffsetIndex(os.path.join(tmp_path, "0.index"), 0, 4096)
    idx.append(5, 100)
    with pytest.raises(ValueError):
        idx.append(5, 200)
    with pytest.raises(ValueError):
        idx.append(2**32 + 1, 300)
    idx.close()


def test_index_grows_in_small_steps_and_trims_on_close(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "0.index")
    idx = OffsetIndex(path, 0, 10 * 1024 * 1024)
    assert not os.path.exists(path) and not idx.made  # the first entry makes the file
    idx.append(1, 10)
    assert os.path.getsize(path) == 4096  # one small step, not the 10 MiB cap
    for i in range(2, 600):
        idx.append(i, 10 * i)
    assert 4096 < os.path.getsize(path) <= 16384
    idx.close()
    assert os.path.getsize(path) == 599 * 8
    reopened = OffsetIndex(path, 0, 4096)
    assert reopened.entries == 599
    assert reopened.lookup(300) == (300, 3000)
    reopened.close()


def test_an_index_without_entries_has_no_file_until_its_first(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "0.timeindex")
    idx = TimeIndex(path, 100, 4096)
    assert idx.lookup(5) == (-1, 100) and idx.all_entries() == [] and idx.check(10) is None
    idx.flush()
    idx.trim()
    idx.reset()
    renamed = os.path.join(tmp_path, "0.timeindex.deleted")
    idx.rename(renamed)
    assert os.listdir(tmp_path) == [] and idx.path == renamed
    idx.rename(path)
    idx.seal()
    idx.maybe_append(7, 101)
    assert idx.made and os.path.getsize(path) == 4096 // 12 * 12  # whole entries
    idx.close()
    assert os.path.getsize(path) == 12
    reopened, absent = TimeIndex(path, 100, 4096), TimeIndex(renamed, 100, 4096)
    assert reopened.made and reopened.lookup(8) == (7, 101)
    assert not absent.made and absent.entries == 0 and not os.path.exists(renamed)
    reopened.close()
    absent.close()
    assert not os.path.exists(renamed)


def test_a_stray_file_in_place_of_an_absent_index_is_emptied_by_the_first_entry(
    tmp_path: os.PathLike[str],
) -> None:
    path = os.path.join(tmp_path, "0.index")
    idx = OffsetIndex(path, 0, 4096)
    with open(path, "wb") as f:
        f.write(b"\x01" * 80)
    idx.append(5, 50)
    idx.close()
    assert OffsetIndex(path, 0, 4096).all_entries() == [(5, 50)]


def test_index_is_capped_at_its_max_size(tmp_path: os.PathLike[str]) -> None:
    idx = OffsetIndex(os.path.join(tmp_path, "0.index"), 0, 80)
    for i in range(1, 11):
        idx.append(i, i)
    assert idx.is_full
    with pytest.raises(StorageError):
        idx.append(11, 11)
    idx.close()


def test_offset_index_truncate_forgets_entries_at_and_above(tmp_path: os.PathLike[str]) -> None:
    idx = OffsetIndex(os.path.join(tmp_path, "0.index"), 0, 4096)
    for i in range(1, 6):
        idx.append(10 * i, 100 * i)
    idx.truncate_to(30)
    assert idx.all_entries() == [(10, 100), (20, 200)]
    idx.append(25, 250)
    assert idx.lookup(29) == (25, 250)
    idx.close()


def test_time_index_appends_only_growing_timestamps(tmp_path: os.PathLike[str]) -> None:
    idx = TimeIndex(os.path.join(tmp_path, "0.timeindex"), 0, 4096)
    idx.maybe_append(1000, 5)
    idx.maybe_append(1000, 9)  # not larger: ignored
    idx.maybe_append(900, 12)  # smaller: ignored
    idx.maybe_append(1500, 20)
    assert idx.all_entries() == [(1000, 5), (1500, 20)]
    assert idx.lookup(999) == (-1, 0)
    assert idx.lookup(1000) == (1000, 5)
    assert idx.lookup(1499) == (1000, 5)
    assert idx.lookup(9999) == (1500, 20)
    idx.truncate_to(20)
    assert idx.all_entries() == [(1000, 5)]
    idx.close()


def test_full_time_index_takes_only_the_closing_entry(tmp_path: os.PathLike[str]) -> None:
    idx = TimeIndex(os.path.join(tmp_path, "0.timeindex"), 0, 24)
    idx.maybe_append(1, 1)
    idx.maybe_append(2, 2)
    idx.maybe_append(3, 3)  # full: skipped
    assert idx.entries == 2
    idx.maybe_append(4, 4, skip_full_check=True)  # replaces the last entry
    assert idx.all_entries() == [(1, 1), (4, 4)]
    idx.close()


def test_check_reports_malformed_files(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "0.index")
    with open(path, "wb") as f:
        f.write(b"\x00\x00\x00\x05\x00\x00\x00\x10" + b"\x00\x00\x00\x03\x00\x00\x00\x20")
    idx = OffsetIndex(path, 0, 4096)
    assert idx.check(1000) is not None and "increase" in (idx.check(1000) or "")
    idx.close()
    with open(path, "wb") as f:
        f.write(b"\x00\x00\x00\x05\x00\x00\x00\x10\x00")
    idx = OffsetIndex(path, 0, 4096)
    assert "multiple" in (idx.check(1000) or "")
    idx.close()
