"""GroupCoordinator: the classic group protocol on the groups this broker coordinates.

The coordinator sequences the rules of ``broker.group.membership`` over the state table
of ``broker.group.states``; the groups themselves live in the ``GroupStore`` (the
metadata-manager half), which also persists them. Handlers (broker/apis) check
``store.coordinator_error(group)`` first and then call one method here each; the offsets
APIs call ``offsets`` (``broker.group.offsets``), and the requests and results they
exchange are ``broker.group.results``.

Carrying a change out over time -- the join phase, the assignment, member removal and
session timers -- is ``broker.group.rebalance``'s; this module decides, request by
request, whether a JoinGroup, SyncGroup, Heartbeat or LeaveGroup is accepted and what it
changes: a new member, a changed rejoin, a static member restarting under a new member id
(which keeps a Stable group's generation when nothing else changed), a leave.

State that is not part of the group's truth (parked answers, members told to rejoin with
a new id, the running DelayedJoin, session timers) is kept in one runtime per group
(``broker.group.runtime``), shared with the rebalancer; the ``GroupMetadata`` is the
store's. When the store unloads groups (this broker stopped leading their offsets
partition) it calls ``on_groups_unloaded``: parked answers get NOT_COORDINATOR and the
timers stop. ``on_groups_loaded`` starts the session timers of the members of groups read
back from the log.

Event-loop bound. The only awaits are the store's writes; after each one the group is
looked up again, since it may have moved on (or away) while the write waited.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from broker.group import membership
from broker.group.delayed import DelayedHeartbeat, join_key
from broker.group.model import GroupMetadata, GroupState, MemberMetadata
from broker.group.offsets import GroupOffsets
from broker.group.rebalance import Rebalancer
from broker.group.results import (
    UNKNOWN_MEMBER_ID,
    GroupSummary,
    JoinRequest,
    JoinResult,
    MemberSummary,
    SyncResult,
)
from broker.group.runtime import GroupRuntimes, settle
from broker.group.states import transition
from broker.group.store import GroupStore
from protocol import ErrorCode
from timer import DelayedOperation, DelayedOperationPurgatory
from timer.clock import Clock

log = logging.getLogger(__name__)


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
        self._new_uuid = new_uuid
        self._runtimes = GroupRuntimes(join_purgatory, heartbeat_purgatory)
        self._rebalance = Rebalancer(
            store,
            self._runtimes,
            clock,
            config.initial_rebalance_delay_ms,
            join_purgatory,
            heartbeat_purgatory,
            on_rebalance,
        )
        #: OffsetCommit, OffsetFetch and OffsetDelete (the handlers call it directly)
        self.offsets = GroupOffsets(
            store,
            config.offset_metadata_max_bytes,
            self._rebalance.restart_session,
            on_offsets_committed,
        )

    # -- the store's hooks ------------------------------------------------------------------

    def on_groups_unloaded(self, groups: Iterable[GroupMetadata]) -> None:
        """The store dropped ``groups``: parked answers get NOT_COORDINATOR, timers stop."""
        for group in groups:
            self._runtimes.forget(group.group_id)

    def shutdown(self) -> None:
        """The broker is stopping: every parked JoinGroup and SyncGroup is answered
        NOT_COORDINATOR (its member looks for the group's next coordinator rather than
        holding the broker's shutdown until its timeout), and every timer stops."""
        for group_id in self._runtimes.group_ids():
            self._runtimes.forget(group_id)

    async def close(self) -> None:
        """Cancel the group writes still under way (after ``shutdown``, before the store
        stops: they write through it)."""
        await self._rebalance.writes.close()

    def on_groups_loaded(self, groups: Iterable[GroupMetadata]) -> None:
        """The store loaded ``groups`` from the log: their members' session timers start."""
        for group in groups:
            for member in group.members.values():
                self._rebalance.restart_session(group, member)

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
        runtime = self._runtimes.get(group.group_id)
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
            self._rebalance.start_pending_expiry(group, new_id, request.session_timeout_ms)
            future.set_result(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
            return
        self._add_member_and_rebalance(group, request, new_id, future)

    def _join_known(
        self, group: GroupMetadata, request: JoinRequest, future: asyncio.Future[JoinResult]
    ) -> None:
        runtime = self._runtimes.get(group.group_id)
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
            self._rebalance.cancel_session(group.group_id, member_id)
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
                future.set_result(self._rebalance.join_result(group, member_id))
            else:
                self._update_member_and_rebalance(group, member, request, future)
        elif state is GroupState.STABLE:
            if group.leader_id == member_id or not membership.same_protocols(
                member, request.protocols
            ):
                self._update_member_and_rebalance(group, member, request, future)
            else:
                self._rebalance.restart_session(group, member)
                future.set_result(self._rebalance.join_result(group, member_id, with_members=False))
        else:  # Empty: the member is not known any more
            future.set_result(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))

    def _accepts(self, group: GroupMetadata, member_id: str) -> bool:
        runtime = self._runtimes.get(group.group_id)
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
        runtime = self._runtimes.get(group.group_id)
        runtime.join_waiters[member_id] = future
        runtime.new_member_added = True
        self._rebalance.maybe_prepare(
            group, f"member {member_id} joined{client_reason(request.reason)}"
        )

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
        runtime = self._runtimes.get(group.group_id)
        previous = runtime.join_waiters.get(member.member_id)
        if previous is not None and previous is not future:
            # a second join of the same member replaces the first, which is told to retry
            settle(previous, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        runtime.join_waiters[member.member_id] = future
        self._rebalance.cancel_session(group.group_id, member.member_id)
        self._rebalance.maybe_prepare(
            group, f"member {member.member_id} rejoined{client_reason(request.reason)}"
        )

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
        runtime = self._runtimes.get(group.group_id)
        old = group.members[old_id]
        current_leader = group.leader_id or ""
        self._rebalance.cancel_session(group.group_id, old_id)
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
            self._rebalance.restart_session(group, old)
            self._rebalance.spawn(
                self._store_static_rejoin(
                    group, old, old_id, old_protocols, future, request, current_leader
                )
            )
        elif state is GroupState.PREPARING_REBALANCE:
            runtime.join_waiters[new_id] = future
            self.join_purgatory.check_and_complete(join_key(group.group_id))
        else:
            # CompletingRebalance: the leader may be assigning to the old id; Stable with
            # another protocol: the assignment no longer fits. Either way, rebalance.
            runtime.join_waiters[new_id] = future
            self._rebalance.prepare(
                group,
                f"static member {new_id} replaced {old_id}{client_reason(request.reason)}",
            )

    async def _store_static_rejoin(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        old_id: str,
        old_protocols: list[tuple[str, bytes]],
        future: asyncio.Future[JoinResult],
        request: JoinRequest,
        current_leader: str,
    ) -> None:
        """Store the replaced static member; then its answer. A leader that may skip
        the assignment (v9+) is told it leads, with the members and ``skip_assignment``;
        an older one is told the old leader id, so that it does not take itself for the
        leader and assign (a Stable group would not take the assignment)."""
        error = await self.store.store_group(group)
        new_id = member.member_id
        if error != ErrorCode.NONE:
            # put the old member back: the client retries and the old id stays valid
            if group.members.get(new_id) is member:
                self._rebalance.cancel_session(group.group_id, new_id)
                member.protocols = old_protocols
                self._rename(group, new_id, old_id)
                self._rebalance.restart_session(group, member)
            settle(future, JoinResult(error, member_id=UNKNOWN_MEMBER_ID))
            return
        if request.supports_skip_assignment:
            result = self._rebalance.join_result(group, new_id)
            result = dataclasses.replace(result, skip_assignment=group.leader_id == new_id)
        else:
            result = dataclasses.replace(
                self._rebalance.join_result(group, new_id, with_members=False),
                leader_id=current_leader,
            )
        settle(future, result)

    def _rename(self, group: GroupMetadata, old_id: str, new_id: str) -> None:
        """``_rename_member``, and a SyncGroup the old id owed is owed by the new one."""
        _rename_member(group, old_id, new_id)
        pending = self._runtimes.get(group.group_id).pending_sync
        if old_id in pending:
            pending.discard(old_id)
            pending.add(new_id)

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
            self._rebalance.synced(group, member_id)
            self._rebalance.restart_session(group, member)
            future.set_result(self._rebalance.sync_result(group, member))
        else:  # CompletingRebalance
            runtime = self._runtimes.get(group_id)
            self._rebalance.synced(group, member_id)
            runtime.sync_waiters[member_id] = future
            self._rebalance.restart_session(group, member)
            if member_id == group.leader_id:
                for m in group.members.values():
                    m.assignment = assignments.get(m.member_id, b"")
                self._rebalance.spawn(self._rebalance.store_assignment(group, group.generation_id))
        return future

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
        self._rebalance.restart_session(group, group.members[member_id])
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # -- LeaveGroup -------------------------------------------------------------------------

    def leave_group(
        self,
        group_id: str,
        leaving: Sequence[tuple[str, str | None]],
        reasons: Sequence[str | None] = (),
    ) -> tuple[int, list[int]]:
        """Remove each (member id, group.instance.id) of ``leaving``: the top-level error
        and one error per leaving member, in order. ``reasons`` (LeaveGroup v5+, KIP-800):
        each member's own, logged."""
        group = self.store.get_group(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in leaving]
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        runtime = self._runtimes.get(group_id)
        errors: list[int] = []
        for i, (member_id, instance_id) in enumerate(leaving):
            reason = client_reason(reasons[i] if i < len(reasons) else None)
            if member_id == UNKNOWN_MEMBER_ID and instance_id is not None:
                member_id = group.static_members.get(instance_id, UNKNOWN_MEMBER_ID)
            if member_id in runtime.pending:
                runtime.pending.discard(member_id)
                self._rebalance.cancel_session(group_id, member_id)
                if group.state is GroupState.PREPARING_REBALANCE:
                    self.join_purgatory.check_and_complete(join_key(group_id))
                errors.append(ErrorCode.NONE)
                continue
            error = membership.fenced_or_unknown(group, member_id, instance_id)
            if error == ErrorCode.NONE:
                log.info("group %s: member %s left%s", group_id, member_id, reason)
                self._rebalance.remove_member_and_update(group, member_id)
            errors.append(error)
        return ErrorCode.NONE, errors

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

    # -- for the metrics --------------------------------------------------------------------

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


def client_reason(reason: str | None) -> str:
    """A client's reason (KIP-800) as the coordinator's log lines append it."""
    return f"; client reason: {reason}" if reason else ""
