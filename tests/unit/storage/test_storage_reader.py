"""Read-only access to partition directories (tools, Spark jobs)."""

from __future__ import annotations

import os

from storage_helpers import all_batches, crash, make_batch, open_log

from storage.reader import Damage, iter_batches, iter_file_batches, segment_files


def snapshot_of(path: str) -> dict[str, tuple[int, int]]:
    return {n: (os.stat(os.path.join(path, n)).st_size, os.stat(os.path.join(path, n)).st_mtime_ns)
            for n in os.listdir(path)}  # fmt: skip


def test_reads_every_batch_across_segments_from_an_offset(tmp_path: os.PathLike[str]) -> None:
    path = str(tmp_path)
    lg = open_log(path)
    for _ in range(40):
        lg.append(make_batch(3), leader_epoch=0)
    expected = all_batches(lg)
    lg.close()
    assert [b for b, _ in segment_files(path)] == sorted(
        int(n[:20]) for n in os.listdir(path) if n.endswith(".log")
    )
    got = [(h.base_offset, h.last_offset, data) for h, data in iter_batches(path)]
    assert got == expected
    later = [h.base_offset for h, _ in iter_batches(path, start_offset=70)]
    assert later[0] == 69 and later[-1] == expected[-1][0]  # the batch holding 70 first


def test_never_changes_a_damaged_directory(tmp_path: os.PathLike[str]) -> None:
    path = str(tmp_path)
    lg = open_log(path)
    for _ in range(40):
        lg.append(make_batch(3), leader_epoch=0)
    expected = all_batches(lg)
    active = lg.active_segment.log_path
    crash(lg)
    with open(active, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x10\x00torn")
    with open(os.path.join(path, f"{999:020d}.index"), "wb") as f:
        f.write(b"orphan!!")
    before = snapshot_of(path)
    got = [(h.base_offset, h.last_offset, data) for h, data in iter_batches(path)]
    assert got == expected  # the torn tail is not returned
    assert snapshot_of(path) == before  # nothing removed, truncated or rebuilt
    damage = list(iter_file_batches(active))[-1]
    assert isinstance(damage, Damage) and "too few" in damage.reason
