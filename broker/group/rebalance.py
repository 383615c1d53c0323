"""Rebalancer: what moves a group from one generation to the next.

The coordinator (``broker.group.coordinator``) decides, per request, whether a JoinGroup,
SyncGroup, Heartbeat or LeaveGroup changes the group; this module carries the changes
out over time. A rebalance, in the order things happen:

1. a member joins, rejoins with other protocols, leaves or expires: the group goes to
   PreparingRebalance (``prepare``) and a DelayedJoin (an InitialDelayedJoin for an
   Empty group, which waits ``group.initial.rebalance.delay.ms`` more each time another
   member arrives, up to the rebalance timeout) waits in the join purgatory; JoinGroup
   answers are parked meanwhile;
2. once every known member rejoined, or at the rebalance timeout, members that did not
   rejoin are removed, the generation moves on, the protocol is chosen by vote and the
   parked joins are answered (the leader's answer lists every member's metadata); the
   group is CompletingRebalance (or Empty and stored as such when nobody is left);
3. the members send SyncGroup; the followers' answers are parked until the leader's
   assignment has been stored with ``GroupStore.store_group`` (``store_assignment``);
   then every member gets its share and the group is Stable. A DelayedSync bounds this
   phase: members of the new generation that have not sent their SyncGroup one
   rebalance timeout after the join phase ended are removed and the group rebalances
   (they may still be heartbeating, so their session timers alone would never end the
   wait).

Every member has a session timer (a DelayedHeartbeat, ``restart_session``): a member that
neither heartbeats nor joins nor syncs within its session timeout is removed, which
starts a rebalance. A member whose JoinGroup or SyncGroup is parked is not expired (its
request is its sign of life; the rebalance timeout bounds it). A member id handed out
with MEMBER_ID_REQUIRED lapses the same way if it is not used (``start_pending_expiry``).

Timers and writes finish later than the request that started them, so each callback
first checks that the group is still the one it was made for (the store may have
unloaded it, or a newer rebalance may have begun) and does nothing otherwise.
Event-loop bound.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine

from broker.background import BackgroundTasks
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
from broker.group.results import JoinedMember, JoinResult, SyncResult
from broker.group.runtime import GroupRuntimes, settle
from broker.group.states import transition
from broker.group.store import GroupStore
from protocol import ErrorCode
from timer import DelayedOperation, DelayedOperationPurgatory
from timer.clock import Clock

log = logging.getLogger(__name__)


class Rebalancer:
    """Rebalances, assignments, member removal and session timers of ``store``'s groups,
    over the runtimes the coordinator shares with it."""

    def __init__(
        self,
        store: GroupStore,
        runtimes: GroupRuntimes,
        clock: Clock,
        initial_rebalance_delay_ms: int,
        join_purgatory: DelayedOperationPurgatory[DelayedOperation],
        heartbeat_purgatory: DelayedOperationPurgatory[DelayedHeartbeat],
        on_rebalance: Callable[[], None],
    ) -> None:
        self.store = store
        self.clock = clock
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.join_purgatory = join_purgatory
        self.heartbeat_purgatory = heartbeat_purgatory
        self._runtimes = runtimes
        self._on_rebalance = on_rebalance
        #: background writes (an emptied group's metadata, a leader's assignment, a static
        #: member's rejoin), held until done and cancelled when the coordinator closes
        self.writes = BackgroundTasks("group coordinator writes")

    # -- the join phase ---------------------------------------------------------------------

    def maybe_prepare(self, group: GroupMetadata, reason: str) -> None:
        if group.state in (
            GroupState.STABLE,
            GroupState.COMPLETING_REBALANCE,
            GroupState.EMPTY,
        ):
            self.prepare(group, reason)
        elif group.state is GroupState.PREPARING_REBALANCE:
            self.join_purgatory.check_and_complete(join_key(group.group_id))

    def prepare(self, group: GroupMetadata, reason: str) -> None:
        runtime = self._runtimes.get(group.group_id)
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
            delay = self.initial_rebalance_delay_ms
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
        runtime = self._runtimes.find(group.group_id)
        if runtime is None or self.store.get_group(group.group_id) is not group:
            return  # unloaded meanwhile
        if runtime.new_member_added and remaining_ms > 0:
            runtime.new_member_added = False
            delay = min(self.initial_rebalance_delay_ms, remaining_ms)
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
        runtime = self._runtimes.get(group.group_id)
        return not runtime.pending and all(m in runtime.join_waiters for m in group.members)

    def _complete_join(self, group: GroupMetadata) -> None:
        """End the join phase: drop who did not rejoin, next generation, answer the joins."""
        runtime = self._runtimes.find(group.group_id)
        if runtime is None or group.state is not GroupState.PREPARING_REBALANCE:
            return
        runtime.join_op = None
        for member_id in [m for m in group.members if m not in runtime.join_waiters]:
            log.info("group %s: member %s did not rejoin; removed", group.group_id, member_id)
            self.remove_member(group, member_id)
        for member_id in list(runtime.pending):
            self.cancel_session(group.group_id, member_id)
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
            self.spawn(self._store_quietly(group))
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
            settle(future, self.join_result(group, member_id))
            self.restart_session(group, member)
        self._schedule_pending_sync(group)

    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        """Every member of the generation just formed owes a SyncGroup; a DelayedSync
        waits for them at most the rebalance timeout (see the module doc)."""
        runtime = self._runtimes.get(group.group_id)
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
        runtime = self._runtimes.find(group.group_id)
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
            self.remove_member(group, member_id)
        self.prepare(group, f"members {late} did not sync in time")

    def join_result(
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

    # -- the sync phase ---------------------------------------------------------------------

    def synced(self, group: GroupMetadata, member_id: str) -> None:
        """``member_id`` sent its SyncGroup of this generation."""
        runtime = self._runtimes.get(group.group_id)
        if member_id in runtime.pending_sync:
            runtime.pending_sync.discard(member_id)
            self.join_purgatory.check_and_complete(sync_key(group.group_id))

    async def store_assignment(self, group: GroupMetadata, generation_id: int) -> None:
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
            self.maybe_prepare(group, "storing the assignment failed")
            return
        transition(group, GroupState.STABLE, self.clock.time_ms())
        runtime = self._runtimes.get(group.group_id)
        waiters, runtime.sync_waiters = runtime.sync_waiters, {}
        for member_id, future in waiters.items():
            member = group.members.get(member_id)
            if member is not None:
                settle(future, self.sync_result(group, member))
                self.restart_session(group, member)

    def sync_result(self, group: GroupMetadata, member: MemberMetadata) -> SyncResult:
        return SyncResult(
            ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
        )

    def _fail_syncs(self, group: GroupMetadata, error: int) -> None:
        """Answer the parked SyncGroups with ``error`` and forget the assignment."""
        for member in group.members.values():
            member.assignment = b""
        runtime = self._runtimes.get(group.group_id)
        waiters, runtime.sync_waiters = runtime.sync_waiters, {}
        for future in waiters.values():
            settle(future, SyncResult(error))

    # -- session timers and removal --------------------------------------------------------

    def restart_session(self, group: GroupMetadata, member: MemberMetadata) -> None:
        """Restart ``member``'s session timer."""
        group_id, member_id = group.group_id, member.member_id
        runtime = self._runtimes.get(group_id)
        self.cancel_session(group_id, member_id)

        def expired() -> None:
            if runtime.heartbeats.get(member_id) is op:
                del runtime.heartbeats[member_id]
                self._expire_member(group, member_id)

        op = DelayedHeartbeat(member.session_timeout_ms, expired)
        runtime.heartbeats[member_id] = op
        self.heartbeat_purgatory.try_complete_else_watch(op, [heartbeat_key(group_id, member_id)])

    def start_pending_expiry(
        self, group: GroupMetadata, member_id: str, session_timeout_ms: int
    ) -> None:
        """A member id handed out with MEMBER_ID_REQUIRED lapses after a session timeout."""
        runtime = self._runtimes.get(group.group_id)

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

    def cancel_session(self, group_id: str, member_id: str) -> None:
        runtime = self._runtimes.find(group_id)
        op = runtime.heartbeats.pop(member_id, None) if runtime is not None else None
        if op is not None:
            op.cancel()
            self.heartbeat_purgatory.cancel_for_key(heartbeat_key(group_id, member_id))

    def _expire_member(self, group: GroupMetadata, member_id: str) -> None:
        if self.store.get_group(group.group_id) is not group or member_id not in group.members:
            return
        runtime = self._runtimes.get(group.group_id)
        if member_id in runtime.join_waiters or member_id in runtime.sync_waiters:
            return  # its parked request is its sign of life
        log.info("group %s: member %s's session expired", group.group_id, member_id)
        self.remove_member_and_update(group, member_id)

    def remove_member(self, group: GroupMetadata, member_id: str) -> None:
        """Drop ``member_id`` (its timers and parked answers too) and pick a new leader."""
        member = group.members.pop(member_id, None)
        if member is None:
            return
        instance = member.group_instance_id
        if instance is not None and group.static_members.get(instance) == member_id:
            del group.static_members[instance]
        self.cancel_session(group.group_id, member_id)
        runtime = self._runtimes.get(group.group_id)
        runtime.refuse_waiters(member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        runtime.pending_sync.discard(member_id)
        if group.leader_id == member_id:
            group.leader_id = membership.next_leader(list(group.members), None)

    def remove_member_and_update(self, group: GroupMetadata, member_id: str) -> None:
        self.remove_member(group, member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.prepare(group, f"member {member_id} left")
        elif group.state is GroupState.PREPARING_REBALANCE:
            self.join_purgatory.check_and_complete(join_key(group.group_id))

    # -- background writes ------------------------------------------------------------------

    def spawn(self, coro: Coroutine[object, object, None]) -> None:
        task = self.writes.spawn(coro, name="group-coordinator-write")
        if task is not None:
            task.add_done_callback(_log_failure)

    async def _store_quietly(self, group: GroupMetadata) -> None:
        error = await self.store.store_group(group)
        if error != ErrorCode.NONE:
            log.warning("group %s: storing the empty generation failed: %s", group.group_id, error)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("group coordinator task failed", exc_info=task.exception())
