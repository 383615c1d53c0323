"""Membership rules of the classic group protocol, as pure functions.

Nothing here does I/O or keeps state: each function answers one question about a group
(``GroupMetadata``) and the member asking, so the rules are tested on their own and the
coordinator only sequences them.

- Leader: the first member to join leads; when the leader leaves (or does not rejoin a
  rebalance), the longest-standing remaining member (that rejoined, if any did) leads.
  ``members`` keeps insertion order, which is join order.
- Protocol vote: every member votes for the first protocol of its own list that all
  members support; the protocol with most votes wins, ties going to the one voted for
  first in member order. A joining member whose protocols share nothing with what every
  current member supports would make the vote impossible: it is refused with
  INCONSISTENT_GROUP_PROTOCOL, as is a protocol type different from the group's.
- Admission: ``group.max.size`` members at most (GROUP_MAX_SIZE_REACHED), counting while
  a rebalance runs the members that already rejoined plus the ones told to rejoin.
- Session timeouts must lie within ``group.min.session.timeout.ms`` and
  ``group.max.session.timeout.ms`` (INVALID_SESSION_TIMEOUT).
- Static members (``group.instance.id``) are fenced: a request naming an instance id
  whose current member id is another one gets FENCED_INSTANCE_ID.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from broker.group.model import GroupMetadata, GroupState, MemberMetadata
from protocol import ErrorCode
from protocol.data import decode_data

log = logging.getLogger(__name__)

#: the protocol type of Kafka consumers' groups, whose member metadata is a
#: ConsumerProtocolSubscription (Connect and others use the protocol with their own)
CONSUMER_PROTOCOL_TYPE = "consumer"

#: what a member sends in JoinGroup: (assignment strategy name, metadata), in preference order
Protocols = Sequence[tuple[str, bytes]]


def protocol_names(protocols: Protocols) -> list[str]:
    return [name for name, _ in protocols]


def candidate_protocols(members: Iterable[MemberMetadata]) -> set[str]:
    """The protocols every one of ``members`` supports (empty for no members)."""
    candidates: set[str] | None = None
    for member in members:
        names = set(protocol_names(member.protocols))
        candidates = names if candidates is None else candidates & names
    return candidates or set()


def select_protocol(members: Sequence[MemberMetadata]) -> str:
    """The vote: each member's first supported protocol; most votes wins (first voted
    wins a tie). Raises ValueError when no protocol is common to all members."""
    candidates = candidate_protocols(members)
    if not candidates:
        raise ValueError("no protocol is supported by every member")
    votes: Counter[str] = Counter()
    for member in members:
        votes[next(n for n in protocol_names(member.protocols) if n in candidates)] += 1
    # Counter.most_common keeps first-insertion order among equal counts
    return votes.most_common(1)[0][0]


def supports_protocols(group: GroupMetadata, protocol_type: str, protocols: Protocols) -> bool:
    """Can a member with this protocol type and list join ``group`` (before the vote)?

    An Empty group takes any non-empty type and list; otherwise the type must be the
    group's and one of the member's protocols must be supported by every current member.
    """
    if not protocol_type or not protocols:
        return False
    if group.state is GroupState.EMPTY or not group.members:
        return True
    if group.protocol_type != protocol_type:
        return False
    return bool(candidate_protocols(group.members.values()) & set(protocol_names(protocols)))


def session_timeout_error(session_timeout_ms: int, min_ms: int, max_ms: int) -> ErrorCode:
    if session_timeout_ms < min_ms or session_timeout_ms > max_ms:
        return ErrorCode.INVALID_SESSION_TIMEOUT
    return ErrorCode.NONE


def accepts_member(
    group: GroupMetadata,
    member_id: str,
    *,
    awaiting_join: Collection[str],
    pending: Collection[str],
    max_size: int,
) -> bool:
    """Is there room for ``member_id`` in ``group`` (``group.max.size``)?

    During a rebalance only the members that rejoined (``awaiting_join``) and those told
    to rejoin with their new id (``pending``) count: the others will be dropped when the
    join phase ends. A member already counted always has room. An Empty group has no
    members, but the ids it handed out count: consumers starting together all get their
    id from the Empty group, and without counting those the group would fill past the
    limit when they rejoin.
    """
    state = group.state
    if state is GroupState.DEAD or member_id in pending:
        return True  # a pending member was counted when it was handed its id
    if state is GroupState.EMPTY:
        return len(pending) < max_size
    if state is GroupState.PREPARING_REBALANCE:
        return member_id in awaiting_join or len(awaiting_join) + len(pending) < max_size
    return member_id in group.members or len(group.members) + len(pending) < max_size


def fenced_or_unknown(
    group: GroupMetadata, member_id: str, group_instance_id: str | None
) -> ErrorCode:
    """FENCED_INSTANCE_ID when ``group_instance_id`` belongs to another member id now;
    UNKNOWN_MEMBER_ID when ``member_id`` is not a member; NONE otherwise."""
    if group_instance_id is not None:
        current = group.static_members.get(group_instance_id)
        if current is not None and current != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
    if member_id not in group.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return ErrorCode.NONE


def next_leader(
    members: Sequence[str], current: str | None, rejoined: Collection[str] | None = None
) -> str | None:
    """Who leads: ``current`` while it is a member (and rejoined, when ``rejoined`` is
    given); otherwise the first member in join order that rejoined, else the first one.
    None for no members."""
    if current is not None and current in members and (rejoined is None or current in rejoined):
        return current
    if rejoined is not None:
        for member_id in members:
            if member_id in rejoined:
                return member_id
    return members[0] if members else None


def same_protocols(member: MemberMetadata, protocols: Protocols) -> bool:
    """Did a rejoining member send exactly what it sent before (names and metadata)?"""
    return list(member.protocols) == list(protocols)


def member_metadata(member: MemberMetadata, protocol: str) -> bytes:
    """The member's subscription metadata for the chosen protocol (empty if none)."""
    for name, metadata in member.protocols:
        if name == protocol:
            return metadata
    return b""


def subscribed_topics(group: GroupMetadata) -> set[str] | None:
    """The topics the members of a ``consumer`` group subscribe to (from each member's
    metadata for the chosen protocol), or None when unknown (another protocol type, no
    chosen protocol, or metadata that does not parse)."""
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE or group.protocol_name is None:
        return None
    topics: set[str] = set()
    for member in group.members.values():
        metadata = next((m for name, m in member.protocols if name == group.protocol_name), None)
        if metadata is None:
            return None
        try:
            topics.update(decode_data("ConsumerProtocolSubscription", metadata).topics)
        except Exception as exc:  # any malformed client bytes: unknown (keep every commit)
            log.debug("group %s: unreadable subscription: %s", group.group_id, exc)
            return None
    return topics
