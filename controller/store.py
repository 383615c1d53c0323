"""Where partition leadership is persisted: the PartitionStateStore interface.

The state machines decide; this interface writes their decisions to
``/brokers/topics/<t>/partitions/<p>/state``. Each write is conditional twice over: on
the controller epoch's zkVersion (fencing a zombie controller: ControllerMovedError) and,
for updates, on the partition state's own zkVersion (StateConflictError in the result).
``zk.store.ZkPartitionStateStore`` is the real one (the unit tests' in-memory one is
``tests.fakes.controller.InMemoryPartitionStateStore``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from protocol.values import TopicPartition
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
