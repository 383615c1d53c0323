"""OffsetCommit (8), v0-8: store a group's committed offsets.

v0 is the ZooKeeper-era commit: as in Kafka 3.x, its offsets go to ZooKeeper
(``/consumers/<group>/offsets/<topic>/<partition>``, zk.consumer_offsets), without the
coordinator (no generation, no member) and without metadata; only the metadata's size is
checked (OFFSET_METADATA_TOO_LARGE). It is authorized as the other versions are: READ on
the group, then on each topic. v1+ commit to ``__consumer_offsets``:

The checks before the coordinator are TxnOffsetCommit's too (broker.apis.commit_checks).
Who may commit is the coordinator's rule (broker.group.offsets, commit_error): members
of the current generation, or anyone with generation -1 for a group without members
(consumers using assign()). Partitions of topics this broker does not know get
UNKNOWN_TOPIC_OR_PARTITION. v2-4 carry a retention time: a commit with one expires at
commit time + retention rather than by ``offsets.retention.minutes``. v1 carries a commit
timestamp per partition (-1: now). v6 adds the leader epoch, v7 ``group_instance_id``.
"""

from __future__ import annotations

import asyncio
import logging

from broker.apis.commit_checks import (
    answer_when_stored,
    by_topic,
    checked_partitions,
    commit_group_error,
)
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from broker.group.model import CommittedOffset
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import OffsetCommitRequest, OffsetCommitResponse
from protocol.values import TopicPartition

log = logging.getLogger(__name__)

#: the retention time that means "the broker's rule" (v2-4)
DEFAULT_RETENTION_TIME = -1
#: the commit timestamp that means "now" (v1)
DEFAULT_TIMESTAMP = -1


async def handle(
    ctx: GroupAccess, request: ListenerRequest[OffsetCommitRequest]
) -> Response | asyncio.Future[Response]:
    body = request.body
    version = int(request.header.api_version)
    requested = [
        (TopicPartition(t.name, p.partition_index), p) for t in body.topics for p in t.partitions
    ]
    if version == 0 and body.group_id:
        if not ctx.broker.access.authorize(
            request, AclOperation.READ, ResourceType.GROUP, body.group_id
        ):
            refused: int = ErrorCode.GROUP_AUTHORIZATION_FAILED
            return make_response(request.header, _response({tp: refused for tp, _ in requested}))
        answer = await _commit_to_zookeeper(ctx, request, body, requested)
        return make_response(request.header, answer)
    error = commit_group_error(ctx, body.group_id, request)
    if error != ErrorCode.NONE:
        return make_response(request.header, _response({tp: error for tp, _ in requested}))
    now = ctx.clock.time_ms()
    retention = body.retention_time_ms if version <= 4 else DEFAULT_RETENTION_TIME
    expire = None if retention == DEFAULT_RETENTION_TIME else now + retention
    results, passed = checked_partitions(ctx, request, requested)
    offsets = {
        tp: CommittedOffset(
            offset=p.committed_offset,
            leader_epoch=p.committed_leader_epoch if version >= 6 else -1,
            metadata=p.committed_metadata or "",
            commit_timestamp=now
            if version != 1 or p.commit_timestamp == DEFAULT_TIMESTAMP
            else p.commit_timestamp,
            expire_timestamp=expire,
        )
        for tp, p in passed
    }
    if not offsets:
        return make_response(request.header, _response(results))
    stored = ctx.coordinator.offsets.commit(
        body.group_id,
        body.member_id,
        body.group_instance_id if version >= 7 else None,
        body.generation_id_or_member_epoch,
        offsets,
    )
    return answer_when_stored(request.header, requested, results, stored, _response)


async def _commit_to_zookeeper(
    ctx: GroupAccess,
    request: object,
    body: OffsetCommitRequest,
    requested: list[tuple[TopicPartition, OffsetCommitRequest.OffsetCommitRequestPartition]],
) -> OffsetCommitResponse:
    """v0, the group authorized: each readable, known partition's offset written to its
    znode; a ZooKeeper failure fails the partitions it was writing (UNKNOWN_SERVER_ERROR),
    as Kafka maps the exception."""
    limit = ctx.config.get_int("offset.metadata.max.bytes")
    results, passed = checked_partitions(ctx, request, requested)
    offsets: dict[TopicPartition, int] = {}
    for tp, p in passed:
        if p.committed_metadata is not None and len(p.committed_metadata) > limit:
            results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
        else:
            offsets[tp] = p.committed_offset
    if offsets:
        try:
            await ctx.zk.set_consumer_offsets(body.group_id, offsets)
            written = ErrorCode.NONE
        except Exception as exc:  # any ZooKeeper failure: these partitions failed
            log.warning("OffsetCommit v0 of group %s to ZooKeeper failed: %s", body.group_id, exc)
            written = ErrorCode.UNKNOWN_SERVER_ERROR
        results.update(dict.fromkeys(offsets, written))
    return _response({tp: results[tp] for tp, _ in requested})


def _response(errors: dict[TopicPartition, int]) -> OffsetCommitResponse:
    topics = by_topic(
        errors,
        OffsetCommitResponse.OffsetCommitResponseTopic,
        OffsetCommitResponse.OffsetCommitResponsePartition,
    )
    return OffsetCommitResponse(throttle_time_ms=0, topics=topics)
