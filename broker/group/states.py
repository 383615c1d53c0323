"""The classic group protocol's state machine, as a table of valid previous states.

A group moves between five states (``GroupState``):

- Empty: no members; it may still hold committed offsets (a group used only to store
  offsets, or whose members all left).
- PreparingRebalance: a rebalance started; members rejoin (JoinGroup) until all known
  members did or the rebalance timeout passed.
- CompletingRebalance: the join phase ended with a new generation; the members wait for
  the leader's assignment (SyncGroup).
- Stable: the leader's assignment was stored and handed out; members heartbeat.
- Dead: the group is gone (deleted, or its offsets partition was unloaded); nothing
  moves it again.

Each target state lists the states it may be entered from, as Kafka's coordinator
declares them. A transition outside the table is a bug in the coordinator, not bad client
input: ``transition`` raises ``IllegalStateTransition``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from broker.group.model import GroupMetadata, GroupState

E, PR, CR, ST, D = (
    GroupState.EMPTY,
    GroupState.PREPARING_REBALANCE,
    GroupState.COMPLETING_REBALANCE,
    GroupState.STABLE,
    GroupState.DEAD,
)

#: target state -> the states it may be entered from
VALID_PREVIOUS: Mapping[GroupState, frozenset[GroupState]] = MappingProxyType(
    {
        E: frozenset({PR}),
        PR: frozenset({ST, CR, E}),
        CR: frozenset({PR}),
        ST: frozenset({CR}),
        D: frozenset({ST, PR, CR, E, D}),
    }
)


class IllegalStateTransition(RuntimeError):
    """The coordinator tried a transition the table does not allow."""


def can_transition(current: GroupState, target: GroupState) -> bool:
    return current in VALID_PREVIOUS[target]


def transition(group: GroupMetadata, target: GroupState, now_ms: int) -> None:
    """Move ``group`` to ``target`` (stamping ``current_state_timestamp``), or raise."""
    if not can_transition(group.state, target):
        raise IllegalStateTransition(
            f"group {group.group_id}: {group.state.value} -> {target.value} is not allowed"
        )
    group.state = target
    group.current_state_timestamp = now_ms
