"""What OffsetCommit and TxnOffsetCommit check alike, and how both answer.

Both commit a consumer group's offsets per partition, and Kafka checks them the same
way before the coordinator sees a commit:

1. the group: an empty group id is INVALID_GROUP_ID; then READ on the group and this
   broker coordinating it (``group_error``). TxnOffsetCommit checks WRITE on its
   transactional id before; OffsetCommit v0, which bypasses the coordinator, only the
   READ. A group-level error answers every partition asked for;
2. each partition: TOPIC_AUTHORIZATION_FAILED unless the request may READ its topic
   (checked first, so that a topic's existence is not told to who may not read it),
   then UNKNOWN_TOPIC_OR_PARTITION for a partition this broker's metadata lacks
   (:func:`checked_partitions`).

The partitions that pass go to the coordinator; the answer lists every partition asked
for, in the request's order, with the checks' errors and the coordinator's
(:func:`answer_when_stored`). The two responses are twin classes of the same shape
(:func:`by_topic`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from broker.apis.group_answers import group_error, once
from broker.apis.services import GroupAccess
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import RequestHeader
from protocol.values import TopicPartition

P = TypeVar("P")
T = TypeVar("T")
Q = TypeVar("Q")

#: one partition asked for and its part of the request
Requested = Sequence[tuple[TopicPartition, P]]


def commit_group_error(ctx: GroupAccess, group_id: str, request: object) -> int:
    """Step 1 (but TxnOffsetCommit's transactional id): NONE when the commit may go on."""
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID
    return group_error(ctx, group_id, request)


def checked_partitions(
    ctx: GroupAccess, request: object, requested: Requested[P]
) -> tuple[dict[TopicPartition, int], list[tuple[TopicPartition, P]]]:
    """Step 2: the errors of the partitions refused, and the partitions that pass."""
    readable = ctx.broker.access.allowed(
        request, AclOperation.READ, ResourceType.TOPIC, [tp.topic for tp, _ in requested]
    )
    refused: dict[TopicPartition, int] = {}
    passed: list[tuple[TopicPartition, P]] = []
    for tp, part in requested:
        if tp.topic not in readable:
            refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif ctx.metadata_cache.partition(tp.topic, tp.partition) is None:
            refused[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            passed.append((tp, part))
    return refused, passed


def by_topic(
    errors: Mapping[TopicPartition, int],
    topic_cls: Callable[..., T],
    partition_cls: Callable[..., Q],
) -> list[T]:
    """A commit response's topics: each partition with its error, grouped by topic in
    the order of ``errors``."""
    partitions: dict[str, list[Q]] = {}
    for tp, error in errors.items():
        partitions.setdefault(tp.topic, []).append(
            partition_cls(partition_index=tp.partition, error_code=error)
        )
    return [topic_cls(name=name, partitions=parts) for name, parts in partitions.items()]


def answer_when_stored(
    header: RequestHeader,
    requested: Requested[P],
    results: dict[TopicPartition, int],
    stored: asyncio.Future[dict[TopicPartition, int]],
    response: Callable[[dict[TopicPartition, int]], object],
) -> Response | asyncio.Future[Response]:
    """The answer once the coordinator ``stored`` the commits: its errors joined to the
    checks' ``results``, every partition of ``requested`` in order (``response`` builds
    the body from them)."""

    def respond(errors: dict[TopicPartition, int]) -> Response:
        results.update(errors)
        return make_response(header, response({tp: results[tp] for tp, _ in requested}))

    return once(stored, respond)
