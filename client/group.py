"""Membership of a consumer group (the classic protocol), and its committed offsets.

A :class:`GroupMember` goes through the steps every Kafka consumer goes through::

    FindCoordinator ─▶ JoinGroup ─▶ SyncGroup ─▶ stable: Heartbeat every interval,
         ▲                 │  ▲                        OffsetCommit as it consumes
         │  MEMBER_ID_REQUIRED: join again             │
         │   with the id the broker gave               │ REBALANCE_IN_PROGRESS,
         │                                             │ ILLEGAL_GENERATION,
         └──── NOT_COORDINATOR & co ◀──────────────────┘ UNKNOWN_MEMBER_ID: join again
                                                         LeaveGroup on close

- JoinGroup carries the member's subscription once per assignor it offers (``range``,
  ``roundrobin``: :mod:`client.assignors`); the coordinator picks one by vote and answers
  the leader with every member's subscription. The leader computes the assignment for
  everyone (partition counts from Metadata) and sends it with its SyncGroup; the others
  send an empty SyncGroup and all get their share back.
- A broker at JoinGroup v4+ first answers MEMBER_ID_REQUIRED with an id for us; we join
  again with it at once.
- The heartbeat task runs while the member is stable. The coordinator's answer tells the
  member to rejoin (:data:`REACTIONS`); the consumer loop sees ``needs_rejoin``, commits
  what it has consumed (the coordinator still takes commits of the current generation
  while it prepares a rebalance) and calls :meth:`GroupMember.join` again.
- Commits carry the generation and member id; a commit from a member that has been
  replaced is refused (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID) and the member rejoins.

How each error of a group call is handled is the table :data:`REACTIONS` (pure); the
coordinator lookup and its retries are :mod:`client.coordinator`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from client.assignors import (
    ASSIGNORS,
    CONSUMER_PROTOCOL_TYPE,
    Assignment,
    MemberAssignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from client.client import KafkaClient
from client.coordinator import COORDINATOR_ERRORS, CoordinatorCache, check
from client.errors import ClientError, KafkaError
from protocol import ApiKey, ErrorCode
from protocol.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from protocol.values import TopicPartition
from timer.clock import Clock, SystemClock

#: OffsetCommit's generation for a commit from outside any generation (assign() mode)
NO_GENERATION: Final = -1
#: OffsetFetch's answer for a partition without a committed offset
NO_OFFSET: Final = -1


class Reaction(enum.Enum):
    """What a member does after an error answer to a group call."""

    #: join again with the same member id
    REJOIN = "rejoin"
    #: forget the member id (the group no longer knows it), then join again
    RESET_AND_REJOIN = "reset and rejoin"
    #: look the coordinator up again, then retry the call
    FIND_COORDINATOR = "find coordinator"
    #: give up: the caller sees the error
    FAIL = "fail"


#: error code -> reaction; codes not listed FAIL
REACTIONS: Final[Mapping[int, Reaction]] = {
    ErrorCode.REBALANCE_IN_PROGRESS: Reaction.REJOIN,
    ErrorCode.ILLEGAL_GENERATION: Reaction.REJOIN,
    ErrorCode.UNKNOWN_MEMBER_ID: Reaction.RESET_AND_REJOIN,
    ErrorCode.MEMBER_ID_REQUIRED: Reaction.REJOIN,
    **dict.fromkeys(COORDINATOR_ERRORS, Reaction.FIND_COORDINATOR),
}


def reaction(error_code: int) -> Reaction:
    return REACTIONS.get(error_code, Reaction.FAIL)


@dataclass(frozen=True)
class GroupConfig:
    group_id: str
    #: Kafka's session.timeout.ms: the coordinator drops a member silent this long
    session_timeout_ms: int = 10_000
    #: max.poll.interval.ms: how long the coordinator waits for members to rejoin
    rebalance_timeout_ms: int = 60_000
    heartbeat_interval_ms: int = 3_000
    #: assignors offered, preferred first
    assignors: tuple[str, ...] = ("range", "roundrobin")
    #: static membership (group.instance.id)
    group_instance_id: str | None = None
    #: how many join attempts (each after a rejoin-worthy answer) before giving up
    max_join_attempts: int = 50


class GroupMember:
    """One member of one group, subscribed to ``topics``. Not safe across tasks except
    for the heartbeat task it runs itself."""

    def __init__(
        self,
        client: KafkaClient,
        config: GroupConfig,
        topics: Sequence[str],
        clock: Clock | None = None,
    ) -> None:
        unknown = [a for a in config.assignors if a not in ASSIGNORS]
        if unknown or not config.assignors:
            raise ValueError(f"unknown assignors {unknown}; known: {sorted(ASSIGNORS)}")
        self.client = client
        self.config = config
        self.topics = tuple(topics)
        self.clock: Clock = clock or SystemClock()
        self.coordinators = CoordinatorCache(client)
        self.member_id = ""
        self.generation = NO_GENERATION
        self.protocol: str | None = None
        self.is_leader = False
        self.assignment = MemberAssignment()
        #: set by the heartbeat task (or a failed commit) when the group rebalances
        self.needs_rejoin = True
        self._heartbeat: asyncio.Task[None] | None = None

    @property
    def group_id(self) -> str:
        return self.config.group_id

    # -- joining ---------------------------------------------------------------------------

    async def join(self) -> MemberAssignment:
        """Join (or rejoin) the group and return this member's assignment; starts the
        heartbeat task. KafkaError when the group refuses us for good."""
        self._stop_heartbeat()
        self.needs_rejoin = True
        for _attempt in range(self.config.max_join_attempts):
            try:
                assignment = await self.coordinators.call(
                    self.group_id, self._join_and_sync, timeout_s=self._join_timeout_s()
                )
            except KafkaError as exc:
                what = reaction(exc.error_code)
                if what is Reaction.RESET_AND_REJOIN:
                    self.member_id = ""
                if what is Reaction.FAIL:
                    raise
                continue
            self.assignment = assignment
            self.needs_rejoin = False
            self._heartbeat = asyncio.create_task(
                self._heartbeat_loop(), name=f"heartbeat {self.group_id}"
            )
            return assignment
        raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, f"could not join {self.group_id}")

    def _join_timeout_s(self) -> float:
        return self.config.rebalance_timeout_ms / 1000 + self.client.config.request_timeout_s

    async def _join_and_sync(self, node: int) -> MemberAssignment:
        metadata = encode_subscription(Subscription(self.topics))
        cfg = self.config

        def join_body(version: int) -> Any:
            return JoinGroupRequest(
                group_id=cfg.group_id,
                session_timeout_ms=cfg.session_timeout_ms,
                rebalance_timeout_ms=cfg.rebalance_timeout_ms,
                member_id=self.member_id,
                group_instance_id=cfg.group_instance_id,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocols=[
                    JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=metadata)
                    for name in cfg.assignors
                ],
                reason=None,
            )

        # the coordinator holds a JoinGroup until every member has rejoined
        joined = await self.client.request(
            node, ApiKey.JOIN_GROUP, join_body, timeout_s=self._join_timeout_s()
        )
        if joined.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = joined.member_id
        check(joined.error_code, f"JoinGroup {cfg.group_id}")
        self.member_id = joined.member_id
        self.generation = joined.generation_id
        self.protocol = joined.protocol_name
        self.is_leader = joined.leader == joined.member_id
        assignments: list[SyncGroupRequest.SyncGroupRequestAssignment] = []
        if self.is_leader and not joined.skip_assignment:
            plan = await self._assign(
                {m.member_id: decode_subscription(m.metadata) for m in joined.members}
            )
            assignments = [
                SyncGroupRequest.SyncGroupRequestAssignment(
                    member_id=member, assignment=encode_assignment(MemberAssignment(parts))
                )
                for member, parts in sorted(plan.items())
            ]

        def sync_body(version: int) -> Any:
            return SyncGroupRequest(
                group_id=cfg.group_id,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=cfg.group_instance_id,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocol_name=self.protocol,
                assignments=assignments,
            )

        synced = await self.client.request(
            node, ApiKey.SYNC_GROUP, sync_body, timeout_s=self._join_timeout_s()
        )
        check(synced.error_code, f"SyncGroup {cfg.group_id}")
        return decode_assignment(synced.assignment)

    async def _assign(self, subscriptions: Mapping[str, Subscription]) -> Assignment:
        """The leader's job: every member's partitions, by the chosen assignor."""
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        view = await self.client.refresh_metadata(topics)
        counts = {
            t: len(view.topics[t].partitions)
            for t in topics
            if t in view.topics and view.topics[t].error_code == ErrorCode.NONE
        }
        assignor = ASSIGNORS[self.protocol or self.config.assignors[0]]
        return assignor(subscriptions, counts)

    # -- staying in --------------------------------------------------------------------------

    async def heartbeat(self) -> None:
        """One heartbeat; raises KafkaError for an error answer."""
        node = await self.coordinators.node(self.group_id)

        def body(version: int) -> Any:
            return HeartbeatRequest(
                group_id=self.group_id,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.config.group_instance_id,
            )

        answer = await self.client.request(node, ApiKey.HEARTBEAT, body)
        check(answer.error_code, f"Heartbeat {self.group_id}")

    async def _heartbeat_loop(self) -> None:
        interval_s = self.config.heartbeat_interval_ms / 1000
        while not self.needs_rejoin:
            await asyncio.sleep(interval_s)
            try:
                await self.heartbeat()
            except KafkaError as exc:
                self._react(exc.error_code)
            except ClientError:
                self.coordinators.forget(self.group_id)  # try another connection next time

    def _react(self, error_code: int) -> None:
        what = reaction(error_code)
        if what is Reaction.FIND_COORDINATOR:
            self.coordinators.forget(self.group_id)
        elif what is Reaction.RESET_AND_REJOIN:
            self.member_id = ""
            self.needs_rejoin = True
        elif what is Reaction.REJOIN:
            self.needs_rejoin = True

    def _stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None

    # -- offsets ---------------------------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` (the next offset to consume, per partition) as this member.
        A refusal that calls for a rejoin sets ``needs_rejoin`` and raises KafkaError."""
        try:
            await commit_offsets(
                self.coordinators,
                self.group_id,
                offsets,
                generation=self.generation,
                member_id=self.member_id,
                group_instance_id=self.config.group_instance_id,
            )
        except KafkaError as exc:
            self._react(exc.error_code)
            raise

    async def committed(
        self, partitions: Sequence[TopicPartition], *, require_stable: bool = False
    ) -> dict[TopicPartition, int]:
        """The group's committed offsets of ``partitions`` (those without one left out);
        ``require_stable``: waiting (retrying) while a transaction's commit is pending."""
        return await fetch_offsets(
            self.coordinators, self.group_id, partitions, require_stable=require_stable
        )

    # -- leaving ---------------------------------------------------------------------------

    async def leave(self) -> None:
        """Leave the group (the others rebalance at once rather than after our session
        timeout). A static member stays: it is expected back under its instance id."""
        self._stop_heartbeat()
        self.needs_rejoin = True
        if not self.member_id or self.config.group_instance_id is not None:
            return
        node = await self.coordinators.node(self.group_id)

        def body(version: int) -> Any:
            if version >= 3:
                return LeaveGroupRequest(
                    group_id=self.group_id,
                    members=[LeaveGroupRequest.MemberIdentity(member_id=self.member_id)],
                )
            return LeaveGroupRequest(group_id=self.group_id, member_id=self.member_id)

        answer = await self.client.request(node, ApiKey.LEAVE_GROUP, body)
        self.member_id = ""
        self.generation = NO_GENERATION
        check(answer.error_code, f"LeaveGroup {self.group_id}")

    async def close(self) -> None:
        """Leave, ignoring a coordinator that cannot be reached any more."""
        with contextlib.suppress(ClientError):
            await self.leave()
        self._stop_heartbeat()


# -- offsets, also for the admin calls ---------------------------------------------------------


def _by_topic(partitions: Sequence[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


async def commit_offsets(
    coordinators: CoordinatorCache,
    group_id: str,
    offsets: Mapping[TopicPartition, int],
    *,
    generation: int = NO_GENERATION,
    member_id: str = "",
    group_instance_id: str | None = None,
) -> None:
    """OffsetCommit to the group's coordinator; KafkaError with the first partition's
    error (coordinator errors are retried). ``generation`` -1 with an empty member id is
    a commit from outside the group, accepted while the group has no members."""
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for tp, offset in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append((tp.partition, offset))

    def body(version: int) -> Any:
        return OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=group_instance_id,
            retention_time_ms=-1,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=p,
                            committed_offset=o,
                            committed_leader_epoch=-1,
                            commit_timestamp=-1,
                            committed_metadata="",
                        )
                        for p, o in parts
                    ],
                )
                for topic, parts in by_topic.items()
            ],
        )

    async def once(node: int) -> None:
        answer = await coordinators.client.request(node, ApiKey.OFFSET_COMMIT, body)
        for t in answer.topics:
            for p in t.partitions:
                check(p.error_code, f"OffsetCommit {group_id} {t.name}-{p.partition_index}")

    await coordinators.call(group_id, once)


async def fetch_offsets(
    coordinators: CoordinatorCache,
    group_id: str,
    partitions: Sequence[TopicPartition] | None,
    *,
    require_stable: bool = False,
) -> dict[TopicPartition, int]:
    """The group's committed offsets (OffsetFetch) of ``partitions`` (None: every
    partition it has committed); partitions without a commit are left out. With
    ``require_stable`` (v7+) a partition whose commit is still in an open transaction
    answers UNSTABLE_OFFSET_COMMIT, which is retried (KIP-447)."""
    by_topic = None if partitions is None else _by_topic(partitions)

    def body(version: int) -> Any:
        if version >= 8:
            return OffsetFetchRequest(
                groups=[
                    OffsetFetchRequest.OffsetFetchRequestGroup(
                        group_id=group_id,
                        topics=None
                        if by_topic is None
                        else [
                            OffsetFetchRequest.OffsetFetchRequestTopics(
                                name=t, partition_indexes=ps
                            )
                            for t, ps in by_topic.items()
                        ],
                    )
                ],
                require_stable=require_stable,
            )
        return OffsetFetchRequest(
            group_id=group_id,
            topics=None
            if by_topic is None
            else [
                OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                for t, ps in by_topic.items()
            ],
            require_stable=require_stable,
        )

    async def once(node: int) -> dict[TopicPartition, int]:
        answer = await coordinators.client.request(node, ApiKey.OFFSET_FETCH, body)
        if answer.groups:
            (group,) = answer.groups
            check(group.error_code, f"OffsetFetch {group_id}")
            topics: list[Any] = group.topics
        else:
            check(answer.error_code, f"OffsetFetch {group_id}")
            topics = answer.topics
        out: dict[TopicPartition, int] = {}
        for t in topics:
            for p in t.partitions:
                check(p.error_code, f"OffsetFetch {group_id} {t.name}-{p.partition_index}")
                if p.committed_offset != NO_OFFSET:
                    out[TopicPartition(t.name, p.partition_index)] = p.committed_offset
        return out

    return await coordinators.call(group_id, once)
