"""Where partition leadership is persisted: the PartitionStateStore interface.

The state machines decide; this interface writes their decisions to
``/brokers/topics/<t>/partitions/<p>/state``. Each write is conditional twice over: on
the controller epoch's zkVersion (fencing a zombie controller: ControllerMovedError) and,
for updates, on the partition state's own zkVersion (StateConflictError in the result).
``zk.store.ZkPartitionStateStore`` is the real one; ``InMemoryPartitionStateStore``
below is the fake the unit tests use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from protocol.values import TopicPartition
from zk.errors import ControllerMovedError, StateConflictError
from zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, WriteResults


class PartitionStateStore(Protocol):
    async def create_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> WriteResults:
        """Create state znodes for new partitions. Raises ControllerMovedError if fenced."""
        ...

    async def update_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> WriteResults:
        """Write each state if its znode is still at ``state.zk_version``.

        Raises ControllerMovedError if fenced; a newer zkVersion is a StateConflictError
        in the results.
        """
        ...

    async def read_states(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """The current state of each partition that has a state znode."""
        ...


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
