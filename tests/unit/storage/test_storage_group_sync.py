"""storage.group_sync and its users: many files made durable together, failures per path."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest
from storage_helpers import SMALL

from protocol.values import TopicPartition
from storage.checkpoint import PARTITION_METADATA, read_partition_metadata
from storage.clock import MockClock
from storage.config import LogManagerConfig
from storage.group_sync import sync_all
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
