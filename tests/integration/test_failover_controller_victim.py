"""Losing the controller together with a follower: three real brokers, a real ZooKeeper.

When the broker killed is also the controller, nobody sees its death as a broker change:
the controller that takes over starts from a cluster in which the dead broker is already
gone. It must still take the dead broker out of the ISRs it sat in (as on any broker's
death), or acks=all writes to the partitions it followed wait until their leaders drop it
on their own after ``replica.lag.time.max.ms``. That limit is set to a minute here, far
beyond the deadlines below, so that only the controller's work can pass this test; the
ZooKeeper session is short (4 s), so that the death is noticed soon.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from protocol import ErrorCode
from tests.integration.replication_chaos import ChaosCluster, HeldProduce, start_chaos
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(180)

SESSION_TIMEOUT_S = 4.0
LAG_TIME_MAX_MS = 60_000
OVERRIDES = (
    ("zookeeper.session.timeout.ms", str(int(SESSION_TIMEOUT_S * 1000))),
    ("replica.lag.time.max.ms", str(LAG_TIME_MAX_MS)),
    ("replica.fetch.wait.max.ms", "200"),
    ("replica.fetch.backoff.ms", "200"),
)
REPLICAS = 3
#: the session expires, a new controller is elected and writes: generous for a loaded
#: machine, and still well short of replica.lag.time.max.ms
FAILOVER_TIMEOUT_S = SESSION_TIMEOUT_S + 20


@pytest.fixture(scope="module")
def chaos(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ChaosCluster]:
    yield from start_chaos(zookeeper, tmp_path_factory.mktemp("controller-victim"), OVERRIDES)


def produce(chaos: ChaosCluster, broker: int, topic: str, partition: int) -> int | None:
    """One acks=all record through ``broker``: its offset, or None when the answer was an
    error (REQUEST_TIMED_OUT while the ISR still names a dead follower)."""
    held = HeldProduce(chaos.layout.client_ports[broker], topic, partition, [b"v"], acks=-1)
    error, offset = held.answer()
    return offset if error == ErrorCode.NONE else None


def test_a_killed_controller_leaves_the_isr_of_the_partitions_it_followed(
    chaos: ChaosCluster,
) -> None:
    topic, partitions = "controller-victim", 3
    chaos.create_topic(topic, partitions, REPLICAS, {"min.insync.replicas": "2"})
    chaos.wait_isr_full(topic, range(partitions), REPLICAS, 30)
    victim = wait_until(chaos.controller, 30, "a controller")
    followed = [p for p in range(partitions) if chaos.state(topic, p).leader != victim]
    assert followed, "the controller leads every partition: no follower to lose"
    partition = followed[0]
    before = chaos.state(topic, partition)
    assert produce(chaos, before.leader, topic, partition) == 0

    chaos.kill(victim)
    wait_until(
        lambda: victim not in chaos.state(topic, partition).isr,
        FAILOVER_TIMEOUT_S,
        f"the dead controller {victim} to leave the ISR of {topic}-{partition}",
    )
    after = chaos.state(topic, partition)
    assert after.leader == before.leader  # its leader lives on: only the ISR changed
    assert after.leader_epoch > before.leader_epoch
    assert sorted(after.isr) == sorted(b for b in before.isr if b != victim)
    # the leader learns the new ISR from the new controller: acks=all is answered again
    # (a write sent before that waits, and times out after 10 s, and is tried again)
    offset = wait_until(
        lambda: produce(chaos, before.leader, topic, partition),
        FAILOVER_TIMEOUT_S,
        f"an acks=all write to {topic}-{partition} to be acknowledged",
    )
    assert offset >= 1

    def without_victim(p: int) -> bool:
        state = chaos.state(topic, p)
        return victim not in state.isr and state.leader not in (victim, -1)

    # every partition has dropped the dead broker, those it led have a new leader
    for p in range(partitions):
        wait_until(
            lambda: without_victim(p),  # noqa: B023 - called at once
            FAILOVER_TIMEOUT_S,
            f"{topic}-{p} to be led and replicated without {victim}",
        )
