"""Controller kill -9 on a loaded machine: every survivor names a new controller in time.

Three real brokers (tools.cluster.LocalCluster, as ``minikafka cluster up`` runs them)
beside CPU hogs that keep the cores busy. Each cycle kills the controller's process with
SIGKILL and asks both survivors for Metadata until each names a live controller other
than the victim (tests.integration.controller_failover), then starts the victim again.

The liveness bound, 30 s, is far above a normal failover (the session timeout, 6 s, and
a little) and far below the failure it guards against: a survivor that won the election
while its ZooKeeper connection dropped (a starved kazoo thread misses its read timeout)
stood as a controller that never finished its failover, so the brokers learned of no
new controller until its session ended. tests/bench/bench_controller.py runs more
cycles and reports the times.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.controller_failover import CpuHogs, kill_controller, restore
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(240)

CYCLES = 3
HOGS = 2
LIVENESS_BOUND_S = 30.0
RESTART_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("failover-load"), 3)


def test_a_new_controller_reaches_every_survivor_after_each_kill(cluster: TestCluster) -> None:
    times = []
    with CpuHogs(HOGS, limit_s=CYCLES * (LIVENESS_BOUND_S + RESTART_TIMEOUT_S)):
        for cycle in range(CYCLES):
            outcome = kill_controller(cluster.local, LIVENESS_BOUND_S)
            assert outcome.seconds is not None, (
                f"cycle {cycle}: after killing controller {outcome.victim}, the survivors' "
                f"Metadata named {outcome.seen} for {LIVENESS_BOUND_S:.0f} s"
            )
            times.append(outcome.seconds)
            restore(cluster.local, outcome.victim, RESTART_TIMEOUT_S)
    print(f"failover times: {', '.join(f'{t:.2f} s' for t in times)}")
