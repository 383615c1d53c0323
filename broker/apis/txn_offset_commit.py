"""TxnOffsetCommit (28), v0-3: a transactional producer commits its consumer's offsets.

Sent to the group's coordinator (FindCoordinator with the group id) after
AddOffsetsToTxn. The commits are written to ``__consumer_offsets`` in a transactional
batch of the request's producer id and epoch and stay pending until the transaction's
COMMIT marker reaches that partition (dropped on ABORT): the rules are
:mod:`broker.group.txn_offsets`. v3 (KIP-447) adds the member's generation, member id
and instance id, checked as OffsetCommit checks them when given; the checks before the
coordinator are OffsetCommit's (broker.apis.commit_checks). Errors per partition:
the coordinator's (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...),
UNKNOWN_TOPIC_OR_PARTITION for a topic this broker does not know,
OFFSET_METADATA_TOO_LARGE, the member checks' errors, and what the append answered
(INVALID_PRODUCER_EPOCH for a fenced producer).
"""

from __future__ import annotations

import asyncio

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
    error: int
    # as Kafka: WRITE on the transactional id first, then READ on the group and topics
    if not ctx.broker.access.authorize(
        request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
    ):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        error = commit_group_error(ctx, body.group_id, request)
    if error != ErrorCode.NONE:
        return make_response(request.header, _response({tp: error for tp, _ in requested}))
    now = ctx.clock.time_ms()
    results, passed = checked_partitions(ctx, request, requested)
    offsets = {
        tp: CommittedOffset(
            offset=p.committed_offset,
            leader_epoch=p.committed_leader_epoch if version >= 2 else -1,
            metadata=p.committed_metadata or "",
            commit_timestamp=now,
        )
        for tp, p in passed
    }
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
    return answer_when_stored(request.header, requested, results, stored, _response)


def _response(errors: dict[TopicPartition, int]) -> TxnOffsetCommitResponse:
    topics = by_topic(
        errors,
        TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic,
        TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition,
    )
    return TxnOffsetCommitResponse(throttle_time_ms=0, topics=topics)
