"""An in-memory GroupStore for unit tests of the group protocol.

It keeps groups in a dict and records every write; ``hold()`` makes writes wait until
``release()``, so a test can see what happens while a write is in flight. ``error``
makes the next writes fail with that code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from broker.group import txn_offsets
from broker.group.model import CommittedOffset, GroupMetadata
from protocol import ErrorCode
from protocol.values import TopicPartition


class MemoryGroupStore:
    def __init__(self) -> None:
        self.groups_by_id: dict[str, GroupMetadata] = {}
        self.coordinator_errors: dict[str, int] = {}
        #: (group id, generation, {member id: assignment}) per store_group call
        self.stored_groups: list[tuple[str, int, dict[str, bytes]]] = []
        self.error = ErrorCode.NONE
        self.loading: frozenset[int] = frozenset()
        #: the log offset the next transactional commit is "written" at
        self.txn_base_offset = 0
        self._gate: asyncio.Event | None = None

    def hold(self) -> None:
        self._gate = asyncio.Event()

    def release(self) -> None:
        if self._gate is not None:
            self._gate.set()
            self._gate = None

    async def _wait(self) -> None:
        if self._gate is not None:
            await self._gate.wait()

    def partition_for(self, group_id: str) -> int:
        return 0

    def coordinator_error(self, group_id: str) -> int:
        return self.coordinator_errors.get(group_id, ErrorCode.NONE)

    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self.groups_by_id.get(group_id)

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        return self.groups_by_id.setdefault(group.group_id, group)

    @property
    def loading_partitions(self) -> frozenset[int]:
        return self.loading

    def groups(self) -> Iterable[GroupMetadata]:
        return list(self.groups_by_id.values())

    async def store_group(self, group: GroupMetadata) -> int:
        await self._wait()
        self.stored_groups.append(
            (
                group.group_id,
                group.generation_id,
                {m.member_id: m.assignment for m in group.members.values()},
            )
        )
        return self.error

    async def store_offsets(
        self, group: GroupMetadata, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> dict[TopicPartition, int]:
        await self._wait()
        if self.error == ErrorCode.NONE:
            group.offsets.update(offsets)
        return {tp: self.error for tp in offsets}

    async def store_txn_offsets(
        self,
        group: GroupMetadata,
        producer: tuple[int, int],
        offsets: Mapping[TopicPartition, CommittedOffset],
    ) -> dict[TopicPartition, int]:
        await self._wait()
        if self.error == ErrorCode.NONE:
            txn_offsets.add_pending(group, producer[0], self.txn_base_offset, offsets)
            self.txn_base_offset += len(offsets)
        return {tp: self.error for tp in offsets}

    async def delete_offsets(
        self, group: GroupMetadata, partitions: Iterable[TopicPartition]
    ) -> int:
        for tp in partitions:
            group.offsets.pop(tp, None)
        return self.error

    async def delete_group(self, group: GroupMetadata) -> int:
        self.groups_by_id.pop(group.group_id, None)
        return self.error

    def unload(self, group_id: str) -> GroupMetadata:
        return self.groups_by_id.pop(group_id)
