"""storage.group_sync and its users: many files made durable together, failures per path."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest
from storage_helpers import SMALL, make_batch

from protocol.values import TopicPartition
from storage.checkpoint import PARTITION_METADATA, read_partition_metadata
from storage.clock import MockClock
from storage.config import LogManagerConfig
from storage.group_sync import SyncBatch, sync_all
from storage.log import Log
from storage.log_creation import create_log
from storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager

TOPIC_ID = "MFHpVGzMTK6BX4Dn5x4tmQ"


def test_sync_all_syncs_files_and_directories_and_names_the_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [tmp_path / f"f{i}" for i in range(10)]
    for f in files:
        f.write_bytes(b"x")
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        if os.path.samefile(f"/proc/self/fd/{fd}", files[3]):
            raise OSError(5, "input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    gone = str(tmp_path / "deleted-meanwhile")
    errors = sync_all([*map(str, files), gone], [str(tmp_path), str(tmp_path)])
    assert list(errors) == [str(files[3])]
    assert "input/output error" in str(errors[str(files[3])])
    # every file once, the directory once (listed twice), the missing file not at all
    assert len(synced) == len(files) + 1


def manager(d: Path) -> LogManager:
    lm = LogManager(LogManagerConfig(log_dirs=(str(d),), default=SMALL), MockClock())
    lm.load_logs()
    return lm


def test_get_or_create_logs_makes_every_log_with_its_topic_id(tmp_path: Path) -> None:
    lm = manager(tmp_path)
    existing = lm.get_or_create_log(TopicPartition("t", 0), TOPIC_ID)
    wanted = [(TopicPartition("t", p), TOPIC_ID) for p in range(6)]
    assert lm.get_or_create_logs(wanted) == {}
    assert lm.get_log(TopicPartition("t", 0)) is existing
    for tp, _ in wanted:
        lg = lm.get_log(tp)
        assert lg is not None and lg.failed is None
        assert read_partition_metadata(os.path.join(lg.directory, PARTITION_METADATA)) == TOPIC_ID


def test_a_log_whose_files_cannot_be_synced_is_refused_and_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = manager(tmp_path)
    bad = TopicPartition("t", 2)

    def sync(files: list[str], dirs: list[str]) -> dict[str, OSError]:
        return {f: OSError(5, "input/output error") for f in files if "t-2" in f}

    monkeypatch.setattr("storage.log_manager.sync_all", sync)
    failed = lm.get_or_create_logs([(TopicPartition("t", p), TOPIC_ID) for p in range(4)])
    assert list(failed) == [bad]
    lg = lm.get_log(bad)
    assert lg is not None and lg.failed is not None and "input/output" in lg.failed
    assert all(lm.get_log(TopicPartition("t", p)).failed is None for p in (0, 1, 3))  # type: ignore[union-attr]


def test_a_shutdown_whose_files_cannot_be_synced_leaves_no_clean_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = manager(tmp_path)
    lm.get_or_create_logs([(TopicPartition("t", p), TOPIC_ID) for p in range(3)])
    seen: list[str] = []

    def sync(files: Iterable[str], dirs: Iterable[str]) -> dict[str, OSError]:
        seen.extend(files)
        return {seen[0]: OSError(28, "no space left on device")}

    monkeypatch.setattr("storage.log_manager.sync_all", sync)
    lm.shutdown()
    assert len(seen) == 3  # one producer snapshot a log, synced together
    assert not os.path.exists(tmp_path / CLEAN_SHUTDOWN_FILE)


def test_a_clean_shutdown_syncs_the_snapshots_and_leaves_the_marker(tmp_path: Path) -> None:
    lm = manager(tmp_path)
    lm.get_or_create_logs([(TopicPartition("t", p), TOPIC_ID) for p in range(3)])
    lm.shutdown()
    assert os.path.exists(tmp_path / CLEAN_SHUTDOWN_FILE)
    again = manager(tmp_path)
    assert sorted(str(tp) for tp, _ in again.logs_items()) == ["t-0", "t-1", "t-2"]


def test_a_sync_batch_fails_every_partition_under_a_failed_path() -> None:
    batch: SyncBatch[str] = SyncBatch()
    assert not batch
    batch.add_file("a", "/d/a/f")
    batch.add_file("b", "/d/b/f")
    batch.add_directory("a", "/d")
    batch.add_directory("b", "/d")
    assert batch
    assert batch.paths() == (["/d/a/f", "/d/b/f"], ["/d/a", "/d/b", "/d"])
    error = OSError(5, "input/output error")
    assert batch.failures({"/d/b/f": error}) == {"b": ("/d/b/f", error)}
    assert batch.failures({"/d": error}) == {"a": ("/d", error), "b": ("/d", error)}
    assert batch.failures({}) == {}


def test_open_logs_leaves_the_new_logs_files_to_the_callers_sync(tmp_path: Path) -> None:
    lm = manager(tmp_path)
    existing = lm.get_or_create_log(TopicPartition("t", 0), TOPIC_ID)
    pending: SyncBatch[TopicPartition] = SyncBatch()
    wanted = [(TopicPartition("t", p), TOPIC_ID) for p in range(3)]
    assert lm.open_logs(wanted, pending) == {}
    files, dirs = pending.paths()
    new = [lm.get_log(TopicPartition("t", p)) for p in (1, 2)]
    assert all(lg is not None and lg.failed is None for lg in new)
    assert files == [os.path.join(lg.directory, PARTITION_METADATA) for lg in new if lg]
    assert dirs == [new[0].directory, str(tmp_path), new[1].directory]  # type: ignore[union-attr]
    assert lm.get_log(TopicPartition("t", 0)) is existing
    failed = lm.take_offline_unsynced(pending, {str(tmp_path): OSError(28, "no space")})
    assert sorted(failed) == [TopicPartition("t", 1), TopicPartition("t", 2)]
    assert all(lg is not None and lg.failed is not None for lg in new)
    assert existing.failed is None


def test_a_created_log_is_the_log_an_empty_directory_opens_to(tmp_path: Path) -> None:
    tp = TopicPartition("t", 0)
    directory = str(tmp_path / "t-0")
    made = create_log(
        directory, tp, SMALL, MockClock(), topic_id=TOPIC_ID, background=None, sync=True
    )
    assert made is not None
    assert sorted(os.listdir(directory)) == [f"{0:020d}.log", PARTITION_METADATA]
    assert (
        create_log(directory, tp, SMALL, MockClock(), topic_id=TOPIC_ID, background=None, sync=True)
        is None
    )  # it exists: Log.open's to open
    made.append(make_batch(2), leader_epoch=4)
    made.epoch_cache.assign(4, 0)
    made.flush()
    made.close()
    opened = Log.open(directory, tp, SMALL, MockClock(), clean_shutdown=True)
    assert (opened.topic_id, opened.log_end_offset, opened.log_start_offset) == (TOPIC_ID, 2, 0)
    assert opened.epoch_cache.entries == [(4, 0)]
    opened.close()
    # and a directory with no parent is left to Log.open (which makes the parent)
    orphan = str(tmp_path / "gone" / "t-0")
    assert (
        create_log(orphan, tp, SMALL, MockClock(), topic_id=None, background=None, sync=True)
        is None
    )
