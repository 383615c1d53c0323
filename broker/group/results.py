"""What the group coordinator takes from the JoinGroup handler and gives back to the
group handlers.

The handlers decode a request, build the coordinator's own view of it (``JoinRequest``),
and encode the answer from a result (``JoinResult``, ``SyncResult``, ``GroupSummary``).
These are plain frozen values, free of wire versions: the handler decides which fields a
version carries. A result with an error carries defaults in every other field, which is
what the handlers answer with (``JoinResult(error, member_id)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker.group.model import GroupState

#: the member id of a member that has none yet (first JoinGroup)
UNKNOWN_MEMBER_ID = ""


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """One JoinGroup, as the coordinator needs it. ``require_known_member_id`` is set for
    v4+ (a first join gets MEMBER_ID_REQUIRED and a member id to rejoin with);
    ``supports_skip_assignment`` for v9+ (KIP-814: a static leader replacing itself in a
    Stable group is told it leads, with the members, but to skip the assignment);
    ``reason`` (v8+, KIP-800) is the client's, for the coordinator's log."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Sequence[tuple[str, bytes]]
    require_known_member_id: bool = True
    supports_skip_assignment: bool = True
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    """A JoinGroup answer; ``members`` is filled for the leader only, and
    ``skip_assignment`` tells a leader that the group keeps its assignment (KIP-814)."""

    error: int
    member_id: str = UNKNOWN_MEMBER_ID
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """What DescribeGroups reports: members' metadata and assignments only when Stable."""

    group_id: str
    state: GroupState
    protocol_type: str
    protocol_name: str
    members: tuple[MemberSummary, ...]
