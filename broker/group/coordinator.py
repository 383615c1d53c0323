"""GroupCoordinator: the classic group protocol on the groups this broker coordinates.

The coordinator sequences the rules of ``broker.group.membership`` over the state table
of ``broker.group.states``; the groups themselves live in the ``GroupStore`` (the
metadata-manager half), which also persists them. Handlers (broker/apis) check
``store.coordinator_error(group)`` first and then call one method here each; the offsets
APIs call ``offsets`` (``broker.group.offsets``), and the requests and results they
exchange are ``broker.group.results``.

A rebalance, in the order things happen:

1. a member joins, rejoins with other protocols, leaves or expires: the group goes to
   PreparingRebalance and a DelayedJoin (an InitialDelayedJoin for an Empty group) waits in
   the join purgatory; JoinGroup answers are parked meanwhile;
2. once every known member rejoined, or at the rebalance timeout, members that did not
   rejoin are removed, the generation moves on, the protocol is chosen by vote and the
   parked joins are answered (the leader's answer lists every member's metadata); the
   group is CompletingRebalance (or Empty and stored as such when nobody is left);
3. the members send SyncGroup; the followers' answers are parked until the leader's
   assignment has been stored with ``GroupStore.store_group``; then every member gets its
   share and the group is Stable. A DelayedSync bounds this phase: members of the new
   generation that have not sent their SyncGroup one rebalance timeout after the join
   phase ended are removed and the group rebalances (they may still be heartbeating, so
   their session timers alone would never end the wait).

Every member has a session timer (DelayedHeartbeat): a member that neither heartbeats nor
joins nor syncs within its session timeout is removed, which starts a rebalance. A
member whose JoinGroup or SyncGroup is parked is not expired (its request is its sign of
life; the rebalance timeout bounds it).

Runtime state that is not part of the group's truth (parked answers, members told to
rejoin with a new id, the running DelayedJoin) is kept here in one ``_Runtime`` per
group; the ``GroupMetadata`` is the store's. When the store unloads groups (this broker
stopped leading their offsets partition) it calls ``on_groups_unloaded``: parked answers
get NOT_COORDINATOR and the timers stop. ``on_groups_loaded`` starts the session timers
of the members of groups read back from the log.

Event-loop bound. The only awaits are the store's writes; after each one the group is
looked up again, since it may have moved on (or away) while the write waited.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from broker.group import membership
from broker.group.delayed import (
    DelayedHeartbeat,
    DelayedJoin,
    DelayedSync,
    InitialDelayedJoin,
    heartbeat_key,
    join_key,
    sync_key,
)
from broker.group.model import GroupMetadata, GroupState, MemberMetadata
from broker.group.offsets import GroupOffsets
from broker.group.results import (
    UNKNOWN_MEMBER_ID,
    GroupSummary,
    JoinedMember,
    JoinRequest,
    JoinResult,
    MemberSummary,
    SyncResult,
)
from broker.group.states import transition
from broker.group.store import GroupStore
from protocol import ErrorCode
from timer import DelayedOperation, DelayedOperationPurgatory
from timer.clock import Clock

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The broker keys the protocol obeys (``from_values`` reads them from the config)."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096

    @classmethod
    def from_values(cls, get_int: Callable[[str], int]) -> GroupConfig:
        return cls(
            min_session_timeout_ms=get_int("group.min.session.timeout.ms"),
            max_session_timeout_ms=get_int("group.max.session.timeout.ms"),
            initial_rebalance_delay_ms=get_int("group.initial.rebalance.delay.ms"),
            max_size=get_int("group.max.size"),
            offset_metadata_max_bytes=get_int("offset.metadata.max.bytes"),
        )


@dataclass(eq=False)
class _Runtime:
    """The coordinator's own state for one group (see the module doc)."""

    join_waiters: dict[str, asyncio.Future[JoinResult]] = field(default_factory=dict)
    sync_waiters: dict[str, asyncio.Future[SyncResult]] = field(default_factory=dict)
    #: member ids handed out with MEMBER_ID_REQUIRED, not yet rejoined
    pending: set[str] = field(default_factory=set)
    #: a member was added since the InitialDelayedJoin last looked
    new_member_added: bool = False
    join_op: DelayedOperation | None = None
    #: members of the current generation that have not sent their SyncGroup yet
    pending_sync: set[str] = field(default_factory=set)
    sync_op: DelayedOperation | None = None
    heartbeats: dict[str, DelayedHeartbeat] = field(default_factory=dict)

    def refuse_waiters(self, member_id: str, error: ErrorCode) -> None:
        """Answer ``member_id``'s parked JoinGroup and SyncGroup (if any) with ``error``."""
        join = self.join_waiters.pop(member_id, None)
        if join is not None:
            _settle(join, JoinResult(error, member_id))
        sync = self.sync_waiters.pop(member_id, None)
        if sync is not None:
            _settle(sync, SyncResult(error))


def _settle(future: asyncio.Future[T], value: T) -> None:
    """Answer a parked request unless it was answered (or cancelled) already."""
    if not future.done():
        future.set_result(value)


class GroupCoordinator:
    """The classic group protocol over ``store``'s groups (see the module doc)."""

    def __init__(
        self,
        store: GroupStore,
        config: GroupConfig,
        clock: Clock,
        join_purgatory: DelayedOperationPurgatory[DelayedOperation],
        heartbeat_purgatory: DelayedOperationPurgatory[DelayedHeartbeat],
        *,
        on_rebalance: Callable[[], None] = lambda: None,
        on_offsets_committed: Callable[[int], None] = lambda n: None,
        new_uuid: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.join_purgatory = join_purgatory
        self.heartbeat_purgatory = heartbeat_purgatory
        self._on_rebalance = on_rebalance
        self._new_uuid = new_uuid
        #: OffsetCommit, OffsetFetch and OffsetDelete (the handlers call it directly)
        self.offsets = GroupOffsets(
            store, config.offset_metadata_max_bytes, self._schedule_heartbeat, on_offsets_committed
        )
        self._runtimes: dict[str, _Runtime] = {}
        #: background writes (an emptied group's metadata), kept referenced until done
        self._tasks: set[asyncio.Task[None]] = set()

    # -- the store's hooks ------------------------------------------------------------------

    def on_groups_unloaded(self, groups: Iterable[GroupMetadata]) -> None:
        """The store dropped ``groups``: parked answers get NOT_COORDINATOR, timers stop."""
        for group in groups:
            self._forget(group.group_id)

    def shutdown(self) -> None:
        """The broker is stopping: every parked JoinGroup and SyncGroup is answered
        NOT_COORDINATOR (its member looks for the group's next coordinator rather than
        holding the broker's shutdown until its timeout), and every timer stops."""
        for group_id in list(self._runtimes):
            self._forget(group_id)

    def _forget(self, group_id: str) -> None:
        runtime = self._runtimes.pop(group_id, None)
        if runtime is None:
            return
        for join in runtime.join_waiters.values():
            _settle(join, JoinResult(ErrorCode.NOT_COORDINATOR))
        for sync in runtime.sync_waiters.values():
            _settle(sync, SyncResult(ErrorCode.NOT_COORDINATOR))
        for member_id in runtime.heartbeats:
            self.heartbeat_purgatory.cancel_for_key(heartbeat_key(group_id, member_id))
        if runtime.join_op is not None:
            runtime.join_op.cancel()
        if runtime.sync_op is not None:
            runtime.sync_op.cancel()
        self.join_purgatory.cancel_for_key(join_key(group_id))
        self.join_purgatory.cancel_for_key(sync_key(group_id))

    def on_groups_loaded(self, groups: Iterable[GroupMetadata]) -> None:
        """The store loaded ``groups`` from the log: their members' session timers start."""
        for group in groups:
            for member in group.members.values():
                self._schedule_heartbeat(group, member)

    # -- JoinGroup --------------------------------------------------------------------------

    def join_group(self, request: JoinRequest) -> asyncio.Future[JoinResult]:
        """Join (or rejoin); the answer may wait for the join phase to end."""
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        error = self._check_join(request)
        if error != ErrorCode.NONE:
            future.set_result(JoinResult(error, member_id=request.member_id))
            return future
        group = self.store.get_group(request.group_id)
        if request.member_id == UNKNOWN_MEMBER_ID:
            if group is None:
                group = self.store.add_group(GroupMetadata(request.group_id))
            self._join_unknown(group, request, future)
        elif group is None:
            future.set_result(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=request.member_id))
        else:
            self._join_known(group, request, future)
        return future

    def _check_join(self, request: JoinRequest) -> ErrorCode:
        if not request.group_id:
            return ErrorCode.INVALID_GROUP_ID
        c = self.config
        return membership.session_timeout_error(
            request.session_timeout_ms, c.min_session_timeout_ms, c.max_session_timeout_ms
        )

    def _join_unknown(
        self, group: GroupMetadata, request: JoinRequest, future: asyncio.Future[JoinResult]
    ) -> None:
        runtime = self._runtime(group.group_id)
        if group.state is GroupState.DEAD:
            future.set_result(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not membership.supports_protocols(group, request.protocol_type, request.protocols):
            future.set_result(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        prefix = request.group_instance_id or request.client_id
        new_id = f"{prefix}-{self._new_uuid()}"
        instance = request.group_instance_id
        if instance is not None and instance in group.static_members:
            self._static_rejoin(group, request, group.static_members[instance], new_id, future)
            return
        if not self._accepts(group, new_id):
            future.set_result(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED))
            return
        if instance is None and request.require_known_member_id:
            # the client rejoins with this id; until then it only holds a place
            runtime.pending.add(new_id)
            self._schedule_pending_expiry(group, new_id, request.session_timeout_ms)
            future.set_result(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
            return
        self._add_member_and_rebalance(group, request, new_id, future)

    def _join_known(
        self, group: GroupMetadata, request: JoinRequest, future: asyncio.Future[JoinResult]
    ) -> None:
        runtime = self._runtime(group.group_id)
        member_id = request.member_id
        if group.state is GroupState.DEAD:
            future.set_result(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=member_id))
            return
        if not membership.supports_protocols(group, request.protocol_type, request.protocols):
            future.set_result(
                JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
            )
            return
        if member_id in runtime.pending:
            # its place was counted when it was handed the id (MEMBER_ID_REQUIRED)
            runtime.pending.discard(member_id)
            self._cancel_heartbeat(group.group_id, member_id)
            self._add_member_and_rebalance(group, request, member_id, future)
            return
        error = membership.fenced_or_unknown(group, member_id, request.group_instance_id)
        if error != ErrorCode.NONE:
            future.set_result(JoinResult(error, member_id=member_id))
            return
        member = group.members[member_id]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, request, future)
        elif state is GroupState.COMPLETING_REBALANCE:
            if membership.same_protocols(member, request.protocols):
                # its join answer was lost: the same answer again
                future.set_result(self._join_result(group, member_id))
            else:
                self._update_member_and_rebalance(group, member, request, future)
        elif state is GroupState.STABLE:
            if group.leader_id == member_id or not membership.same_protocols(
                member, request.protocols
            ):
                self._update_member_and_rebalance(group, member, request, future)
            else:
                self._schedule_heartbeat(group, member)
                future.set_result(self._join_result(group, member_id, with_members=False))
        else:  # Empty: the member is not known any more
            future.set_result(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))

    def _accepts(self, group: GroupMetadata, member_id: str) -> bool:
        runtime = self._runtime(group.group_id)
        return membership.accepts_member(
            group,
            member_id,
            awaiting_join=runtime.join_waiters.keys(),
            pending=runtime.pending,
            max_size=self.config.max_size,
        )

    def _add_member_and_rebalance(
        self,
        group: GroupMetadata,
        request: JoinRequest,
        member_id: str,
        future: asyncio.Future[JoinResult],
    ) -> None:
        member = MemberMetadata(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=list(request.protocols),
        )
        if not group.members:
            group.protocol_type = request.protocol_type
        group.members[member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member_id
        if group.leader_id is None:
            group.leader_id = member_id  # the first member to join leads
        runtime = self._runtime(group.group_id)
        runtime.join_waiters[member_id] = future
        runtime.new_member_added = True
        self._maybe_prepare_rebalance(group, f"member {member_id} joined")

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        request: JoinRequest,
        future: asyncio.Future[JoinResult],
    ) -> None:
        member.protocols = list(request.protocols)
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        runtime = self._runtime(group.group_id)
        previous = runtime.join_waiters.get(member.member_id)
        if previous is not None and previous is not future:
            # a second join of the same member replaces the first, which is told to retry
            _settle(previous, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        runtime.join_waiters[member.member_id] = future
        self._cancel_heartbeat(group.group_id, member.member_id)
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined")

    def _static_rejoin(
        self,
        group: GroupMetadata,
        request: JoinRequest,
        old_id: str,
        new_id: str,
        future: asyncio.Future[JoinResult],
    ) -> None:
        """A known group.instance.id joins with no member id (a restarted static member):
        its old member id is replaced (and fenced from then on). When nothing else changed
        in a Stable group, the group keeps its generation and assignment (no rebalance)."""
        runtime = self._runtime(group.group_id)
        old = group.members[old_id]
        self._cancel_heartbeat(group.group_id, old_id)
        runtime.refuse_waiters(old_id, ErrorCode.FENCED_INSTANCE_ID)
        old_protocols = old.protocols
        old.client_id = request.client_id
        old.client_host = request.client_host
        old.rebalance_timeout_ms = request.rebalance_timeout_ms
        old.session_timeout_ms = request.session_timeout_ms
        old.protocols = list(request.protocols)
        self._rename(group, old_id, new_id)
        state = group.state
        if (
            state is GroupState.STABLE
            and membership.select_protocol(list(group.members.values())) == group.protocol_name
        ):
            self._schedule_heartbeat(group, old)
            self._spawn(self._store_static_rejoin(group, old, old_id, old_protocols, future))
        elif state is GroupState.PREPARING_REBALANCE:
            runtime.join_waiters[new_id] = future
            self.join_purgatory.check_and_complete(join_key(group.group_id))
        else:
            # CompletingRebalance: the leader may be assigning to the old id; Stable with
            # another protocol: the assignment no longer fits. Either way, rebalance.
            runtime.join_waiters[new_id] = future
            self._prepare_rebalance(group, f"static member {new_id} replaced {old_id}")

    async def _store_static_rejoin(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        old_id: str,
        old_protocols: list[tuple[str, bytes]],
        future: asyncio.Future[JoinResult],
    ) -> None:
        error = await self.store.store_group(group)
        new_id = member.member_id
        if error != ErrorCode.NONE:
            # put the old member back: the client retries and the old id stays valid
            if group.members.get(new_id) is member:
                self._cancel_heartbeat(group.group_id, new_id)
                member.protocols = old_protocols
                self._rename(group, new_id, old_id)
                self._schedule_heartbeat(group, member)
            _settle(future, JoinResult(error, member_id=UNKNOWN_MEMBER_ID))
            return
        _settle(future, self._join_result(group, new_id, with_members=False))

    def _rename(self, group: GroupMetadata, old_id: str, new_id: str) -> None:
        """``_rename_member``, and a SyncGroup the old id owed is owed by the new one."""
        _rename_member(group, old_id, new_id)
        pending = self._runtime(group.group_id).pending_sync
        if old_id in pending:
            pending.discard(old_id)
            pending.add(new_id)

    # -- the join phase ---------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.state in (
            GroupState.STABLE,
            GroupState.COMPLETING_REBALANCE,
            GroupState.EMPTY,
        ):
            self._prepare_rebalance(group, reason)
        elif group.state is GroupState.PREPARING_REBALANCE:
            self.join_purgatory.check_and_complete(join_key(group.group_id))

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        runtime = self._runtime(group.group_id)
        if group.state is GroupState.COMPLETING_REBALANCE:
            self._fail_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS)
        runtime.pending_sync.clear()
        self.join_purgatory.check_and_complete(sync_key(group.group_id))
        was_empty = group.state is GroupState.EMPTY
        transition(group, GroupState.PREPARING_REBALANCE, self.clock.time_ms())
        self._on_rebalance()
        log.info(
            "group %s: preparing to rebalance (generation %d): %s",
            group.group_id,
            group.generation_id,
            reason,
        )
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        op: DelayedOperation
        if was_empty:
            delay = self.config.initial_rebalance_delay_ms
            runtime.new_member_added = False
            op = InitialDelayedJoin(
                min(delay, timeout),
                max(timeout - delay, 0),
                lambda remaining: self._initial_join_done(group, remaining),
            )
        else:
            op = DelayedJoin(
                timeout, lambda: self._all_joined(group), lambda: self._complete_join(group)
            )
        runtime.join_op = op
        self.join_purgatory.try_complete_else_watch(op, [join_key(group.group_id)])

    def _initial_join_done(self, group: GroupMetadata, remaining_ms: int) -> None:
        runtime = self._runtimes.get(group.group_id)
        if runtime is None or self.store.get_group(group.group_id) is not group:
            return  # unloaded meanwhile
        if runtime.new_member_added and remaining_ms > 0:
            runtime.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
            op = InitialDelayedJoin(
                delay,
                max(remaining_ms - delay, 0),
                lambda remaining: self._initial_join_done(group, remaining),
            )
            runtime.join_op = op
            self.join_purgatory.try_complete_else_watch(op, [join_key(group.group_id)])
        else:
            self._complete_join(group)

    def _all_joined(self, group: GroupMetadata) -> bool:
        runtime = self._runtime(group.group_id)
        return not runtime.pending and all(m in runtime.join_waiters for m in group.members)

    def _complete_join(self, group: GroupMetadata) -> None:
        """End the join phase: drop who did not rejoin, next generation, answer the joins."""
        runtime = self._runtimes.get(group.group_id)
        if runtime is None or group.state is not GroupState.PREPARING_REBALANCE:
            return
        runtime.join_op = None
        for member_id in [m for m in group.members if m not in runtime.join_waiters]:
            log.info("group %s: member %s did not rejoin; removed", group.group_id, member_id)
            self._remove_member(group, member_id)
        for member_id in list(runtime.pending):
            self._cancel_heartbeat(group.group_id, member_id)
        runtime.pending.clear()
        group.leader_id = membership.next_leader(
            list(group.members), group.leader_id, runtime.join_waiters.keys()
        )
        group.generation_id += 1
        now = self.clock.time_ms()
        if not group.members:
            group.protocol_name = None
            transition(group, GroupState.EMPTY, now)
            log.info("group %s: generation %d is empty", group.group_id, group.generation_id)
            self._spawn(self._store_quietly(group))
            return
        group.protocol_name = membership.select_protocol(list(group.members.values()))
        transition(group, GroupState.COMPLETING_REBALANCE, now)
        log.info(
            "group %s: generation %d with %d members, protocol %s, leader %s",
            group.group_id,
            group.generation_id,
            len(group.members),
            group.protocol_name,
            group.leader_id,
        )
        waiters, runtime.join_waiters = runtime.join_waiters, {}
        for member_id, future in waiters.items():
            member = group.members.get(member_id)
            if member is None:
                continue
            _settle(future, self._join_result(group, member_id))
            self._schedule_heartbeat(group, member)
        self._schedule_pending_sync(group)

    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        """Every member of the generation just formed owes a SyncGroup; a DelayedSync
        waits for them at most the rebalance timeout (see the module doc)."""
        runtime = self._runtime(group.group_id)
        runtime.pending_sync = set(group.members)
        generation = group.generation_id

        def settled() -> bool:
            return not runtime.pending_sync or not self._in_generation(group, generation)

        def expired() -> None:
            self._expire_pending_syncs(group, generation)

        timeout = max(m.rebalance_timeout_ms for m in group.members.values())
        op = DelayedSync(timeout, settled, expired)
        runtime.sync_op = op
        self.join_purgatory.try_complete_else_watch(op, [sync_key(group.group_id)])

    def _in_generation(self, group: GroupMetadata, generation_id: int) -> bool:
        """``group`` is still here, in ``generation_id``, past its join phase."""
        return (
            self.store.get_group(group.group_id) is group
            and group.generation_id == generation_id
            and group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
        )

    def _expire_pending_syncs(self, group: GroupMetadata, generation_id: int) -> None:
        runtime = self._runtimes.get(group.group_id)
        if runtime is None or not self._in_generation(group, generation_id):
            return
        late = [m for m in group.members if m in runtime.pending_sync]
        runtime.pending_sync.clear()
        if not late:
            return
        log.info(
            "group %s: members %s did not sync within the rebalance timeout; removed",
            group.group_id,
            late,
        )
        for member_id in late:
            self._remove_member(group, member_id)
        self._prepare_rebalance(group, f"members {late} did not sync in time")

    def _join_result(
        self, group: GroupMetadata, member_id: str, *, with_members: bool = True
    ) -> JoinResult:
        members: tuple[JoinedMember, ...] = ()
        protocol = group.protocol_name or ""
        if with_members and member_id == group.leader_id:
            members = tuple(
                JoinedMember(
                    m.member_id, m.group_instance_id, membership.member_metadata(m, protocol)
                )
                for m in group.members.values()
            )
        return JoinResult(
            ErrorCode.NONE,
            member_id=member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader_id=group.leader_id or "",
            members=members,
        )

    # -- SyncGroup --------------------------------------------------------------------------

    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
    ) -> asyncio.Future[SyncResult]:
        """SyncGroup: the leader hands in the assignment; everyone gets its share once it
        is stored."""
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        group = self.store.get_group(group_id)
        if group is None:
            future.set_result(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            return future
        if group.state is GroupState.DEAD:
            future.set_result(SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return future
        error = membership.fenced_or_unknown(group, member_id, group_instance_id)
        if error == ErrorCode.NONE and generation_id != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        if error == ErrorCode.NONE and (
            (protocol_type is not None and protocol_type != group.protocol_type)
            or (protocol_name is not None and protocol_name != group.protocol_name)
        ):
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if error != ErrorCode.NONE:
            future.set_result(SyncResult(error))
            return future
        state = group.state
        member = group.members[member_id]
        if state is GroupState.EMPTY:
            future.set_result(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif state is GroupState.PREPARING_REBALANCE:
            future.set_result(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif state is GroupState.STABLE:
            self._synced(group, member_id)
            self._schedule_heartbeat(group, member)
            future.set_result(self._sync_result(group, member))
        else:  # CompletingRebalance
            runtime = self._runtime(group_id)
            self._synced(group, member_id)
            runtime.sync_waiters[member_id] = future
            self._schedule_heartbeat(group, member)
            if member_id == group.leader_id:
                for m in group.members.values():
                    m.assignment = assignments.get(m.member_id, b"")
                self._spawn(self._store_assignment(group, group.generation_id))
        return future

    def _synced(self, group: GroupMetadata, member_id: str) -> None:
        """``member_id`` sent its SyncGroup of this generation."""
        runtime = self._runtime(group.group_id)
        if member_id in runtime.pending_sync:
            runtime.pending_sync.discard(member_id)
            self.join_purgatory.check_and_complete(sync_key(group.group_id))

    async def _store_assignment(self, group: GroupMetadata, generation_id: int) -> None:
        error = await self.store.store_group(group)
        if (
            self.store.get_group(group.group_id) is not group
            or group.state is not GroupState.COMPLETING_REBALANCE
            or group.generation_id != generation_id
        ):
            return  # the group moved on (a new rebalance, or unloaded) meanwhile
        if error != ErrorCode.NONE:
            log.warning("group %s: storing the assignment failed: %s", group.group_id, error)
            self._fail_syncs(group, error)
            self._maybe_prepare_rebalance(group, "storing the assignment failed")
            return
        transition(group, GroupState.STABLE, self.clock.time_ms())
        runtime = self._runtime(group.group_id)
        waiters, runtime.sync_waiters = runtime.sync_waiters, {}
        for member_id, future in waiters.items():
            member = group.members.get(member_id)
            if member is not None:
                _settle(future, self._sync_result(group, member))
                self._schedule_heartbeat(group, member)

    def _sync_result(self, group: GroupMetadata, member: MemberMetadata) -> SyncResult:
        return SyncResult(
            ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
        )

    def _fail_syncs(self, group: GroupMetadata, error: int) -> None:
        """Answer the parked SyncGroups with ``error`` and forget the assignment."""
        for member in group.members.values():
            member.assignment = b""
        runtime = self._runtime(group.group_id)
        waiters, runtime.sync_waiters = runtime.sync_waiters, {}
        for future in waiters.values():
            _settle(future, SyncResult(error))

    # -- Heartbeat --------------------------------------------------------------------------

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> int:
        group = self.store.get_group(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = membership.fenced_or_unknown(group, member_id, group_instance_id)
        if error != ErrorCode.NONE:
            return error
        if group.state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        self._schedule_heartbeat(group, group.members[member_id])
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        """Restart ``member``'s session timer."""
        group_id, member_id = group.group_id, member.member_id
        runtime = self._runtime(group_id)
        self._cancel_heartbeat(group_id, member_id)

        def expired() -> None:
            if runtime.heartbeats.get(member_id) is op:
                del runtime.heartbeats[member_id]
                self._expire_member(group, member_id)

        op = DelayedHeartbeat(member.session_timeout_ms, expired)
        runtime.heartbeats[member_id] = op
        self.heartbeat_purgatory.try_complete_else_watch(op, [heartbeat_key(group_id, member_id)])

    def _schedule_pending_expiry(
        self, group: GroupMetadata, member_id: str, session_timeout_ms: int
    ) -> None:
        """A member id handed out with MEMBER_ID_REQUIRED lapses after a session timeout."""
        runtime = self._runtime(group.group_id)

        def expired() -> None:
            if runtime.heartbeats.get(member_id) is op:
                del runtime.heartbeats[member_id]
                if member_id in runtime.pending:
                    runtime.pending.discard(member_id)
                    if group.state is GroupState.PREPARING_REBALANCE:
                        self.join_purgatory.check_and_complete(join_key(group.group_id))

        op = DelayedHeartbeat(session_timeout_ms, expired)
        runtime.heartbeats[member_id] = op
        self.heartbeat_purgatory.try_complete_else_watch(
            op, [heartbeat_key(group.group_id, member_id)]
        )

    def _cancel_heartbeat(self, group_id: str, member_id: str) -> None:
        runtime = self._runtimes.get(group_id)
        op = runtime.heartbeats.pop(member_id, None) if runtime is not None else None
        if op is not None:
            op.cancel()
            self.heartbeat_purgatory.cancel_for_key(heartbeat_key(group_id, member_id))

    def _expire_member(self, group: GroupMetadata, member_id: str) -> None:
        if self.store.get_group(group.group_id) is not group or member_id not in group.members:
            return
        runtime = self._runtime(group.group_id)
        if member_id in runtime.join_waiters or member_id in runtime.sync_waiters:
            return  # its parked request is its sign of life
        log.info("group %s: member %s's session expired", group.group_id, member_id)
        self._remove_member_and_update(group, member_id)

    # -- LeaveGroup -------------------------------------------------------------------------

    def leave_group(
        self, group_id: str, leaving: Sequence[tuple[str, str | None]]
    ) -> tuple[int, list[int]]:
        """Remove each (member id, group.instance.id) of ``leaving``: the top-level error
        and one error per leaving member, in order."""
        group = self.store.get_group(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in leaving]
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        runtime = self._runtime(group_id)
        errors: list[int] = []
        for member_id, instance_id in leaving:
            if member_id == UNKNOWN_MEMBER_ID and instance_id is not None:
                member_id = group.static_members.get(instance_id, UNKNOWN_MEMBER_ID)
            if member_id in runtime.pending:
                runtime.pending.discard(member_id)
                self._cancel_heartbeat(group_id, member_id)
                if group.state is GroupState.PREPARING_REBALANCE:
                    self.join_purgatory.check_and_complete(join_key(group_id))
                errors.append(ErrorCode.NONE)
                continue
            error = membership.fenced_or_unknown(group, member_id, instance_id)
            if error == ErrorCode.NONE:
                log.info("group %s: member %s left", group_id, member_id)
                self._remove_member_and_update(group, member_id)
            errors.append(error)
        return ErrorCode.NONE, errors

    def _remove_member(self, group: GroupMetadata, member_id: str) -> None:
        """Drop ``member_id`` (its timers and parked answers too) and pick a new leader."""
        member = group.members.pop(member_id, None)
        if member is None:
            return
        instance = member.group_instance_id
        if instance is not None and group.static_members.get(instance) == member_id:
            del group.static_members[instance]
        self._cancel_heartbeat(group.group_id, member_id)
        runtime = self._runtime(group.group_id)
        runtime.refuse_waiters(member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        runtime.pending_sync.discard(member_id)
        if group.leader_id == member_id:
            group.leader_id = membership.next_leader(list(group.members), None)

    def _remove_member_and_update(self, group: GroupMetadata, member_id: str) -> None:
        self._remove_member(group, member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"member {member_id} left")
        elif group.state is GroupState.PREPARING_REBALANCE:
            self.join_purgatory.check_and_complete(join_key(group.group_id))

    # -- listing, describing, deleting ------------------------------------------------------

    def list_groups(self, states: Iterable[str] = ()) -> list[GroupMetadata]:
        """The groups here, those in one of ``states`` (names, any case) when given."""
        wanted = {s.lower() for s in states}
        return [
            g
            for g in self.store.groups()
            if g.state is not GroupState.DEAD and (not wanted or g.state.value.lower() in wanted)
        ]

    def describe_group(self, group_id: str) -> GroupSummary:
        group = self.store.get_group(group_id)
        if group is None:
            return GroupSummary(group_id, GroupState.DEAD, "", "", ())
        stable = group.state is GroupState.STABLE
        protocol = (group.protocol_name or "") if stable else ""
        members = tuple(
            MemberSummary(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                membership.member_metadata(m, protocol) if stable else b"",
                m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return GroupSummary(group_id, group.state, group.protocol_type or "", protocol, members)

    async def delete_group(self, group_id: str) -> int:
        """DeleteGroups of one group: only an Empty group goes (NON_EMPTY_GROUP)."""
        group = self.store.get_group(group_id)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state is not GroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        transition(group, GroupState.DEAD, self.clock.time_ms())
        error = await self.store.delete_group(group)
        self.on_groups_unloaded([group])
        return error

    # -- helpers ----------------------------------------------------------------------------

    def _runtime(self, group_id: str) -> _Runtime:
        runtime = self._runtimes.get(group_id)
        if runtime is None:
            runtime = self._runtimes[group_id] = _Runtime()
        return runtime

    def _spawn(self, coro: Coroutine[object, object, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_log_failure)

    async def _store_quietly(self, group: GroupMetadata) -> None:
        error = await self.store.store_group(group)
        if error != ErrorCode.NONE:
            log.warning("group %s: storing the empty generation failed: %s", group.group_id, error)

    def states(self) -> dict[GroupState, int]:
        """How many groups are in each state (for the groups-by-state gauge)."""
        counts = dict.fromkeys(GroupState, 0)
        for group in self.store.groups():
            counts[group.state] += 1
        return counts


def _rename_member(group: GroupMetadata, old_id: str, new_id: str) -> None:
    """Give a static member its new member id, keeping its place in join order (which
    decides the next leader) and its leadership."""
    member = group.members[old_id]
    member.member_id = new_id
    group.members = {(new_id if k == old_id else k): m for k, m in group.members.items()}
    if member.group_instance_id is not None:
        group.static_members[member.group_instance_id] = new_id
    if group.leader_id == old_id:
        group.leader_id = new_id


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("group coordinator task failed", exc_info=task.exception())
