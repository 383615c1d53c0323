"""OffsetFetch (9), v0-8: a group's committed offsets.

v0 reads the offsets OffsetCommit v0 wrote to ZooKeeper (zk.consumer_offsets), as Kafka
3.x does: no coordinator, no metadata; a partition without one there, or of a topic this
broker does not know, answers offset -1 with no error. Its authorization is the other
versions': DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED on every partition, as
v1 answers a group error) and on each topic (else that topic's partitions answer
TOPIC_AUTHORIZATION_FAILED, unread). v1+ read ``__consumer_offsets``:

v1-7 ask for one group, v8 for several (each answered with its own error). Null topics
(v2+) mean every partition the group has a commit for. A partition without a commit
answers offset -1 with no error. v1 reports a group-level error on every partition; v2-7
at top level. ``require_stable`` (v7+, KIP-447): a partition with a transactional commit
still pending (TxnOffsetCommit before its marker) answers UNSTABLE_OFFSET_COMMIT with
offset -1, and the consumer asks again; without it the last commit in force is answered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from broker.apis.group_answers import group_error
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from broker.group.model import CommittedOffset
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import OffsetFetchRequest, OffsetFetchResponse
from protocol.values import TopicPartition

log = logging.getLogger(__name__)

T = TypeVar("T")
P = TypeVar("P")

Partition = OffsetFetchResponse.OffsetFetchResponsePartition
Topic = OffsetFetchResponse.OffsetFetchResponseTopic
Partitions = OffsetFetchResponse.OffsetFetchResponsePartitions
Topics = OffsetFetchResponse.OffsetFetchResponseTopics


async def handle(ctx: GroupAccess, request: ListenerRequest[OffsetFetchRequest]) -> Response:
    body = request.body
    version = int(request.header.api_version)
    if version == 0:
        if not ctx.broker.access.authorize(
            request, AclOperation.DESCRIBE, ResourceType.GROUP, body.group_id
        ):
            refused = _error_on_each(_partitions(body.topics), ErrorCode.GROUP_AUTHORIZATION_FAILED)
            return make_response(request.header, refused)
        return make_response(request.header, await _fetch_from_zookeeper(ctx, request, body))
    if version >= 8:
        groups = []
        for group in body.groups:
            wanted = _partitions(group.topics)
            error, offsets, denied = _fetch(ctx, request, group.group_id, wanted)
            unstable = _unstable(ctx, group.group_id, body.require_stable and not error)
            groups.append(
                OffsetFetchResponse.OffsetFetchResponseGroup(
                    group_id=group.group_id,
                    topics=_topics(offsets, Topics, Partitions, unstable, denied),
                    error_code=error,
                )
            )
        return make_response(request.header, OffsetFetchResponse(throttle_time_ms=0, groups=groups))
    wanted = _partitions(body.topics)
    error, offsets, denied = _fetch(ctx, request, body.group_id, wanted)
    if error != ErrorCode.NONE and version < 2:
        # no top-level error before v2: every partition carries it
        return make_response(request.header, _error_on_each(wanted, error))
    stable = version >= 7 and body.require_stable and not error
    unstable = _unstable(ctx, body.group_id, stable)
    response = OffsetFetchResponse(
        throttle_time_ms=0,
        topics=_topics(offsets, Topic, Partition, unstable, denied),
        error_code=error,
    )
    return make_response(request.header, response)


def _error_on_each(wanted: list[TopicPartition] | None, error: int) -> OffsetFetchResponse:
    """v0-1's answer to a refused group: ``error`` on every partition asked for."""
    by_topic: dict[str, list[Partition]] = {}
    for tp in wanted or []:
        by_topic.setdefault(tp.topic, []).append(
            Partition(partition_index=tp.partition, committed_offset=-1, metadata="",
                      error_code=error)
        )  # fmt: skip
    topics = [Topic(name=n, partitions=ps) for n, ps in by_topic.items()]
    return OffsetFetchResponse(throttle_time_ms=0, topics=topics)


async def _fetch_from_zookeeper(
    ctx: GroupAccess, request: object, body: OffsetFetchRequest
) -> OffsetFetchResponse:
    """v0, the group authorized: the stored offset of each partition asked for whose topic
    the request may describe and this broker knows."""
    wanted = _partitions(body.topics) or []
    described = ctx.broker.access.allowed(
        request, AclOperation.DESCRIBE, ResourceType.TOPIC, [tp.topic for tp in wanted]
    )
    known = [
        tp
        for tp in wanted
        if tp.topic in described
        and ctx.metadata_cache.partition(tp.topic, tp.partition) is not None
    ]
    error = ErrorCode.NONE
    stored: dict[TopicPartition, int | None] = {}
    if known:
        try:
            stored = await ctx.zk.get_consumer_offsets(body.group_id, known)
        except Exception as exc:  # any ZooKeeper failure: every partition asked failed
            log.warning("OffsetFetch v0 of group %s from ZooKeeper failed: %s", body.group_id, exc)
            error = ErrorCode.UNKNOWN_SERVER_ERROR

    def error_of(tp: TopicPartition) -> int:
        if tp.topic not in described:
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return error if tp in known else ErrorCode.NONE

    by_topic: dict[str, list[Partition]] = {}
    for tp in wanted:
        offset = stored.get(tp)
        by_topic.setdefault(tp.topic, []).append(
            Partition(
                partition_index=tp.partition,
                committed_offset=-1 if offset is None else offset,
                metadata="",
                error_code=error_of(tp),
            )
        )
    topics = [Topic(name=name, partitions=ps) for name, ps in by_topic.items()]
    return OffsetFetchResponse(throttle_time_ms=0, topics=topics)


def _partitions(
    topics: Sequence[OffsetFetchRequest.OffsetFetchRequestTopic]
    | Sequence[OffsetFetchRequest.OffsetFetchRequestTopics]
    | None,
) -> list[TopicPartition] | None:
    if topics is None:
        return None
    return [TopicPartition(t.name, p) for t in topics for p in t.partition_indexes]


def _fetch(
    ctx: GroupAccess, request: object, group_id: str, wanted: list[TopicPartition] | None
) -> tuple[int, dict[TopicPartition, CommittedOffset | None], set[TopicPartition]]:
    """The group's error, its offsets, and the partitions asked for whose topic the
    request may not describe (answered TOPIC_AUTHORIZATION_FAILED; asked for every
    partition, those are left out)."""
    error = group_error(ctx, group_id, request, AclOperation.DESCRIBE)
    if error != ErrorCode.NONE:
        return error, {}, set()
    offsets = ctx.coordinator.offsets.fetch(group_id, wanted)
    access = ctx.broker.access
    if not access.enabled:
        return ErrorCode.NONE, offsets, set()
    topics = {tp.topic for tp in offsets}
    described = access.allowed(
        request, AclOperation.DESCRIBE, ResourceType.TOPIC, topics, quiet=wanted is None
    )
    denied = {tp for tp in offsets if tp.topic not in described}
    kept = {tp: o for tp, o in offsets.items() if tp not in denied}
    return ErrorCode.NONE, kept, set() if wanted is None else denied


def _unstable(ctx: GroupAccess, group_id: str, require_stable: bool) -> set[TopicPartition]:
    return ctx.coordinator.offsets.unstable(group_id) if require_stable else set()


def _topics(
    offsets: dict[TopicPartition, CommittedOffset | None],
    topic_cls: Callable[..., T],
    partition_cls: Callable[..., P],
    unstable: set[TopicPartition],
    denied: set[TopicPartition],
) -> list[T]:
    """The answer's topics (v1-7 and v8 have twin classes of the same shape);
    ``unstable`` partitions answer UNSTABLE_OFFSET_COMMIT, ``denied`` ones
    TOPIC_AUTHORIZATION_FAILED."""
    by_topic: dict[str, list[P]] = {}
    for tp in sorted(denied):
        by_topic.setdefault(tp.topic, []).append(
            partition_cls(
                partition_index=tp.partition,
                committed_offset=-1,
                committed_leader_epoch=-1,
                metadata="",
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            )
        )
    for tp, committed in offsets.items():
        if tp in unstable:
            by_topic.setdefault(tp.topic, []).append(
                partition_cls(
                    partition_index=tp.partition,
                    committed_offset=-1,
                    committed_leader_epoch=-1,
                    metadata="",
                    error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT,
                )
            )
            continue
        by_topic.setdefault(tp.topic, []).append(
            partition_cls(
                partition_index=tp.partition,
                committed_offset=-1 if committed is None else committed.offset,
                committed_leader_epoch=-1 if committed is None else committed.leader_epoch,
                metadata="" if committed is None else committed.metadata,
                error_code=ErrorCode.NONE,
            )
        )
    return [topic_cls(name=name, partitions=partitions) for name, partitions in by_topic.items()]
