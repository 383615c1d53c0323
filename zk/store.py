"""ZkPartitionStateStore: the PartitionStateStore on ZooKeeper, for asyncio callers.

Each call runs the blocking KafkaZkClient method in a worker thread so the event loop
never waits on ZooKeeper.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from protocol.values import TopicPartition
from zk.client import KafkaZkClient
from zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, WriteResults


class ZkPartitionStateStore:
    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk

    async def create_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> WriteResults:
        return await asyncio.to_thread(
            self.zk.create_partition_states, dict(states), controller_epoch, epoch_zk_version
        )

    async def update_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> WriteResults:
        return await asyncio.to_thread(
            self.zk.update_partition_states, dict(states), controller_epoch, epoch_zk_version
        )

    async def read_states(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        return await asyncio.to_thread(self.zk.get_partition_states, list(partitions))
