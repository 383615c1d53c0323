"""Which committed offsets have expired (pure; Kafka 2.1+'s rules, KIP-211).

A commit expires ``offsets.retention.minutes`` after a moment that depends on the group:

=================================  ==================================================
the group                          a commit expires ... after
=================================  ==================================================
Empty, with a protocol type        the group became Empty (its current state
(a group whose members left)       timestamp; the commit's own timestamp when the group
                                   was loaded from a record without one)
Stable ``consumer`` group          its commit timestamp -- only for topics none of its
                                   members subscribes to any more
no protocol type (offsets only:    its commit timestamp
``assign()`` consumers, tools)
anything else (rebalancing, or     never
members of another protocol)
=================================  ==================================================

A commit with an explicit expire timestamp (OffsetCommit v1, or v2-4 with a retention
time) expires at that timestamp instead, under the same conditions. A commit still being
written (``pending_offsets``) never expires. An Empty group left without commits (nor
transactional ones awaiting their marker) is removed (Dead) by the caller, which writes
the tombstones.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.group import membership
from broker.group.model import CommittedOffset, GroupMetadata, GroupState
from protocol.values import TopicPartition

log = logging.getLogger(__name__)


def expired_offsets(group: GroupMetadata, now_ms: int, retention_ms: int) -> list[TopicPartition]:
    """The partitions whose commits in ``group.offsets`` have expired at ``now_ms``."""
    base: Callable[[CommittedOffset], int]
    excluded: set[str] = set()
    if group.protocol_type is not None and group.state is GroupState.EMPTY:
        since = group.current_state_timestamp
        base = (lambda c: c.commit_timestamp) if since is None else (lambda c: since)
    elif group.protocol_type is None:
        base = lambda c: c.commit_timestamp  # noqa: E731 -- one of three alternatives
    elif (
        group.state is GroupState.STABLE
        and (topics := membership.subscribed_topics(group)) is not None
    ):
        base = lambda c: c.commit_timestamp  # noqa: E731
        excluded = topics
    else:
        return []
    expired = []
    for tp, committed in group.offsets.items():
        if tp.topic in excluded or tp in group.pending_offsets:
            continue
        if committed.expire_timestamp is not None:
            if now_ms >= committed.expire_timestamp:
                expired.append(tp)
        elif now_ms - base(committed) >= retention_ms:
            expired.append(tp)
    return expired


def is_removable(group: GroupMetadata) -> bool:
    """An Empty group with no commits (written, pending, or waiting for a transaction's
    marker) is removed (Dead)."""
    return (
        group.state is GroupState.EMPTY
        and not group.offsets
        and not group.pending_offsets
        and not group.txn_offsets
    )
