"""Controller benchmark: partition-state writes to a real ZooKeeper, and failover time.

    .venv/bin/python tests/bench/bench_controller.py [--quick] [--partitions N]
        [--cycles N] [--hogs N] [--only-kill]

Prints, in one run against one local ZooKeeper (tickTime 500, loopback):

1. epoch-fenced partition-state writes (one multi-op per partition: check
   /controller_epoch + create or conditional set), all in flight at once as the controller
   issues them, beside the baseline of the same multi-ops one round trip at a time;
2. controller failover: the active controller's session is closed and the time until the
   other controller is active with every partition loaded and re-announced, and until a
   new topic's partitions are online under it;
3. controller kill -9 cycles on a 3-broker local cluster (``minikafka cluster up``'s
   machinery: an embedded ZooKeeper, broker processes, free ports) beside ``--hogs``
   CPU-bound processes: the time from the kill until both survivors' Metadata name a
   new controller, its p50 and p99 over ``--cycles`` (20 unless ``--quick``), set
   against the bound a failover should meet, zookeeper.session.timeout.ms + 2 s (the
   session must expire first; the election, the context load and UpdateMetadata get
   the 2 s). A cycle that sees no new controller within 60 s counts as failed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from controller.controller import ControllerConfig, KafkaController
from controller.states import PartitionState
from protocol.values import TopicPartition
from tests.fakes.controller import RecordingChannelManager
from tests.integration.controller_failover import CpuHogs, kill_controller, percentile, restore
from timer.clock import SystemClock
from tools.cluster import SESSION_TIMEOUT_MS, ClusterLayout, LocalCluster
from tools.zookeeper_server import ZooKeeperServer, free_port
from zk import codec, partition_states
from zk.controller_election import try_become_controller
from zk.facade import ZkFacade
from zk.model import BrokerInfo, EndPoint, LeaderAndIsr, TopicAssignment
from zk.session import ZkSession
from zk.store import ZkPartitionStateStore


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:10,.0f} partitions/s  ({seconds * 1000:8.1f} ms for {n})"


def bench_writes(connect: str, n: int) -> None:
    zk = ZkSession.connect(connect, 10.0)
    try:
        election = try_become_controller(zk, 1, 0)
        epoch, version = election.epoch, election.epoch_zk_version
        for name in ("pipelined", "sequential"):
            tps = [TopicPartition(f"bench-{name}", p) for p in range(n)]
            states = {tp: LeaderAndIsr(1, 0, (1, 2, 3)) for tp in tps}
            start = time.perf_counter()
            if name == "pipelined":
                partition_states.create_partition_states(zk, states, epoch, version)
            else:
                for tp, lai in states.items():
                    partition_states.create_partition_states(zk, {tp: lai}, epoch, version)
            created = time.perf_counter() - start
            updates = {tp: LeaderAndIsr(2, 1, (2, 3), 0) for tp in tps}
            start = time.perf_counter()
            if name == "pipelined":
                partition_states.update_partition_states(zk, updates, epoch, version)
            else:
                for tp, lai in updates.items():
                    partition_states.update_partition_states(zk, {tp: lai}, epoch, version)
            updated = time.perf_counter() - start
            print(f"  create  {name:10s} {rate(n, created)}")
            print(f"  update  {name:10s} {rate(n, updated)}")
    finally:
        zk.close()


async def bench_failover(connect: str, n: int) -> None:
    nodes = []
    for bid in (1, 2):
        zk = await ZkFacade.connect(connect, 10.0)
        ctl = KafkaController(
            zk,
            BrokerInfo(bid, (EndPoint("127.0.0.1", 9000 + bid),)),
            RecordingChannelManager(),
            SystemClock(),
            ControllerConfig(),
            store=ZkPartitionStateStore(zk),
            scheduler=None,
        )
        await ctl.start()
        nodes.append((ctl, zk))
    (a, a_zk), (b, b_zk) = nodes
    admin = await ZkFacade.connect(connect, 10.0)
    try:
        await wait(lambda: a.is_active or b.is_active)
        active, active_zk, other = (a, a_zk, b) if a.is_active else (b, b_zk, a)
        assignment: dict[int, tuple[int, ...]] = {p: (1, 2) if p % 2 else (2, 1) for p in range(n)}
        topic = TopicAssignment("failover", codec.new_topic_id(), assignment)
        start = time.perf_counter()
        await admin.create_topic(topic, {})
        await wait(lambda: len(active.ctx.partitions_in_states(PartitionState.ONLINE)) == n)
        print(f"  new topic online       {rate(n, time.perf_counter() - start)}")

        start = time.perf_counter()
        await active_zk.close()  # the session ends: /controller goes
        await wait(lambda: other.is_active and len(other.ctx.leadership) >= n)
        took = time.perf_counter() - start
        print(f"  failover, {n} partitions loaded: {took * 1000:8.1f} ms")
        start = time.perf_counter()
        more = TopicAssignment("after", codec.new_topic_id(), {p: (1, 2) for p in range(n)})
        await admin.create_topic(more, {})
        await wait(lambda: len(other.ctx.partitions_in_states(PartitionState.ONLINE)) == n)
        print(f"  new topic after it     {rate(n, time.perf_counter() - start)}")
    finally:
        for ctl, zk in nodes:
            await ctl.shutdown()
            await zk.close()
        await admin.close()


async def wait(predicate: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark condition not reached")
        await asyncio.sleep(0.005)


#: a cycle with no new controller in every survivor's Metadata by then has failed
CYCLE_LIMIT_S = 60.0


def bench_kill_cycles(directory: Path, cycles: int, hogs: int) -> int:
    """Kill -9 the controller ``cycles`` times; print each time and p50/p99. The number
    of failed cycles is returned."""
    ports = [free_port() for _ in range(10)]
    layout = ClusterLayout(
        directory=directory,
        client_ports=tuple(ports[0:3]),
        control_ports=tuple(ports[3:6]),
        metrics_ports=tuple(ports[6:9]),
        zookeeper_port=ports[9],
    )
    bound_s = SESSION_TIMEOUT_MS / 1000 + 2
    times: list[float] = []
    failed = 0
    cluster = LocalCluster(layout)
    cluster.start(timeout_s=120)
    try:
        with CpuHogs(hogs, limit_s=cycles * (CYCLE_LIMIT_S + 60)):
            for n in range(1, cycles + 1):
                outcome = kill_controller(cluster, CYCLE_LIMIT_S)
                if outcome.seconds is None:
                    failed += 1
                    print(
                        f"  cycle {n:2d}: killed {outcome.victim}, NO new controller "
                        f"within {CYCLE_LIMIT_S:.0f} s (survivors saw {outcome.seen})"
                    )
                else:
                    times.append(outcome.seconds)
                    named = sorted({c for c in outcome.seen.values() if c is not None})
                    print(
                        f"  cycle {n:2d}: killed {outcome.victim}, new controller "
                        f"{named} after {outcome.seconds:5.2f} s"
                    )
                sys.stdout.flush()
                restore(cluster, outcome.victim, 120)
    finally:
        cluster.stop(grace_s=30)
    if times:
        p50, p99 = percentile(times, 0.50), percentile(times, 0.99)
        print(
            f"  failover p50 {p50:5.2f} s  p99 {p99:5.2f} s  max {max(times):5.2f} s  "
            f"(bound: zookeeper.session.timeout.ms {SESSION_TIMEOUT_MS} ms + 2 s = "
            f"{bound_s:.1f} s; {sum(t > bound_s for t in times)} of {len(times)} over it)"
        )
    print(f"  {failed} of {cycles} cycles without a new controller within {CYCLE_LIMIT_S:.0f} s")
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer partitions")
    parser.add_argument("--partitions", type=int, default=None)
    parser.add_argument("--cycles", type=int, default=None, help="kill -9 cycles (20)")
    parser.add_argument("--hogs", type=int, default=2, help="CPU hog processes beside them")
    parser.add_argument("--only-kill", action="store_true", help="only the kill -9 cycles")
    args = parser.parse_args()
    n = args.partitions or (200 if args.quick else 2000)
    cycles = args.cycles or (5 if args.quick else 20)
    logging.basicConfig(level=logging.ERROR)  # kazoo's reconnection chatter is expected
    if args.only_kill:
        return _kill_section(cycles, args.hogs)
    with tempfile.TemporaryDirectory(prefix="bench-zk-") as tmp:
        server = ZooKeeperServer(Path(tmp), free_port())
        server.start()
        try:
            print(f"partition-state writes, {n} partitions (epoch-fenced multi-ops):")
            _chroot(server, "/w")
            bench_writes(server.connect_string + "/w", n)
            print(f"controller (2 brokers, RF 2, {n} partitions):")
            _chroot(server, "/f")
            asyncio.run(bench_failover(server.connect_string + "/f", n))
        finally:
            server.stop()
    return _kill_section(cycles, args.hogs)


def _kill_section(cycles: int, hogs: int) -> int:
    print(f"controller kill -9 on a 3-broker local cluster, {cycles} cycles, {hogs} CPU hogs:")
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        return 1 if bench_kill_cycles(Path(tmp), cycles, hogs) else 0


def _chroot(server: ZooKeeperServer, path: str) -> None:
    zk = ZkSession.connect(server.connect_string, 10.0)
    try:
        zk.kazoo.ensure_path(path)
    finally:
        zk.close()


if __name__ == "__main__":
    sys.exit(main())
