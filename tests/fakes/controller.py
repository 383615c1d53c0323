"""Test doubles of the controller's two side-effect interfaces.

- ``RecordingChannelManager`` (a ``controller.channel.ControllerChannelManager``): remembers
  brokers and requests and sends nothing; a test answers a request with
  ``SentRequest.respond``.
- ``InMemoryPartitionStateStore`` (a ``controller.store.PartitionStateStore``): partition
  states in a dict, with ZooKeeper's versioning and epoch fencing rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.channel import ResponseCallback
from protocol.values import TopicPartition
from zk.errors import ControllerMovedError, StateConflictError
from zk.model import BrokerInfo, LeaderAndIsr, LeaderIsrAndControllerEpoch, WriteResults


@dataclass
class SentRequest:
    broker_id: int
    api_key: int
    api_version: int
    body: Any
    callback: ResponseCallback | None = field(default=None, repr=False)
    answered: bool = False

    def respond(self, body: Any | None) -> None:
        """Play the broker's answer (or, with None, its removal) to the request's callback."""
        if self.answered:
            raise AssertionError(f"request {self.api_key} to {self.broker_id} answered twice")
        self.answered = True
        if self.callback is not None:
            self.callback(body)


@dataclass
class RecordingChannelManager:
    """A fake channel manager: remembers brokers and requests, sends nothing. Tests answer
    a request with ``SentRequest.respond``; removing a broker abandons its unanswered
    requests as the real one does (callbacks get None)."""

    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    sent: list[SentRequest] = field(default_factory=list)
    #: every request ever recorded (``take`` does not remove from it)
    history: list[SentRequest] = field(default_factory=list)
    closed: bool = False

    def add_broker(self, broker: BrokerInfo) -> None:
        self.brokers[broker.id] = broker

    def remove_broker(self, broker_id: int) -> None:
        if self.brokers.pop(broker_id, None) is None:
            return
        for request in self.history:
            if request.broker_id == broker_id and not request.answered:
                request.respond(None)

    def send(
        self,
        broker_id: int,
        api_key: int,
        api_version: int,
        body: Any,
        callback: ResponseCallback | None = None,
    ) -> None:
        if broker_id in self.brokers:
            request = SentRequest(broker_id, api_key, api_version, body, callback)
            self.sent.append(request)
            self.history.append(request)

    async def shutdown(self) -> None:
        self.closed = True

    def take(self, api_key: int | None = None) -> list[SentRequest]:
        """Remove and return the recorded requests (of one API if given)."""
        picked = [r for r in self.sent if api_key is None or r.api_key == api_key]
        self.sent = [r for r in self.sent if r not in picked]
        return picked


@dataclass
class InMemoryPartitionStateStore:
    """A fake store with ZooKeeper's versioning rules; ``epoch_zk_version`` fences it."""

    epoch_zk_version: int = 0
    states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    writes: int = 0

    def _fence(self, epoch_zk_version: int) -> None:
        if epoch_zk_version != self.epoch_zk_version:
            raise ControllerMovedError("controller epoch zkVersion changed")

    async def create_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> WriteResults:
        self._fence(epoch_zk_version)
        out: WriteResults = {}
        for tp, lai in states.items():
            if tp in self.states:
                out[tp] = StateConflictError(f"{tp} already has a state")
                continue
            written = lai.with_zk_version(0)
            self.states[tp] = LeaderIsrAndControllerEpoch(written, controller_epoch)
            self.writes += 1
            out[tp] = written
        return out

    async def update_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> WriteResults:
        self._fence(epoch_zk_version)
        out: WriteResults = {}
        for tp, lai in states.items():
            current = self.states.get(tp)
            if current is None or current.leader_and_isr.zk_version != lai.zk_version:
                out[tp] = StateConflictError(f"{tp} is not at zkVersion {lai.zk_version}")
                continue
            written = lai.with_zk_version(lai.zk_version + 1)
            self.states[tp] = LeaderIsrAndControllerEpoch(written, controller_epoch)
            self.writes += 1
            out[tp] = written
        return out

    async def read_states(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        return {tp: self.states[tp] for tp in partitions if tp in self.states}
