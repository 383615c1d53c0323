"""CreateTopics the instant a fresh broker's port accepts: is it always answered?

    .venv/bin/python tests/bench/bench_admin_race.py [--starts 50] [--timeout 40]

Each start runs ``minikafka cluster up --brokers 1`` (embedded ZooKeeper, free ports, a
new directory), polls the client port until a TCP connect succeeds and at once creates a
topic with confluent-kafka's AdminClient (``operation_timeout`` 10 s, so the broker's
CreateTopics waits for the leader; ``request_timeout`` 30 s). It records how long the
answer took and what it was, then stops the cluster by pid (SIGTERM) and checks that it
exited 0.

A start counts as failed when the future does not resolve within ``--timeout`` seconds, or
resolves with an error other than a retriable one the client reported after retrying
(printed as is). The report lists every start's outcome and time, then the counts; the
script exits 1 if any start failed. The broker's server.log of a failed start is kept in
the printed directory.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools.cluster import port_in_use  # noqa: E402


@dataclass
class Outcome:
    start: int
    ok: bool
    seconds: float
    what: str


def _free_base(count: int) -> int:
    """A run of ``count`` free ports below the kernel's ephemeral range: polling a port
    in that range with connect() now and then connects the socket to itself (its own
    source port is the one asked for), which then holds the port the broker wants."""
    import random

    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(200):
        base = random.randrange(10_000, low - count)
        if not any(port_in_use(base + i) for i in range(count)):
            return base
    raise RuntimeError("no run of free ports found")


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def one_start(n: int, directory: Path, timeout_s: float) -> Outcome:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    base = _free_base(4)
    zk_port = base + 3
    cmd = [
        sys.executable, "-m", "tools.main", "cluster", "up", "--brokers", "1",
        "--dir", str(directory), "--base-port", str(base),
        "--control-base-port", str(base + 1), "--metrics-base-port", str(base + 2),
        "--zookeeper-port", str(zk_port), "--console-port", "0",
    ]  # fmt: skip
    out = open(directory.parent / f"{directory.name}.out", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        cmd,
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 120
        while not _accepts(base):
            if proc.poll() is not None or time.monotonic() > deadline:
                return Outcome(n, False, 0.0, f"cluster up did not open port (rc {proc.poll()})")
            time.sleep(0.001)  # the point of the bench: ask the instant the port accepts
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{base}", "log_level": 0})
        began = time.monotonic()
        futures = admin.create_topics(
            [NewTopic("race", 1, 1)], operation_timeout=10, request_timeout=30
        )
        try:
            futures["race"].result(timeout=timeout_s)
            what = "created"
            ok = True
        except Exception as exc:
            what = f"{type(exc).__name__}: {exc}"
            # an error the client gave back within the time is an answer, not a hang
            ok = time.monotonic() - began < timeout_s and "Timed out" not in str(exc)
        seconds = time.monotonic() - began
        del futures, admin  # destroyed now, before its broker goes away
        return Outcome(n, ok, seconds, what)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(30)
        out.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=40.0)
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="minikafka-admin-race-"))
    outcomes = []
    for n in range(args.starts):
        outcome = one_start(n, top / f"start-{n}", args.timeout)
        outcomes.append(outcome)
        print(
            f"start {n:3d}: {'ok  ' if outcome.ok else 'FAIL'} {outcome.seconds:6.2f}s "
            f"{outcome.what}",
            flush=True,
        )
        if outcome.ok:
            with contextlib.suppress(OSError):
                shutil.rmtree(top / f"start-{n}")
    failed = [o for o in outcomes if not o.ok]
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} starts answered; directory {top}")
    if not failed:
        shutil.rmtree(top, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
