"""The ZooKeeper launcher's readiness signs: a fresh start-up snapshot, then ``srvr``."""

from __future__ import annotations

import os
from pathlib import Path

from tools.zookeeper_server import serves_requests, snapshot_marks, wrote_snapshot


def test_no_snapshot_directory_has_no_marks(tmp_path: Path) -> None:
    assert snapshot_marks(tmp_path) == {}


def test_marks_name_snapshots_only(tmp_path: Path) -> None:
    version = tmp_path / "version-2"
    version.mkdir()
    (version / "snapshot.0").write_bytes(b"x")
    (version / "log.1").write_bytes(b"x")
    os.utime(version / "snapshot.0", ns=(5, 7))
    assert snapshot_marks(tmp_path) == {"snapshot.0": 7}


def test_a_new_or_rewritten_snapshot_counts_an_unchanged_one_does_not() -> None:
    before = {"snapshot.0": 100}
    assert not wrote_snapshot(before, {"snapshot.0": 100})
    assert not wrote_snapshot({}, {})
    assert wrote_snapshot(before, {"snapshot.0": 101})
    assert wrote_snapshot(before, {"snapshot.0": 100, "snapshot.5": 90})
    assert wrote_snapshot({}, {"snapshot.0": 1})


def test_srvr_reply_says_whether_requests_are_served() -> None:
    assert serves_requests(b"Zookeeper version: 3.9.5-abc, built on x\nMode: standalone\n")
    assert not serves_requests(b"This ZooKeeper instance is not currently serving requests\n")
    assert not serves_requests(b"")
