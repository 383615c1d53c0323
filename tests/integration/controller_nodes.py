"""Controllers against a real ZooKeeper, several in one event loop (one per simulated
broker), each with its own ZooKeeper session and a recording channel manager in place of
the network: the ``cluster`` fixture that starts them, the ``admin`` client beside them,
and the helpers the controller's ZooKeeper tests share."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest

from controller.controller import ControllerConfig, KafkaController
from protocol.values import TopicPartition
from tests.fakes.controller import RecordingChannelManager
from timer.clock import SystemClock
from timer.scheduler import Scheduler
from zk.facade import ZkFacade
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderIsrAndControllerEpoch,
)
from zk.store import ZkPartitionStateStore

DEADLINE_S = 20.0


@dataclass
class Node:
    controller: KafkaController
    zk: ZkFacade
    channel: RecordingChannelManager


Cluster = Callable[..., Awaitable[Node]]


@pytest.fixture
async def cluster(zk_connect: str) -> AsyncIterator[Cluster]:
    nodes: list[Node] = []

    async def start(
        broker_id: int,
        port: int | None = None,
        connect: str | None = None,
        session_s: float = 4.0,
        config: ControllerConfig | None = None,
        scheduler: Scheduler | None = None,
        prepare: Callable[[ZkFacade], None] | None = None,
    ) -> Node:
        zk = await ZkFacade.connect(connect or zk_connect, session_s)
        if prepare is not None:
            prepare(zk)
        channel = RecordingChannelManager()
        info = BrokerInfo(broker_id, (EndPoint("127.0.0.1", port or 19000 + broker_id),))
        controller = KafkaController(
            zk,
            info,
            channel,
            SystemClock(),
            config or ControllerConfig(),
            store=ZkPartitionStateStore(zk),
            scheduler=scheduler,
        )
        await controller.start()
        node = Node(controller, zk, channel)
        nodes.append(node)
        return node

    yield start
    for node in nodes:
        try:
            await asyncio.wait_for(node.controller.shutdown(), 30)
        finally:
            await node.zk.close()


async def side_client(zk_connect: str) -> ZkFacade:
    return await ZkFacade.connect(zk_connect, 4.0)


@pytest.fixture
async def admin(zk_connect: str) -> AsyncIterator[ZkFacade]:
    """A ZooKeeper client of the test's own beside the brokers: what an admin tool sees
    and writes."""
    client = await side_client(zk_connect)
    yield client
    await client.close()


async def states(
    zk: ZkFacade, *tps: TopicPartition
) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
    return await zk.get_partition_states(list(tps))


def active(*nodes: Node) -> list[Node]:
    return [n for n in nodes if n.controller.is_active]
