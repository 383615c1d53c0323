"""GroupOffsets: the committed-offsets half of the group coordinator.

OffsetCommit, OffsetFetch and OffsetDelete act on a group's committed offsets, not on its
membership; they share with the group protocol only two things, which this class is
handed: the ``GroupStore`` that holds and persists the groups, and a way to restart a
member's session timer (a commit from a member is a sign of life, as a heartbeat is).
The handlers reach it as ``GroupCoordinator.offsets``. Expiring old commits
(offsets.retention.minutes) is the store's periodic task, not this class's
(``broker.group.expiry`` decides which commits go).

Who may commit, in order (``commit_error``):
- to a group that does not exist: only generation -1 (a consumer that assigns its own
  partitions); the commit creates the group, Empty;
- to a Dead group: nobody (COORDINATOR_NOT_AVAILABLE: it is being unloaded or deleted);
- with generation -1 to an Empty group: anyone;
- otherwise a current member (by id, and instance id when static) of the current
  generation, and not while the group is CompletingRebalance (REBALANCE_IN_PROGRESS:
  the member commits again once it has its assignment).

A commit whose metadata is longer than ``offset.metadata.max.bytes`` (in UTF-8) is
refused per partition with OFFSET_METADATA_TOO_LARGE; the others are stored, and each
partition's error comes back once the store has acknowledged the write.

TxnOffsetCommit's commits wait for their transaction's marker (``commit_transactional``;
the rules are :mod:`broker.group.txn_offsets`); ``unstable`` names the partitions that
have one waiting, which OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT.

OffsetDelete removes commits of an Empty group freely; of a live consumer group only
those of topics no member subscribes to (GROUP_SUBSCRIBED_TO_TOPIC for the others, and
for all when the subscriptions cannot be read); a live group of another protocol type
refuses with NON_EMPTY_GROUP.

Event-loop bound, like the coordinator.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from broker.group import membership, txn_offsets
from broker.group.model import CommittedOffset, GroupMetadata, GroupState, MemberMetadata
from broker.group.store import GroupStore
from protocol import ErrorCode
from protocol.values import TopicPartition


class GroupOffsets:
    """Committing, fetching and deleting the offsets of ``store``'s groups."""

    def __init__(
        self,
        store: GroupStore,
        metadata_max_bytes: int,
        restart_session_timer: Callable[[GroupMetadata, MemberMetadata], None],
        on_committed: Callable[[int], None],
    ) -> None:
        self.store = store
        self._metadata_max_bytes = metadata_max_bytes
        self._restart_session_timer = restart_session_timer
        self._on_committed = on_committed

    def commit(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, CommittedOffset],
    ) -> asyncio.Future[dict[TopicPartition, int]]:
        """OffsetCommit: check the committer now (see ``commit_error``), then store; the
        errors per partition once the store acknowledged."""
        future: asyncio.Future[dict[TopicPartition, int]]
        group = self.store.get_group(group_id)
        error = self.commit_error(group, member_id, group_instance_id, generation_id)
        if error != ErrorCode.NONE:
            future = asyncio.get_running_loop().create_future()
            future.set_result({tp: error for tp in offsets})
            return future
        if group is None:
            group = self.store.add_group(GroupMetadata(group_id))
        member = group.members.get(member_id)
        if member is not None:
            self._restart_session_timer(group, member)
        return asyncio.ensure_future(self._store_commits(group, offsets))

    def commit_error(
        self,
        group: GroupMetadata | None,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
    ) -> int:
        """Who may commit: anyone with generation -1 to a group without members (assign()
        consumers); otherwise a current member of the current generation, outside the
        assignment phase (CompletingRebalance: REBALANCE_IN_PROGRESS)."""
        if group is None:
            return ErrorCode.NONE if generation_id < 0 else ErrorCode.ILLEGAL_GENERATION
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.state is GroupState.EMPTY:
            return ErrorCode.NONE
        error = membership.fenced_or_unknown(group, member_id, group_instance_id)
        if error != ErrorCode.NONE:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    async def _store_commits(
        self, group: GroupMetadata, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> dict[TopicPartition, int]:
        limit = self._metadata_max_bytes
        results: dict[TopicPartition, int] = {}
        valid: dict[TopicPartition, CommittedOffset] = {}
        for tp, offset in offsets.items():
            if len(offset.metadata.encode()) > limit:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = offset
        if valid:
            stored = await self.store.store_offsets(group, valid)
            results.update(stored)
            self._on_committed(sum(1 for e in stored.values() if e == ErrorCode.NONE))
        return {tp: results[tp] for tp in offsets}

    def commit_transactional(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        producer: tuple[int, int],
        offsets: Mapping[TopicPartition, CommittedOffset],
    ) -> asyncio.Future[dict[TopicPartition, int]]:
        """TxnOffsetCommit: the commits of ``producer``'s (id, epoch) transaction,
        pending until its marker (:mod:`broker.group.txn_offsets`)."""
        group = self.store.get_group(group_id)
        if txn_offsets.names_no_member(member_id, group_instance_id, generation_id):
            error = txn_offsets.dead_group_error(group)
        else:
            error = self.commit_error(group, member_id, group_instance_id, generation_id)
        if error != ErrorCode.NONE:
            future: asyncio.Future[dict[TopicPartition, int]]
            future = asyncio.get_running_loop().create_future()
            future.set_result({tp: error for tp in offsets})
            return future
        if group is None:
            group = self.store.add_group(GroupMetadata(group_id))
        return asyncio.ensure_future(self._store_txn_commits(group, producer, offsets))

    async def _store_txn_commits(
        self,
        group: GroupMetadata,
        producer: tuple[int, int],
        offsets: Mapping[TopicPartition, CommittedOffset],
    ) -> dict[TopicPartition, int]:
        limit = self._metadata_max_bytes
        results: dict[TopicPartition, int] = {}
        valid: dict[TopicPartition, CommittedOffset] = {}
        for tp, offset in offsets.items():
            if len(offset.metadata.encode()) > limit:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = offset
        if valid:
            results.update(await self.store.store_txn_offsets(group, producer, valid))
        return {tp: results[tp] for tp in offsets}

    def unstable(self, group_id: str) -> set[TopicPartition]:
        """The group's partitions with a transactional commit pending (KIP-447)."""
        return txn_offsets.unstable_partitions(self.store.get_group(group_id))

    def fetch(
        self, group_id: str, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, CommittedOffset | None]:
        """The committed offsets of ``partitions`` (None: all of the group's); None for a
        partition without one."""
        group = self.store.get_group(group_id)
        committed = group.offsets if group is not None else {}
        if partitions is None:
            return dict(committed)
        return {tp: committed.get(tp) for tp in partitions}

    async def delete(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        """OffsetDelete: the commits of partitions whose topic no member of a consumer
        group subscribes to (GROUP_SUBSCRIBED_TO_TOPIC for the others)."""
        group = self.store.get_group(group_id)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        results: dict[TopicPartition, int] = {}
        if group.state is not GroupState.EMPTY:
            if group.protocol_type != membership.CONSUMER_PROTOCOL_TYPE:
                return ErrorCode.NON_EMPTY_GROUP, {}
            subscribed = membership.subscribed_topics(group)
            for tp in partitions:
                if subscribed is None or tp.topic in subscribed:
                    results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
        deletable = [tp for tp in partitions if tp not in results]
        if deletable:
            error = await self.store.delete_offsets(group, deletable)
            if error != ErrorCode.NONE:
                return error, {}
            results.update((tp, ErrorCode.NONE) for tp in deletable)
        return ErrorCode.NONE, results
