"""ZkPartitionStateStore: the controller's PartitionStateStore on ZooKeeper (zk.facade)."""

from __future__ import annotations

from collections.abc import Mapping

from protocol.values import TopicPartition
from zk.facade import ZkFacade
from zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, WriteResults


class ZkPartitionStateStore:
    def __init__(self, zk: ZkFacade) -> None:
        self.zk = zk

    async def create_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> WriteResults:
        return await self.zk.create_partition_states(states, controller_epoch, epoch_zk_version)

    async def update_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> WriteResults:
        return await self.zk.update_partition_states(states, controller_epoch, epoch_zk_version)

    async def read_states(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        return await self.zk.get_partition_states(partitions)
