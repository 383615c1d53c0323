"""Partition assignors of the consumer protocol, and the bytes they travel in (pure).

In the classic group protocol the broker does not assign partitions: JoinGroup elects a
leader and hands it every member's *subscription*; the leader runs an assignor and sends
each member's *assignment* back through SyncGroup. Both are opaque bytes to the broker,
versioned data records of the consumer protocol (``protocol_type`` "consumer")::

    ConsumerProtocolSubscription  int16 version | topics [string] | user_data bytes | ...
    ConsumerProtocolAssignment    int16 version | [topic, [partition int32]] | user_data

We write version 0 of both (every client reads it) and read any version.

Two assignors, named as every Kafka client names them, so that a group mixing clients can
agree on one by vote:

- ``range``: topic by topic, the topic's partitions in order are cut into contiguous
  ranges, one per subscribed member (members sorted by id); the first
  ``partitions % members`` members get one partition more.
- ``roundrobin``: every (topic, partition) of every subscribed topic, sorted, dealt to the
  members in id order in turn; a member not subscribed to the topic is passed over.

Both are deterministic functions of (subscriptions, partition counts): every member that
computed them would get the same answer, which is what lets any member lead. A topic that
no member knows the partition count of (it does not exist) is assigned to nobody.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from protocol.data import data_class, decode_data, encode_data

#: JoinGroup's protocol_type for consumers
CONSUMER_PROTOCOL_TYPE: Final = "consumer"
_SUBSCRIPTION: Final = "ConsumerProtocolSubscription"
_ASSIGNMENT: Final = "ConsumerProtocolAssignment"

#: member id -> topic -> partitions (sorted)
Assignment = dict[str, dict[str, list[int]]]


@dataclass(frozen=True)
class Subscription:
    """What a member asks for: the topics it consumes, and opaque assignor data."""

    topics: tuple[str, ...]
    user_data: bytes | None = None


@dataclass(frozen=True)
class MemberAssignment:
    """What a member is given: topic -> partitions."""

    partitions: Mapping[str, Sequence[int]] = field(default_factory=dict)
    user_data: bytes | None = None

    def topic_partitions(self) -> list[tuple[str, int]]:
        return sorted((t, p) for t, ps in self.partitions.items() for p in ps)


def encode_subscription(sub: Subscription) -> bytes:
    cls = data_class(_SUBSCRIPTION)
    return encode_data(
        _SUBSCRIPTION,
        0,
        cls(topics=list(sub.topics), user_data=sub.user_data, owned_partitions=[]),
    )


def decode_subscription(raw: bytes) -> Subscription:
    """ProtocolError when ``raw`` is not a subscription."""
    value = decode_data(_SUBSCRIPTION, raw)
    return Subscription(tuple(value.topics), value.user_data)


def encode_assignment(assignment: MemberAssignment) -> bytes:
    cls = data_class(_ASSIGNMENT)
    return encode_data(
        _ASSIGNMENT,
        0,
        cls(
            assigned_partitions=[
                cls.TopicPartition(topic=t, partitions=sorted(ps))
                for t, ps in sorted(assignment.partitions.items())
            ],
            user_data=assignment.user_data,
        ),
    )


def decode_assignment(raw: bytes) -> MemberAssignment:
    """An empty assignment for empty bytes (a member given nothing may get zero bytes);
    ProtocolError when ``raw`` is not an assignment."""
    if not raw:
        return MemberAssignment()
    value = decode_data(_ASSIGNMENT, raw)
    out: dict[str, list[int]] = {}
    for tp in value.assigned_partitions:
        out.setdefault(tp.topic, []).extend(tp.partitions)
    return MemberAssignment({t: sorted(ps) for t, ps in out.items()}, value.user_data)


def _empty(subscriptions: Mapping[str, Subscription]) -> Assignment:
    return {member: {} for member in subscriptions}


def range_assign(
    subscriptions: Mapping[str, Subscription], partition_counts: Mapping[str, int]
) -> Assignment:
    out = _empty(subscriptions)
    topics = sorted({t for s in subscriptions.values() for t in s.topics})
    for topic in topics:
        count = partition_counts.get(topic, 0)
        members = sorted(m for m, s in subscriptions.items() if topic in s.topics)
        if count <= 0 or not members:
            continue
        per_member, extra = divmod(count, len(members))
        start = 0
        for i, member in enumerate(members):
            size = per_member + (1 if i < extra else 0)
            if size:
                out[member][topic] = list(range(start, start + size))
            start += size
    return out


def roundrobin_assign(
    subscriptions: Mapping[str, Subscription], partition_counts: Mapping[str, int]
) -> Assignment:
    out = _empty(subscriptions)
    members = sorted(subscriptions)
    if not members:
        return out
    turn = itertools.cycle(members)
    topics = sorted({t for s in subscriptions.values() for t in s.topics})
    for topic in topics:
        for partition in range(partition_counts.get(topic, 0)):
            # at least one member subscribes to the topic, so this ends within one lap
            member = next(turn)
            while topic not in subscriptions[member].topics:
                member = next(turn)
            out[member].setdefault(topic, []).append(partition)
    return out


#: assignor name (JoinGroup protocol name) -> function
ASSIGNORS: Final[
    Mapping[str, Callable[[Mapping[str, Subscription], Mapping[str, int]], Assignment]]
] = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
}
