"""OffsetCommit (8), v2-8: store a group's committed offsets in ``__consumer_offsets``.

Who may commit is the coordinator's rule (broker.group.offsets, commit_error): members
of the current generation, or anyone with generation -1 for a group without members
(consumers using assign()). Partitions of topics this broker does not know get
UNKNOWN_TOPIC_OR_PARTITION. v2-4 carry a retention time: a commit with one expires at
commit time + retention rather than by ``offsets.retention.minutes``. v6 adds the leader
epoch, v7 ``group_instance_id``.
"""

from __future__ import annotations

import asyncio

from broker.apis.group_answers import group_error, once
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from broker.group.model import CommittedOffset
from protocol import ErrorCode, Response, make_response
from protocol.messages import OffsetCommitRequest, OffsetCommitResponse
from protocol.values import TopicPartition

#: the retention time that means "the broker's rule" (v2-4)
DEFAULT_RETENTION_TIME = -1


async def handle(
    ctx: GroupAccess, request: ListenerRequest[OffsetCommitRequest]
) -> Response | asyncio.Future[Response]:
    body = request.body
    version = int(request.header.api_version)
    requested = [
        (TopicPartition(t.name, p.partition_index), p) for t in body.topics for p in t.partitions
    ]
    error = ErrorCode.INVALID_GROUP_ID if not body.group_id else group_error(ctx, body.group_id)
    if error != ErrorCode.NONE:
        return make_response(request.header, _response({tp: error for tp, _ in requested}))
    now = ctx.clock.time_ms()
    retention = body.retention_time_ms if version <= 4 else DEFAULT_RETENTION_TIME
    expire = None if retention == DEFAULT_RETENTION_TIME else now + retention
    results: dict[TopicPartition, int] = {}
    offsets: dict[TopicPartition, CommittedOffset] = {}
    cache = ctx.metadata_cache
    for tp, p in requested:
        if cache.partition(tp.topic, tp.partition) is None:
            results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        offsets[tp] = CommittedOffset(
            offset=p.committed_offset,
            leader_epoch=p.committed_leader_epoch if version >= 6 else -1,
            metadata=p.committed_metadata or "",
            commit_timestamp=now,
            expire_timestamp=expire,
        )
    if not offsets:
        return make_response(request.header, _response(results))
    stored = ctx.coordinator.offsets.commit(
        body.group_id,
        body.member_id,
        body.group_instance_id if version >= 7 else None,
        body.generation_id_or_member_epoch,
        offsets,
    )

    def respond(errors: dict[TopicPartition, int]) -> Response:
        results.update(errors)
        return make_response(request.header, _response({tp: results[tp] for tp, _ in requested}))

    return once(stored, respond)


def _response(errors: dict[TopicPartition, int]) -> OffsetCommitResponse:
    by_topic: dict[str, list[OffsetCommitResponse.OffsetCommitResponsePartition]] = {}
    for tp, error in errors.items():
        by_topic.setdefault(tp.topic, []).append(
            OffsetCommitResponse.OffsetCommitResponsePartition(
                partition_index=tp.partition, error_code=error
            )
        )
    return OffsetCommitResponse(
        throttle_time_ms=0,
        topics=[
            OffsetCommitResponse.OffsetCommitResponseTopic(name=name, partitions=partitions)
            for name, partitions in by_topic.items()
        ],
    )
