"""The watchdog of a local cluster: whatever ends ``cluster up``, nothing it started lingers.

``cluster up`` (``tools.cluster.LocalCluster``) stops its brokers and then ZooKeeper when
it is asked to. Killed with SIGKILL (or by the OOM killer, or crashing), it can do
nothing: its brokers notice that their parent is gone and stop themselves, but ZooKeeper
would run on forever. So the cluster starts this small process first::

    python -m tools.watchdog --cluster-dir DIR     (stdin: the read end of a pipe)

``cluster up`` keeps the pipe's only write end (pipes are not inherited by the brokers
or ZooKeeper: Python opens them close-on-exec) and writes one line per process it
starts, then ``done`` once it has stopped them all itself::

    zookeeper <pid> <start time>
    broker <pid> <start time>
    done

The kernel closes the write end when ``cluster up`` dies, however it dies, so the
watchdog reads end-of-file. Without ``done`` first, it cleans up in the order a clean
stop would have used: every announced broker still running gets SIGTERM (a graceful
shutdown, which needs ZooKeeper) and up to ``BROKER_GRACE_S`` to exit, then SIGKILL;
then ZooKeeper is stopped (``ZOOKEEPER_STOP_SIGNAL``, SIGKILL after ``ZOOKEEPER_GRACE_S``).

Why a pipe rather than ``prctl(PR_SET_PDEATHSIG)`` in each child: the death signal fires
when the *thread* that started the child ends, not the process (LocalCluster may run
on any thread); it would also kill ZooKeeper at the same instant as the brokers, while
their graceful shutdown still needs it; and setting it needs a ``preexec_fn``, which is
unsafe in a process with threads. End-of-file on a pipe needs none of that and cannot be
missed: it is there to read whenever the watchdog gets to it.

A pid is only signalled while it still names the process that was announced: the start
time in /proc/<pid>/stat must match (pids are reused). The watchdog runs in its own
session and ignores SIGINT and SIGTERM, so a signal meant for ``cluster up``'s process
group, or for a whole service, does not end it before it has anything to do; it exits on
its own after ``done`` or after cleaning up. It logs to DIR/watchdog.log.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("minikafka.watchdog")

#: how long orphaned brokers get for their graceful shutdown before SIGKILL
BROKER_GRACE_S = 60.0
#: ZooKeeper ignores SIGTERM and SIGINT when a local cluster runs it (so that a signal to
#: a whole service cannot stop it before the brokers); SIGHUP ends the JVM as SIGTERM does
ZOOKEEPER_STOP_SIGNAL = signal.SIGHUP
ZOOKEEPER_GRACE_S = 10.0
#: polling interval while waiting for processes that are not our children to exit
POLL_S = 0.1


def start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot, /proc/<pid>/stat field 22), or
    None if no such process runs. Zombies count as gone: they have finished."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may contain spaces or ")"
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


@dataclass(frozen=True)
class Watched:
    kind: str  # "broker" or "zookeeper"
    pid: int
    started: int

    def alive(self) -> bool:
        return start_time(self.pid) == self.started

    def signal(self, sig: int) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)


@dataclass
class Announcements:
    """What ``cluster up`` told us so far."""

    processes: list[Watched] = field(default_factory=list)
    done: bool = False

    def read(self, line: str) -> None:
        """Take one line of the protocol; a malformed one is logged and ignored."""
        words = line.split()
        if words == ["done"]:
            self.done = True
        elif len(words) == 3 and words[0] in ("broker", "zookeeper") and words[1].isdigit():
            if words[2].isdigit():
                self.processes.append(Watched(words[0], int(words[1]), int(words[2])))
        elif words:
            log.warning("ignoring %r", line)

    def of_kind(self, kind: str) -> list[Watched]:
        return [p for p in self.processes if p.kind == kind and p.alive()]


def announcement(kind: str, pid: int) -> str | None:
    """The line that announces process ``pid`` (None: it is already gone)."""
    started = start_time(pid)
    return None if started is None else f"{kind} {pid} {started}\n"


def wait_gone(processes: list[Watched], timeout_s: float) -> list[Watched]:
    """Wait until none of ``processes`` runs, or ``timeout_s``; those still running."""
    deadline = time.monotonic() + timeout_s
    while True:
        running = [p for p in processes if p.alive()]
        if not running or time.monotonic() >= deadline:
            return running
        time.sleep(POLL_S)


def stop(processes: list[Watched], sig: int, grace_s: float) -> None:
    """``sig`` (after SIGCONT: a paused process cannot act on it), then SIGKILL whatever
    is still running after ``grace_s``."""
    for p in processes:
        p.signal(signal.SIGCONT)
        p.signal(sig)
    for p in wait_gone(processes, grace_s):
        log.warning("%s %d did not stop in %.0fs: SIGKILL", p.kind, p.pid, grace_s)
        p.signal(signal.SIGKILL)


def clean_up(told: Announcements) -> None:
    brokers = told.of_kind("broker")
    if brokers:
        log.warning("cluster up is gone: stopping brokers %s", [p.pid for p in brokers])
        stop(brokers, signal.SIGTERM, BROKER_GRACE_S)
    zookeepers = told.of_kind("zookeeper")
    if zookeepers:
        log.warning("stopping ZooKeeper %s", [p.pid for p in zookeepers])
        stop(zookeepers, ZOOKEEPER_STOP_SIGNAL, ZOOKEEPER_GRACE_S)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.watchdog")
    parser.add_argument("--cluster-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    logging.basicConfig(
        filename=args.cluster_dir / "watchdog.log",
        level=logging.INFO,
        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s",
    )
    told = Announcements()
    for line in sys.stdin:  # until end-of-file: cluster up has closed its end, or died
        told.read(line)
    if told.done:
        return 0
    clean_up(told)
    log.info("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
