"""The pure parts of a local cluster's lifecycle: the stop order and the watchdog's
protocol (tools.cluster, tools.watchdog)."""

from __future__ import annotations

import os
import subprocess
import sys

from tools.cluster import stop_order
from tools.watchdog import Announcements, Watched, announcement, start_time


def test_the_controller_stops_last_and_the_others_together() -> None:
    assert stop_order([0, 1, 2], 1) == [[0, 2], [1]]
    assert stop_order([0, 2], 1) == [[0, 2]]  # the controller is not running
    assert stop_order([1], 1) == [[1]]
    assert stop_order([0, 1, 2], None) == [[0, 1, 2]]  # unknown: all at once
    assert stop_order([], 0) == []


def test_start_time_names_a_process_and_not_a_reused_pid() -> None:
    mine = start_time(os.getpid())
    assert mine is not None and mine > 0
    assert Watched("broker", os.getpid(), mine).alive()
    assert not Watched("broker", os.getpid(), mine + 1).alive()  # same pid, other process


def test_a_finished_process_is_gone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    started = start_time(proc.pid)
    proc.wait(30)
    assert start_time(proc.pid) is None
    assert started is None or not Watched("broker", proc.pid, started).alive()


def test_announcements_are_read_line_by_line_and_bad_lines_ignored() -> None:
    told = Announcements()
    line = announcement("zookeeper", os.getpid())
    assert line is not None and line.startswith(f"zookeeper {os.getpid()} ")
    for text in (line, "broker 12 x\n", "nonsense\n", "broker 1 2 3\n", "\n"):
        told.read(text)
    assert [(p.kind, p.pid) for p in told.processes] == [("zookeeper", os.getpid())]
    assert told.of_kind("zookeeper") and not told.of_kind("broker")
    assert not told.done
    told.read("done\n")
    assert told.done
