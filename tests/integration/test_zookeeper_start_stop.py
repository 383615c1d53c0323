"""The ZooKeeper launcher's start-up and stop, as a new user meets them.

* Start-up prints no Java stack trace: the readiness probe must not connect while the
  server has its port open but no database yet (a connection closed then makes ZooKeeper
  log a NullPointerException). The window is a race, so the server is started several
  times, on a fresh data directory and again on the one it left (where the start-up
  snapshot rewrites a file that exists already).
* Under ``nohup`` (SIGHUP ignored, and inherited so by children), a server started with
  ``ignore_stop_signals`` still stops promptly on ``stop()``'s SIGHUP, by the JVM's own
  shutdown rather than the SIGKILL that follows the grace period.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.zookeeper_server import ZooKeeperLaunchError, ZooKeeperServer, free_port

STARTS = 3


@pytest.fixture
def hup_ignored() -> Iterator[None]:
    """This process's SIGHUP ignored for the test, as ``nohup`` leaves it."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, previous)


def start_or_skip(server: ZooKeeperServer) -> None:
    try:
        server.start()
    except ZooKeeperLaunchError as exc:
        if "Java was not found" in str(exc) or "pyspark" in str(exc):
            pytest.skip(str(exc))
        raise


def test_start_up_logs_no_exception(tmp_path: Path) -> None:
    data_dir = tmp_path / "zk"
    for attempt in range(STARTS):
        # every other start on a fresh directory; the others restart on the last one's
        if attempt % 2 == 0:
            data_dir = tmp_path / f"zk{attempt}"
        server = ZooKeeperServer(data_dir=data_dir, port=free_port())
        start_or_skip(server)
        try:
            assert server.serves_requests()
        finally:
            server.stop()
        output = server.log_path.read_text()
        assert "Exception" not in output, (attempt, output)


def test_ignored_sighup_still_stops_zookeeper_promptly(tmp_path: Path, hup_ignored: None) -> None:
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    server = ZooKeeperServer(data_dir=tmp_path / "zk", port=free_port(), ignore_stop_signals=True)
    start_or_skip(server)
    proc = server.process
    assert proc is not None
    try:
        # the stop signals a whole service receives still do not reach it
        proc.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(1.0)
        assert server.serves_requests()
    finally:
        started = time.monotonic()
        server.stop(grace_s=10.0)
        elapsed = time.monotonic() - started
    assert elapsed < 5.0, elapsed
    # the JVM ends on SIGHUP through its shutdown hooks and exits 128 + the signal's
    # number; a SIGKILL after the grace period would show as -9
    assert proc.returncode == 128 + signal.SIGHUP, proc.returncode
