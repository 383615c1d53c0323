"""The group coordinator's vocabulary: group states, members, committed offsets.

These are the types both halves of the coordinator share (the protocol state machine,
and the manager that writes and loads ``__consumer_offsets``). A ``GroupMetadata`` is the
in-memory truth for one group on its coordinator; the log holds enough of it
(GroupMetadataValue and OffsetCommitValue records) to rebuild it on another broker.

Invariants:
- ``generation_id`` only grows; it moves by one each time a rebalance completes its join
  phase.
- ``leader_id`` is a key of ``members`` or None (no members, or before the first join).
- ``protocol_name`` is set exactly while the group has a generation with members
  (CompletingRebalance, Stable, and PreparingRebalance of a generation that had one).
- ``offsets`` holds only commits that were written to the log; commits in flight are in
  ``pending_offsets`` until the append is acknowledged.
- ``txn_offsets`` holds the commits of open transactions (TxnOffsetCommit), by producer
  id, each with the log offset of its record: they join ``offsets`` when that producer's
  COMMIT marker is written to the group's partition, and go on its ABORT
  (:mod:`broker.group.txn_offsets`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from protocol.values import TopicPartition


class GroupState(enum.Enum):
    """The classic protocol's states, with the names ListGroups/DescribeGroups report."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """One committed offset, as OffsetCommitValue stores it. ``expire_timestamp`` is only
    set by old clients (OffsetCommit v1 explicit timestamps / v2-4 retention time); None
    means the broker's ``offsets.retention.minutes`` rule applies."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None


@dataclass(slots=True)
class MemberMetadata:
    """One member of a group. ``protocols`` is the member's list of (assignment strategy
    name, subscription metadata bytes), in its order of preference; ``assignment`` is what
    the leader gave it at the last SyncGroup (empty before)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""


@dataclass(slots=True)
class GroupMetadata:
    """One group as its coordinator holds it (see the module docstring's invariants)."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    #: group.instance.id -> member id, for static members
    static_members: dict[str, str] = field(default_factory=dict)
    #: when the state last changed (ms), as GroupMetadataValue v2+ stores it
    current_state_timestamp: int | None = None
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    pending_offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    #: producer id -> partition -> (log offset of the record, the commit)
    txn_offsets: dict[int, dict[TopicPartition, tuple[int, CommittedOffset]]] = field(
        default_factory=dict
    )
