"""The one stand-in for the KafkaController in the broker's handler tests.

Handlers reach the controller through the broker context and use only its
broker-facing API: ``is_active``, ``broker_epoch``, ``controlled_shutdown``,
``elect_leaders``. ``ControllerDouble`` is a real KafkaController, built complete on
in-memory parts (a recording channel, an in-memory partition-state store, no ZooKeeper:
it is never started), whose answers to those calls the test sets, and which records what
it was asked. ``controller_double`` is the factory the tests call.
"""

from __future__ import annotations

import asyncio

from controller.controller import ControlledShutdownResult, ControllerConfig, KafkaController
from controller.elect_leaders import ElectionOutcome, ElectionType
from protocol import ErrorCode
from protocol.values import TopicPartition
from tests.fakes.controller import InMemoryPartitionStateStore, RecordingChannelManager
from tests.fakes.zk import FakeZk
from timer.clock import MockClock
from zk.model import BrokerInfo, EndPoint


class ControllerDouble(KafkaController):
    def __init__(
        self,
        active: bool,
        broker_epoch: int,
        elections: dict[TopicPartition, ElectionOutcome] | None,
        shutdown: ControlledShutdownResult,
    ) -> None:
        super().__init__(
            FakeZk(),  # never called: a double is never started
            BrokerInfo(1, (EndPoint("127.0.0.1", 9092),)),
            RecordingChannelManager(),
            MockClock(),
            ControllerConfig(),
            store=InMemoryPartitionStateStore(),
            scheduler=None,
        )
        self.active = active
        self.registered_epoch = broker_epoch
        #: ElectLeaders' answer (None: not the controller)
        self.elections = elections
        #: ControlledShutdown's answer
        self.shutdown_result = shutdown
        #: ElectLeaders never answers (the handler's timeout is under test)
        self.hang = False
        self.elections_asked: list[tuple[list[TopicPartition] | None, ElectionType]] = []
        self.shutdowns_asked: list[tuple[int, int]] = []

    @property
    def is_active(self) -> bool:
        return self.active

    @property
    def broker_epoch(self) -> int:
        return self.registered_epoch

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> ControlledShutdownResult:
        self.shutdowns_asked.append((broker_id, broker_epoch))
        return self.shutdown_result

    async def elect_leaders(
        self, partitions: list[TopicPartition] | None, election_type: ElectionType
    ) -> dict[TopicPartition, ElectionOutcome] | None:
        self.elections_asked.append((partitions, election_type))
        if self.hang:
            await asyncio.Event().wait()
        return self.elections


def controller_double(
    active: bool = True,
    *,
    broker_epoch: int = 5,
    elections: dict[TopicPartition, ElectionOutcome] | None = None,
    shutdown: ControlledShutdownResult | None = None,
) -> ControllerDouble:
    """A ControllerDouble: active or not, registered with ``broker_epoch``, answering
    ElectLeaders with ``elections`` and ControlledShutdown with ``shutdown`` (NONE, no
    partitions left, unless given)."""
    return ControllerDouble(
        active,
        broker_epoch,
        elections,
        shutdown if shutdown is not None else ControlledShutdownResult(ErrorCode.NONE),
    )
