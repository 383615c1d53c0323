"""The cleaner's swap survives a kill at every step: each file rename of a pass (the new
segment's ``.cleaned`` -> ``.swap``, the old segments' -> ``.deleted``, ``.swap`` -> the
plain names) is made to kill the pass in turn, the process's descriptors are dropped
without any cleanup, and the log reopened as after a crash holds either the old
segments or the cleaned one, never a mix, and loses nothing a consumer should see.
The same with a real kill -9 of a child process at the steps that matter: before any
rename, between the renames, and after the swap."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from storage.cleaner import clean_log
from storage.clock import MockClock
from storage.config import LogConfig
from storage.log import Log
from storage.offset_map import OffsetMap
from tests.unit.storage.storage_helpers import TP, crash
from tests.unit.storage.test_storage_cleaner import consumer_view, read_log

CONFIG = LogConfig(
    segment_bytes=1 << 20, index_interval_bytes=100, cleanup_policy="compact",
    file_delete_delay_ms=0,
)  # fmt: skip


class Killed(BaseException):
    """A kill -9 at this point: nothing after it runs, no handler cleans up."""


def prepared(path: Path) -> None:
    """Three rolled segments of overwritten keys, and an active one."""
    lg = Log.open(str(path), TP, CONFIG, MockClock())
    for round_ in range(3):
        for key in range(5):
            record = SimpleRecord(b"k%d" % key, b"v%d-%d" % (key, round_), (), 1_000 + round_)
            lg.append(bytes(build_batch([record])), leader_epoch=0)
        lg.roll()
    lg.append(bytes(build_batch([SimpleRecord(b"k0", b"last", (), 2_000)])), leader_epoch=0)
    lg.flush()
    lg.close()


def run_pass(lg: Log, rename: Callable[[str, str], None]) -> None:
    real = os.rename
    os.rename = rename  # type: ignore[assignment]
    try:
        clean_log(
            lg,
            first_dirty=0,
            first_uncleanable=lg.active_segment.base_offset,
            offset_map=OffsetMap(1 << 20),
            now_ms=0,
        )
    finally:
        os.rename = real


def open_crashed(path: Path) -> Log:
    return Log.open(str(path), TP, CONFIG, MockClock(), clean_shutdown=False)


def renames_in_a_pass(tmp_path: Path) -> int:
    prepared(tmp_path / "count")
    calls = 0
    real = os.rename

    def counting(src: str, dst: str) -> None:
        nonlocal calls
        calls += 1
        real(src, dst)

    lg = open_crashed(tmp_path / "count")
    run_pass(lg, counting)
    lg.close()
    return calls


def killer(kill_at: int) -> Callable[[str, str], None]:
    """A rename that kills the process at its ``kill_at``-th call (from 0)."""
    calls = 0
    real = os.rename

    def rename(src: str, dst: str) -> None:
        nonlocal calls
        if calls == kill_at:
            raise Killed
        calls += 1
        real(src, dst)

    return rename


def test_a_kill_at_every_rename_of_the_swap_recovers_old_or_new(tmp_path: Path) -> None:
    prepared(tmp_path / "template")
    before = Log.open(str(tmp_path / "template"), TP, CONFIG, MockClock(), clean_shutdown=True)
    old_records, view = read_log(before), consumer_view(before)
    before.close()
    shutil.copytree(tmp_path / "template", tmp_path / "done")
    done = open_crashed(tmp_path / "done")
    run_pass(done, os.rename)
    new_records = read_log(done)
    done.close()
    assert len(new_records) < len(old_records)
    total = renames_in_a_pass(tmp_path)
    assert total >= 9  # 3 files to .swap, 3 x 3 to .deleted, 3 to the plain names
    outcomes = set()
    for kill_at in range(total + 1):
        path = tmp_path / f"kill-{kill_at}"
        shutil.copytree(tmp_path / "template", path)
        killing = killer(kill_at)
        lg = open_crashed(path)
        if kill_at < total:
            with pytest.raises(Killed):
                run_pass(lg, killing)
            crash(lg)  # kill -9: descriptors dropped, nothing flushed or renamed
        else:
            run_pass(lg, killing)
            lg.close()
        recovered = Log.open(str(path), TP, CONFIG, MockClock(), clean_shutdown=False)
        try:
            records = read_log(recovered)
            assert records in (old_records, new_records), f"killed at rename {kill_at}"
            assert consumer_view(recovered) == view
            assert not [n for n in os.listdir(path) if n.endswith((".cleaned", ".swap"))]
            outcomes.add("new" if records == new_records else "old")
        finally:
            recovered.close()
    assert outcomes == {"old", "new"}


def run_pass_and_kill_9(path: str, kill_at: int) -> None:
    """In a child process: a pass whose ``kill_at``-th rename (or, past the last one,
    the end of the pass) sends the process SIGKILL."""
    real = os.rename
    calls = 0

    def rename(src: str, dst: str) -> None:
        nonlocal calls
        if calls == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        calls += 1
        real(src, dst)

    run_pass(open_crashed(Path(path)), rename)
    os.kill(os.getpid(), signal.SIGKILL)


#: before any rename (.cleaned written), between (.swap in place, old segments live),
#: half-way through renaming the old segments, and after the whole swap
@pytest.mark.parametrize("kill_at", [0, 3, 8, 99])
def test_kill_9_during_the_swap_recovers_without_loss(tmp_path: Path, kill_at: int) -> None:
    prepared(tmp_path / "log")
    before = open_crashed(tmp_path / "log")
    old_records, view = read_log(before), consumer_view(before)
    before.close()
    code = (
        "from tests.unit.storage.test_storage_cleaner_swap import run_pass_and_kill_9; "
        f"run_pass_and_kill_9({str(tmp_path / 'log')!r}, {kill_at})"
    )
    root = Path(__file__).resolve().parents[3]  # where ``tests`` imports from
    child = subprocess.run([sys.executable, "-c", code], cwd=root, timeout=60, capture_output=True)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    recovered = open_crashed(tmp_path / "log")
    try:
        records = read_log(recovered)
        assert consumer_view(recovered) == view
        assert (records == old_records) == (kill_at < 3)  # .swap is the commit point
        assert not [n for n in os.listdir(tmp_path / "log") if n.endswith((".cleaned", ".swap"))]
    finally:
        recovered.close()
