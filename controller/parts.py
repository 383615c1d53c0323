"""ControllerParts: what every event-handling module of the controller works on.

KafkaController builds the ControllerContext, the two state machines, the event queue and
the channel to brokers once, and hands them to each handler module (election lifecycle,
broker changes, topic changes, preferred leaders, ISR changes, reassignment) as one
bundle; ``ControllerHandler`` is the base that lays the bundle out as the attributes the
handlers' bodies use (``self.ctx``, ``self.zk``, ``self.send`` ...). ``send`` is the
controller's: it sends a request batch with the response callbacks that turn each answer
into a controller event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from controller import events as ev
from controller.channel import ControllerChannelManager
from controller.context import ControllerContext
from controller.partition_state_machine import PartitionStateMachine
from controller.replica_state_machine import ReplicaStateMachine
from controller.request_batch import ControllerRequestBatch
from zk.facade import ZkFacade


@dataclass(frozen=True, slots=True)
class ControllerParts:
    ctx: ControllerContext
    zk: ZkFacade
    channel: ControllerChannelManager
    partition_sm: PartitionStateMachine
    replica_sm: ReplicaStateMachine
    events: ev.ControllerEventManager
    send: Callable[[ControllerRequestBatch], None]


class ControllerHandler:
    """The shared parts as attributes. Event-task bound, like the controller."""

    def __init__(self, parts: ControllerParts) -> None:
        self.ctx = parts.ctx
        self.zk = parts.zk
        self.channel = parts.channel
        self.partition_sm = parts.partition_sm
        self.replica_sm = parts.replica_sm
        self.events = parts.events
        self.send = parts.send
