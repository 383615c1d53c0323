"""A full disk: appends fail with StorageError (never SIGBUS), a partial write is cut
away, the log stays consistent and works again once space is freed.

Runs on a 1 MiB tmpfs mounted for the test; skipped (with the reason) where mounting is
not allowed."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest
from storage_helpers import all_batches, make_batch, open_log

from storage.config import LogConfig
from storage.errors import StorageError


@pytest.fixture
def tiny_disk(tmp_path: os.PathLike[str]) -> Iterator[str]:
    mount_point = os.path.join(tmp_path, "tmpfs")
    os.mkdir(mount_point)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mount_point],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", mount_point], capture_output=True, timeout=30, check=False)


@pytest.mark.parametrize(
    ("records", "value_size", "interval"),
    [
        pytest.param(4, 20_000, 4096, id="big-batches-partial-write"),
        pytest.param(1, 10, 1, id="small-batches-index-growth"),
    ],
)
def test_full_disk_is_a_storage_error_and_the_log_stays_consistent(
    tiny_disk: str, records: int, value_size: int, interval: int
) -> None:
    filler = os.path.join(tiny_disk, "filler")
    with open(filler, "wb") as f:
        f.write(b"\x00" * 200_000)
    config = LogConfig(segment_bytes=1 << 30, index_interval_bytes=interval)
    path = os.path.join(tiny_disk, "t-0")
    lg = open_log(path, config)
    batch = make_batch([b"x" * value_size] * records)
    appended = 0
    with pytest.raises(StorageError) as failure:
        for _ in range(100_000):
            lg.append(batch, leader_epoch=0)
            appended += 1
    assert "No space left" in str(failure.value)
    assert appended > 0
    seg = lg.active_segment
    assert os.path.getsize(seg.log_path) == seg.size  # the partial write was cut away
    assert lg.log_end_offset == appended * records
    assert lg.failed is None
    good = all_batches(lg)
    assert len(good) == appended
    # Space comes back: the log carries on at the next offset.
    os.unlink(filler)
    info = lg.append(batch, leader_epoch=0)
    assert info.first_offset == appended * records
    lg.close()
    reopened = open_log(path, config, clean_shutdown=False)
    assert all_batches(reopened)[:-1] == good
    assert reopened.log_end_offset == (appended + 1) * records
    reopened.close()


def test_index_growth_on_a_full_disk_fails_before_the_log_is_written(tiny_disk: str) -> None:
    config = LogConfig(segment_bytes=1 << 30, index_interval_bytes=1)
    path = os.path.join(tiny_disk, "t-0")
    lg = open_log(path, config)
    lg.append(make_batch(1), leader_epoch=0)  # the first batch needs no index entry
    # Fill the disk, then free one page: room for one index step, not for both.
    filler = os.path.join(tiny_disk, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\x00" * 4096)
    except OSError:
        pass
    os.ftruncate(fd, os.fstat(fd).st_size // 4096 * 4096 - 4096)
    os.close(fd)
    size = lg.active_segment.size
    with pytest.raises(StorageError, match="growing index"):
        lg.append(make_batch(1), leader_epoch=0)
    assert lg.active_segment.size == size == os.path.getsize(lg.active_segment.log_path)
    assert lg.log_end_offset == 1 and lg.failed is None
    os.unlink(filler)
    assert lg.append(make_batch(1), leader_epoch=0).first_offset == 1
    lg.close()
