"""Log directories read without changing them: the committed range only, deleted and
in-flight files skipped, a torn tail taken as the end, one replica per partition."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from known_topic import TOPIC, Row, write_known_topic

from protocol.values import READ_UNCOMMITTED, TopicPartition
from spark_jobs import log_dir_backend
from spark_jobs.log_dir_backend import LogDirBackend
from spark_jobs.log_dirs import Replica, choose_replicas
from spark_jobs.segments import read_range

P0 = TopicPartition(TOPIC, 0)


def read_all(replica: Replica) -> list[int]:
    batches = read_range(replica, replica.log_start_offset, replica.high_watermark)
    return [o for b in batches for o in b.column("offset").to_pylist()]


def committed_offsets(expected: list[Row], partition: int) -> list[int]:
    return [r["offset"] for r in expected if r["partition"] == partition]


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_reads_up_to_the_high_watermark_and_changes_nothing(tmp_path: Path) -> None:
    expected = write_known_topic(str(tmp_path))
    before = tree_digest(tmp_path)
    backend = LogDirBackend([str(tmp_path)], READ_UNCOMMITTED)
    assert backend.partitions() == [P0, TopicPartition(TOPIC, 1)]
    # 41 offsets committed; one is the control batch's, which holds no data row
    assert backend.bounds([P0])[P0] == (0, 41)
    assert read_all(backend.replicas[P0]) == committed_offsets(expected, 0)
    assert tree_digest(tmp_path) == before


def test_a_range_starting_mid_segment_uses_the_index_and_is_exact(tmp_path: Path) -> None:
    committed = committed_offsets(write_known_topic(str(tmp_path)), 0)
    replica = LogDirBackend([str(tmp_path)], READ_UNCOMMITTED).replicas[P0]
    assert len(replica.segments) > 2
    for start, end in [(0, 1), (3, 27), (26, 30), (29, 41), (34, 35), (38, 41)]:
        offsets = [o for b in read_range(replica, start, end) for o in b["offset"].to_pylist()]
        assert offsets == [o for o in committed if start <= o < end]


def test_deleted_swap_and_cleaned_files_and_delete_dirs_are_skipped(tmp_path: Path) -> None:
    expected = write_known_topic(str(tmp_path))
    part = tmp_path / f"{TOPIC}-0"
    first = part / "00000000000000000000.log"
    # a retention-deleted segment and compaction leftovers: not part of the log
    shutil.copy(first, part / "00000000000000000000.log.deleted")
    shutil.copy(first, part / "00000000000000000001.log.cleaned")
    shutil.copy(first, part / "00000000000000000002.log.swap")
    shutil.copytree(part, tmp_path / f"{TOPIC}-0.0123456789abcdef0123456789abcdef-delete")
    backend = LogDirBackend([str(tmp_path)], READ_UNCOMMITTED)
    assert backend.partitions() == [P0, TopicPartition(TOPIC, 1)]
    assert backend.replicas[P0].segments == (0, 25, 29)
    assert read_all(backend.replicas[P0]) == committed_offsets(expected, 0)


def test_a_torn_tail_ends_the_log(tmp_path: Path) -> None:
    write_known_topic(str(tmp_path))
    last = tmp_path / f"{TOPIC}-0" / "00000000000000000029.log"
    whole = last.read_bytes()
    with open(last, "ab") as f:
        f.write(whole[:40])  # half a batch header
    backend = LogDirBackend([str(tmp_path)], READ_UNCOMMITTED)
    replica = backend.replicas[P0]._replace(high_watermark=10**6)
    assert read_all(replica)[-1] == 43  # the uncommitted records are whole; the tear is not
    # a corrupt batch (bad CRC) ends the log as well
    damaged = bytearray(whole)
    damaged[-1] ^= 0xFF
    last.write_bytes(bytes(damaged))
    assert read_all(replica)[-1] < 41


def test_without_a_high_watermark_nothing_is_committed(tmp_path: Path) -> None:
    write_known_topic(str(tmp_path))
    os.remove(tmp_path / "replication-offset-checkpoint")
    backend = LogDirBackend([str(tmp_path)], READ_UNCOMMITTED)
    assert backend.bounds([P0])[P0] == (0, 0)


def test_each_partition_is_read_from_one_replica_the_most_committed() -> None:
    def replica(path: str, hw: int) -> Replica:
        return Replica(P0, path, (0,), 0, hw)

    chosen = choose_replicas([replica("b1", 5), replica("b2", 9), replica("b3", 9)])
    assert chosen == {P0: replica("b2", 9)}


def test_several_log_dirs_holding_the_same_partitions_read_each_offset_once(
    tmp_path: Path,
) -> None:
    dirs = [tmp_path / f"broker-{i}" for i in range(3)]
    dirs[0].mkdir()
    expected = write_known_topic(str(dirs[0]))
    for d in dirs[1:]:
        shutil.copytree(dirs[0], d)  # replicas holding the same data
    backend = LogDirBackend([str(d) for d in dirs], READ_UNCOMMITTED)
    assert backend.partitions() == [P0, TopicPartition(TOPIC, 1)]
    assert read_all(backend.replicas[P0]) == committed_offsets(expected, 0)


def test_a_large_partition_is_cut_at_segment_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_known_topic(str(tmp_path))
    backend = LogDirBackend([str(tmp_path)], READ_UNCOMMITTED)
    assert backend.split_points(P0) == []  # far below a task's worth of bytes
    monkeypatch.setattr(log_dir_backend, "SPLIT_BYTES", 1)
    assert backend.split_points(P0) == [25, 29]  # every segment its own task
