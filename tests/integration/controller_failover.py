"""Controller kill -9 cycles on a loaded machine, shared by the integration test and the bench.

A cycle, as a new user would try it on ``minikafka cluster up``: find the controller in
ZooKeeper, kill its process with SIGKILL, and ask each surviving broker for Metadata
until its answer names a live controller other than the victim. The time from the kill
to the last survivor naming one is the cycle's failover time. Then the victim is
started again and waited for until every broker's Metadata lists every broker, so the
next cycle starts from a whole cluster.

What bounds a failover: the victim's ZooKeeper session must expire before its
/controller znode goes (``zookeeper.session.timeout.ms``, rounded up to ZooKeeper's
tick), then a survivor wins the election, loads the cluster and sends UpdateMetadata to
every live broker. ``CpuHogs`` loads the machine meanwhile: busy-looping processes that
compete with the brokers and ZooKeeper for the cores, started and ended by pid.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

from client.connection import ConnectionConfig, request_once
from protocol.api import ApiKey
from protocol.messages import MetadataRequest
from tools.cluster import LocalCluster

#: a process that keeps one core busy until it is killed
_HOG = "while True: pass"


class CpuHogs:
    """``count`` busy-looping child processes for the duration of a ``with`` block; each
    is killed by its pid at the end, and after ``limit_s`` at the latest (their own alarm
    ends them, so a test killed from outside leaves none behind for long)."""

    def __init__(self, count: int, limit_s: float) -> None:
        self.count = count
        self.limit_s = limit_s
        self.processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> CpuHogs:
        code = f"import signal; signal.alarm({int(self.limit_s) + 1})\n{_HOG}"
        for _ in range(self.count):
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, "-c", code],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        for proc in self.processes:
            proc.wait(10)
        self.processes.clear()


def metadata_controller(port: int, timeout_s: float = 2.0) -> int | None:
    """The controller id in a broker's Metadata answer (None when it names none or the
    broker does not answer in time)."""
    config = ConnectionConfig("controller-failover", timeout_s, request_timeout_s=timeout_s)
    body = MetadataRequest(topics=[], allow_auto_topic_creation=False)
    try:
        response = asyncio.run(request_once("127.0.0.1", port, ApiKey.METADATA, 1, body, config))
    except Exception:  # not answering: not yet
        return None
    return None if response.controller_id < 0 else int(response.controller_id)


@dataclass(frozen=True)
class Failover:
    victim: int
    #: survivor index -> the controller its Metadata named at the end
    seen: dict[int, int | None]
    #: seconds from the kill until every survivor named a new controller (None: not
    #: within the bound)
    seconds: float | None


def kill_controller(cluster: LocalCluster, bound_s: float) -> Failover:
    """One kill -9 of the controller; poll the survivors' Metadata for up to ``bound_s``."""
    victim = _wait_controller(cluster, bound_s)
    survivors = [i for i in range(cluster.layout.brokers) if i != victim]
    cluster.kill_broker(victim)
    start = time.monotonic()
    seen: dict[int, int | None] = dict.fromkeys(survivors)
    while True:
        for i in survivors:
            if seen[i] is None or seen[i] == victim:
                seen[i] = metadata_controller(cluster.layout.client_ports[i])
        if all(c is not None and c != victim and c in survivors for c in seen.values()):
            return Failover(victim, seen, time.monotonic() - start)
        if time.monotonic() - start >= bound_s:
            return Failover(victim, seen, None)
        time.sleep(0.05)  # polling interval of a bounded wait


def restore(cluster: LocalCluster, broker: int, timeout_s: float) -> None:
    """Start ``broker`` again and wait until every broker's Metadata lists every broker."""
    cluster.start_broker(broker)
    deadline = time.monotonic() + timeout_s
    cluster.wait_registered([broker], timeout_s)
    cluster.wait_metadata_complete(max(1.0, deadline - time.monotonic()))


def _wait_controller(cluster: LocalCluster, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        controller = cluster.controller_id()
        if controller is not None:
            return controller
        if time.monotonic() >= deadline:
            raise AssertionError(f"no controller in ZooKeeper within {timeout_s}s")
        time.sleep(0.1)  # polling interval of a bounded wait


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (``fraction`` in [0, 1])."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))  # ceil without floats drifting
    return ordered[int(rank) - 1]
