"""The Log's lazily written leader-epoch checkpoint: changes are written by a background
job, before the recovery point moves, and rebuilt from the batches after a crash."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest
from storage_helpers import SMALL, crash, make_batch, open_log

from storage import checkpoint
from storage.checkpoint import LEADER_EPOCH_CHECKPOINT, read_epoch_checkpoint
from storage.errors import StorageError
from storage.log import Log


class HeldJobs:
    """A Log's ``background`` that keeps the jobs until a test runs them."""

    def __init__(self) -> None:
        self.jobs: list[Callable[[], None]] = []

    def __call__(self, fn: Callable[[], None]) -> object:
        self.jobs.append(fn)
        return None

    def run_all(self) -> None:
        jobs, self.jobs = self.jobs, []
        for fn in jobs:
            fn()


def epoch_file(lg: Log) -> list[tuple[int, int]]:
    return read_epoch_checkpoint(os.path.join(lg.directory, LEADER_EPOCH_CHECKPOINT))


def test_a_new_epoch_is_written_by_the_background_not_by_the_append(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    writers: list[threading.Thread] = []
    real_write = checkpoint.write_epoch_checkpoint

    def spy(path: str, entries: object, sync: bool = True) -> None:
        writers.append(threading.current_thread())
        real_write(path, entries, sync)  # type: ignore[arg-type]

    monkeypatch.setattr("storage.leader_epoch.write_epoch_checkpoint", spy)
    held = HeldJobs()
    lg = open_log(str(tmp_path), background=held)
    writers.clear()  # opening may write the (empty) file
    lg.append(make_batch(2), leader_epoch=3)
    assert lg.epoch_cache.entries == [(3, 0)]
    assert writers == [] and epoch_file(lg) == []
    runner = threading.Thread(target=held.run_all)
    runner.start()
    runner.join(timeout=30)
    assert writers == [runner]
    assert epoch_file(lg) == [(3, 0)]


def test_flush_writes_the_epochs_before_moving_the_recovery_point(
    tmp_path: os.PathLike[str],
) -> None:
    held = HeldJobs()
    lg = open_log(str(tmp_path), background=held)
    lg.append(make_batch(2), leader_epoch=1)
    lg.append(make_batch(2), leader_epoch=4)
    assert epoch_file(lg) == []
    lg.flush()
    assert lg.recovery_point == 4
    assert epoch_file(lg) == [(1, 0), (4, 2)]


def test_recovery_rebuilds_epochs_never_written_from_the_batches(
    tmp_path: os.PathLike[str],
) -> None:
    lg = open_log(str(tmp_path), background=HeldJobs())
    lg.append(make_batch(2), leader_epoch=1)
    lg.flush()  # epochs and data durable up to offset 2
    lg.append(make_batch(3), leader_epoch=2)
    lg.append(make_batch(1), leader_epoch=5)
    assert epoch_file(lg) == [(1, 0)]  # the process dies before the background ran
    crash(lg)
    again = open_log(str(tmp_path), recovery_point=2, clean_shutdown=False)
    assert again.epoch_cache.entries == [(1, 0), (2, 2), (5, 5)]
    assert epoch_file(again) == again.epoch_cache.entries
    assert again.end_offset_for_epoch(2) == (2, 5)


def test_recovery_drops_stale_entries_above_the_recovery_point(
    tmp_path: os.PathLike[str],
) -> None:
    """A truncation whose write was lost leaves entries the batches contradict."""
    lg = open_log(str(tmp_path), SMALL)
    lg.append(make_batch(2), leader_epoch=1)
    lg.append(make_batch(2), leader_epoch=2)
    lg.flush()
    crash(lg)
    checkpoint.write_epoch_checkpoint(
        os.path.join(str(tmp_path), LEADER_EPOCH_CHECKPOINT), [(1, 0), (7, 1), (9, 3)]
    )
    again = open_log(str(tmp_path), recovery_point=1, clean_shutdown=False)
    assert again.epoch_cache.entries == [(1, 0), (2, 2)]


def test_a_failed_epoch_write_takes_the_log_offline(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldJobs()
    lg = open_log(str(tmp_path), background=held)

    def broken(path: str, entries: object, sync: bool = True) -> None:
        raise StorageError(f"writing {path}: no space left on device")

    monkeypatch.setattr("storage.leader_epoch.write_epoch_checkpoint", broken)
    lg.append(make_batch(1), leader_epoch=2)
    held.run_all()  # logged, not raised: the append that caused it had succeeded
    assert lg.failed is not None and "no space" in lg.failed
    assert lg.epoch_cache.dirty
    with pytest.raises(StorageError):
        lg.append(make_batch(1), leader_epoch=2)


def test_recovery_leaves_a_checkpoint_that_agrees_with_the_batches_unwritten(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lg = open_log(str(tmp_path))
    lg.append(make_batch(2), leader_epoch=1)
    lg.append(make_batch(2), leader_epoch=3)
    crash(lg)
    writes: list[str] = []
    monkeypatch.setattr(
        "storage.leader_epoch.write_epoch_checkpoint", lambda path, entries: writes.append(path)
    )
    again = open_log(str(tmp_path), recovery_point=0, clean_shutdown=False)
    assert again.epoch_cache.entries == [(1, 0), (3, 2)]
    assert writes == []
