"""The controller election against a real ZooKeeper: one winner, failover when the
controller's session expires, and an election whose ZooKeeper answers were lost finished
on retry (the nodes: tests.integration.controller_nodes)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from kazoo.exceptions import ConnectionLoss
from kazoo.protocol.states import KazooState

from protocol import ApiKey
from tests.integration.controller_nodes import Cluster, active, cluster
from tests.integration.zk_fixtures import expire_session
from tests.polling import until
from zk.facade import ZkFacade

__all__ = ["cluster"]  # a fixture, used by name


async def test_exactly_one_of_two_controllers_wins(cluster: Cluster) -> None:
    a, b = await cluster(1), await cluster(2)
    await until(lambda: len(active(a, b)) == 1, what="one active controller")
    winner = active(a, b)[0]
    loser = b if winner is a else a
    assert winner.controller.epoch == 1
    await until(
        lambda: loser.controller.active_controller_id == winner.controller.broker_id,
        what="the loser to learn the winner",
    )
    assert not loser.controller.is_active
    assert await a.zk.get_controller_epoch() == (1, 1)
    # the winner told both brokers about each other
    await until(lambda: {r.broker_id for r in winner.channel.sent} >= {1, 2}, what="UpdateMetadata")
    assert all(r.api_key == ApiKey.UPDATE_METADATA for r in winner.channel.sent)


async def test_failover_when_the_controllers_session_expires(
    cluster: Cluster,
    zk_connect: str,
) -> None:
    a = await cluster(1)
    await until(lambda: a.controller.is_active, what="broker 1 to be controller")
    b = await cluster(2)
    await until(lambda: b.controller.active_controller_id == 1, what="broker 2 to see controller 1")
    old_epoch_broker = a.controller.broker_epoch

    await asyncio.to_thread(expire_session, zk_connect, a.zk.kazoo)

    await until(lambda: b.controller.is_active, what="broker 2 to take over")
    assert b.controller.epoch == 2
    await until(lambda: not a.controller.is_active, what="broker 1 to resign")
    # broker 1 comes back under a new session: registered again, with a newer broker epoch
    await until(lambda: a.zk.kazoo.state == KazooState.CONNECTED, what="broker 1 to reconnect")
    await until(
        lambda: a.controller.broker_epoch > old_epoch_broker, what="broker 1 to register again"
    )
    await until(lambda: a.controller.active_controller_id == 2, what="broker 1 to follow broker 2")
    assert await b.zk.get_broker_ids() == [1, 2]
    await until(lambda: 1 in b.controller.ctx.live_brokers, what="the controller to see broker 1")


def lose_the_answer_once(method: str) -> Callable[[ZkFacade], None]:
    """Make the client's ``method`` lose its first answer: ZooKeeper applies the call,
    then the connection drops before the reply is read (kazoo raises ConnectionLoss), as
    happens when a loaded machine starves kazoo's thread past its read timeout."""

    def prepare(zk: ZkFacade) -> None:
        real = getattr(zk, method)
        calls = 0

        async def answer_lost(*args: object) -> object:
            nonlocal calls
            calls += 1
            result = await real(*args)
            if calls == 1:
                raise ConnectionLoss()
            return result

        setattr(zk, method, answer_lost)

    return prepare


@pytest.mark.parametrize(
    "interrupted",
    [
        "try_become_controller",  # the election's multi-op went through, its answer did not
        "get_broker_ids",  # the failover: before the context is loaded
        "get_partition_states",  # the failover: while the context is loaded
        "get_preferred_replica_election",  # the failover: after UpdateMetadata went out
    ],
)
async def test_an_election_interrupted_by_a_lost_connection_is_completed(
    cluster: Cluster, interrupted: str
) -> None:
    """The event that ran the election is retried after a transient ZooKeeper error; the
    retry must finish what the first attempt began, whoever holds /controller by then:
    a broker active as controller, and the brokers told so (UpdateMetadata naming it)."""
    a = await cluster(1, prepare=lose_the_answer_once(interrupted))
    await until(
        lambda: (
            a.controller.is_active
            and any(
                r.api_key == ApiKey.UPDATE_METADATA
                and r.body.controller_epoch == a.controller.epoch
                for r in a.channel.sent
            )
        ),
        what=f"broker 1 to finish its election after {interrupted} lost its answer",
    )
    assert await a.zk.get_controller_id() == 1
    # and the failover was whole: the context is loaded, the watches armed
    await cluster(2)
    await until(lambda: 2 in a.controller.ctx.live_brokers, what="the controller to see broker 2")
