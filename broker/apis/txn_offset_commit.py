"""TxnOffsetCommit (28), v0-3: a transactional producer commits its consumer's offsets.

Sent to the group's coordinator (FindCoordinator with the group id) after
AddOffsetsToTxn. The commits are written to ``__consumer_offsets`` in a transactional
batch of the request's producer id and epoch and stay pending until the transaction's
COMMIT marker reaches that partition (dropped on ABORT): the rules are
:mod:`broker.group.txn_offsets`. v3 (KIP-447) adds the member's generation, member id
and instance id, checked as OffsetCommit checks them when given. Errors per partition:
the coordinator's (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...),
UNKNOWN_TOPIC_OR_PARTITION for a topic this broker does not know,
OFFSET_METADATA_TOO_LARGE, the member checks' errors, and what the append answered
(INVALID_PRODUCER_EPOCH for a fenced producer).
"""

from __future__ import annotations

import asyncio

from broker.apis.group_answers import group_error, once
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from broker.group.model import CommittedOffset
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from protocol.values import TopicPartition


async def handle(
    ctx: GroupAccess, request: ListenerRequest[TxnOffsetCommitRequest]
) -> Response | asyncio.Future[Response]:
    body = request.body
    version = int(request.header.api_version)
    requested = [
        (TopicPartition(t.name, p.partition_index), p) for t in body.topics for p in t.partitions
    ]
    access = ctx.broker.access
    error: int
    # as Kafka: WRITE on the transactional id first, then READ on the group and topics
    if not access.authorize(
        request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
    ):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not body.group_id:
        error = ErrorCode.INVALID_GROUP_ID
    else:
        error = group_error(ctx, body.group_id, request)
    if error != ErrorCode.NONE:
        return make_response(request.header, _response({tp: error for tp, _ in requested}))
    now = ctx.clock.time_ms()
    results: dict[TopicPartition, int] = {}
    offsets: dict[TopicPartition, CommittedOffset] = {}
    readable = access.allowed(
        request, AclOperation.READ, ResourceType.TOPIC, [t.name for t in body.topics]
    )
    for tp, p in requested:
        if tp.topic not in readable:
            results[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        if ctx.metadata_cache.partition(tp.topic, tp.partition) is None:
            results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        offsets[tp] = CommittedOffset(
            offset=p.committed_offset,
            leader_epoch=p.committed_leader_epoch if version >= 2 else -1,
            metadata=p.committed_metadata or "",
            commit_timestamp=now,
        )
    if not offsets:
        return make_response(request.header, _response(results))
    v3 = version >= 3
    stored = ctx.coordinator.offsets.commit_transactional(
        body.group_id,
        body.member_id if v3 else "",
        body.group_instance_id if v3 else None,
        body.generation_id if v3 else -1,
        (body.producer_id, body.producer_epoch),
        offsets,
    )

    def respond(errors: dict[TopicPartition, int]) -> Response:
        results.update(errors)
        return make_response(request.header, _response({tp: results[tp] for tp, _ in requested}))

    return once(stored, respond)


def _response(errors: dict[TopicPartition, int]) -> TxnOffsetCommitResponse:
    by_topic: dict[str, list[TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition]] = {}
    for tp, error in errors.items():
        by_topic.setdefault(tp.topic, []).append(
            TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition(
                partition_index=tp.partition, error_code=error
            )
        )
    return TxnOffsetCommitResponse(
        throttle_time_ms=0,
        topics=[
            TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic(name=name, partitions=parts)
            for name, parts in by_topic.items()
        ],
    )
