"""Leader-epoch cache: assignment, OffsetForLeaderEpoch answers, truncation, and the
lazily written file (changes in memory, written by flush)."""

from __future__ import annotations

import os
import threading

from storage.checkpoint import read_epoch_checkpoint
from storage.leader_epoch import UNDEFINED_EPOCH, LeaderEpochCache


def cache(tmp: os.PathLike[str], entries: list[tuple[int, int]]) -> LeaderEpochCache:
    c = LeaderEpochCache(os.path.join(tmp, "leader-epoch-checkpoint"))
    for e, o in entries:
        c.assign(e, o)
    return c


def test_assign_only_new_epochs_and_persist(tmp_path: os.PathLike[str]) -> None:
    c = cache(tmp_path, [(1, 0), (3, 10)])
    assert not c.assign(3, 20)  # same epoch
    assert not c.assign(2, 30)  # older epoch
    assert c.assign(4, 40)
    assert c.flush()
    assert read_epoch_checkpoint(c.path) == [(1, 0), (3, 10), (4, 40)]
    assert LeaderEpochCache.load(c.path).entries == c.entries


def test_changes_stay_in_memory_until_flush(tmp_path: os.PathLike[str]) -> None:
    c = cache(tmp_path, [(1, 0)])
    assert c.dirty and not os.path.exists(c.path)
    assert c.flush() and not c.dirty
    assert not c.flush()  # nothing changed since: no write
    c.assign(2, 5)
    assert read_epoch_checkpoint(c.path) == [(1, 0)]
    c.flush()
    assert read_epoch_checkpoint(c.path) == [(1, 0), (2, 5)]
    assert not LeaderEpochCache.load(c.path).dirty


def test_a_flush_in_another_thread_writes_the_newest_entries(
    tmp_path: os.PathLike[str],
) -> None:
    """Changes on one thread while another flushes: whatever order they interleave in,
    the file after a last flush holds the final entries, never an older copy."""
    c = cache(tmp_path, [])
    done = threading.Event()

    def flusher() -> None:
        while not done.is_set():
            c.flush()

    t = threading.Thread(target=flusher)
    t.start()
    try:
        for epoch in range(200):
            c.assign(epoch, epoch * 10)
            if epoch % 7 == 0:
                c.truncate_from_start(epoch * 10 - 5)
    finally:
        done.set()
        t.join(timeout=30)
    c.flush()
    assert not c.dirty
    assert read_epoch_checkpoint(c.path) == c.entries


def test_end_offset_for_epoch(tmp_path: os.PathLike[str]) -> None:
    c = cache(tmp_path, [(1, 0), (3, 10), (5, 30)])
    assert c.end_offset_for(5, 55) == (5, 55)  # latest: the log end
    assert c.end_offset_for(3, 55) == (3, 30)
    assert c.end_offset_for(4, 55) == (3, 30)  # unknown epoch: the one below it
    assert c.end_offset_for(1, 55) == (1, 10)
    assert c.end_offset_for(0, 55) == (0, 0)  # older than any: the first start
    assert c.end_offset_for(9, 55) == (UNDEFINED_EPOCH, -1)
    assert c.end_offset_for(-1, 55) == (UNDEFINED_EPOCH, -1)


def test_truncate_from_end_and_start(tmp_path: os.PathLike[str]) -> None:
    c = cache(tmp_path, [(1, 0), (3, 10), (5, 30)])
    c.truncate_from_end(30)
    assert c.entries == [(1, 0), (3, 10)]
    c.truncate_from_start(15)
    assert c.entries == [(3, 15)]
    c.flush()
    assert read_epoch_checkpoint(c.path) == [(3, 15)]
    assert c.epoch_for_offset(20) == 3 and c.epoch_for_offset(3) == UNDEFINED_EPOCH


def test_unreadable_checkpoint_loads_empty(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "leader-epoch-checkpoint")
    with open(path, "w") as f:
        f.write("0\n2\n1 0\n")
    assert LeaderEpochCache.load(path).entries == []
