"""The group coordinator's runtime state: what it keeps per group beside the group itself.

A ``GroupMetadata`` is the store's, and the log holds enough of it to rebuild it on
another broker. What the coordinator needs on top of it lives only here and is lost with
the broker, on purpose: the JoinGroup and SyncGroup answers parked until a phase ends,
the member ids handed out with MEMBER_ID_REQUIRED and not yet used, the running
DelayedJoin and DelayedSync, and each member's session timer (a DelayedHeartbeat).

Invariants:
- a group has a runtime while this broker coordinates it; ``forget`` (the group was
  unloaded or deleted, or the broker stops) answers every parked request
  NOT_COORDINATOR, so the member looks for the group's next coordinator, and stops
  every timer, so none fires on a group that is no longer here;
- a parked answer is settled at most once (``settle``): a request may be answered by
  the phase ending and, in the same loop turn, refused by a member's removal.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TypeVar

from broker.group.delayed import DelayedHeartbeat, heartbeat_key, join_key, sync_key
from broker.group.results import JoinResult, SyncResult
from protocol import ErrorCode
from timer import DelayedOperation, DelayedOperationPurgatory

T = TypeVar("T")


def settle(future: asyncio.Future[T], value: T) -> None:
    """Answer a parked request unless it was answered (or cancelled) already."""
    if not future.done():
        future.set_result(value)


@dataclass(eq=False)
class GroupRuntime:
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
            settle(join, JoinResult(error, member_id))
        sync = self.sync_waiters.pop(member_id, None)
        if sync is not None:
            settle(sync, SyncResult(error))


class GroupRuntimes:
    """The runtimes of the groups coordinated here, by group id."""

    def __init__(
        self,
        join_purgatory: DelayedOperationPurgatory[DelayedOperation],
        heartbeat_purgatory: DelayedOperationPurgatory[DelayedHeartbeat],
    ) -> None:
        self._join_purgatory = join_purgatory
        self._heartbeat_purgatory = heartbeat_purgatory
        self._runtimes: dict[str, GroupRuntime] = {}

    def get(self, group_id: str) -> GroupRuntime:
        """``group_id``'s runtime, made on first use."""
        runtime = self._runtimes.get(group_id)
        if runtime is None:
            runtime = self._runtimes[group_id] = GroupRuntime()
        return runtime

    def find(self, group_id: str) -> GroupRuntime | None:
        """``group_id``'s runtime if it has one (a timer firing late finds none)."""
        return self._runtimes.get(group_id)

    def group_ids(self) -> list[str]:
        return list(self._runtimes)

    def forget(self, group_id: str) -> None:
        """Drop ``group_id``'s runtime: parked answers get NOT_COORDINATOR, timers stop."""
        runtime = self._runtimes.pop(group_id, None)
        if runtime is None:
            return
        for join in runtime.join_waiters.values():
            settle(join, JoinResult(ErrorCode.NOT_COORDINATOR))
        for sync in runtime.sync_waiters.values():
            settle(sync, SyncResult(ErrorCode.NOT_COORDINATOR))
        for member_id in runtime.heartbeats:
            self._heartbeat_purgatory.cancel_for_key(heartbeat_key(group_id, member_id))
        if runtime.join_op is not None:
            runtime.join_op.cancel()
        if runtime.sync_op is not None:
            runtime.sync_op.cancel()
        self._join_purgatory.cancel_for_key(join_key(group_id))
        self._join_purgatory.cancel_for_key(sync_key(group_id))
