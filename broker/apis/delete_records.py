"""DeleteRecords (21), versions 0-2: move partitions' log start offsets forward.

Each partition goes to its leader (``broker.record_deletion`` has the rules: -1 means the
high watermark, above it OFFSET_OUT_OF_RANGE, a compact-only topic POLICY_VIOLATION; a
partition led elsewhere is NOT_LEADER_OR_FOLLOWER, one that does not exist
UNKNOWN_TOPIC_OR_PARTITION). The response waits, as a DelayedDeleteRecords, until every
live replica moved its log start there, or ``timeout_ms`` (REQUEST_TIMED_OUT), and
carries each partition's low watermark. A partition named twice in one request is
answered once, for the last offset named (Kafka reads the request into a map).
"""

from __future__ import annotations

import asyncio

from broker.apis.request import ApiRequest
from broker.apis.services import ReplicaAccess
from broker.delayed.delete_records import DeleteRecordsPartitionResult
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse, RequestHeader
from protocol.values import TopicPartition

_Partition = DeleteRecordsResponse.DeleteRecordsPartitionResult
_Topic = DeleteRecordsResponse.DeleteRecordsTopicResult


def requested_offsets(body: DeleteRecordsRequest) -> dict[TopicPartition, int]:
    """The offset asked for each partition (the last one, for a partition named twice)."""
    return {
        TopicPartition(topic.name, p.partition_index): p.offset
        for topic in body.topics
        for p in topic.partitions
    }


def build_response(
    header: RequestHeader,
    body: DeleteRecordsRequest,
    results: dict[TopicPartition, DeleteRecordsPartitionResult],
) -> Response:
    """Topics and partitions in request order (a duplicate once), each with its result."""
    topics: dict[str, list[_Partition]] = {}
    seen: set[TopicPartition] = set()
    for topic in body.topics:
        partitions = topics.setdefault(topic.name, [])
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if tp in seen:
                continue
            seen.add(tp)
            r = results[tp]
            partitions.append(
                _Partition(
                    partition_index=tp.partition,
                    low_watermark=r.low_watermark,
                    error_code=r.error_code,
                )
            )
    return make_response(
        header,
        DeleteRecordsResponse(
            throttle_time_ms=0,
            topics=[_Topic(name=name, partitions=ps) for name, ps in topics.items()],
        ),
    )


async def handle(
    ctx: ReplicaAccess, request: ApiRequest[DeleteRecordsRequest]
) -> Response | asyncio.Future[Response]:
    header, body = request.header, request.body
    offsets = requested_offsets(body)
    # DELETE on each topic (Kafka: TOPIC_AUTHORIZATION_FAILED for the others)
    access = ctx.broker.access
    denied: dict[TopicPartition, DeleteRecordsPartitionResult] = {}
    if access.enabled:
        deletable = access.allowed(
            request, AclOperation.DELETE, ResourceType.TOPIC, [t.name for t in body.topics]
        )
        for tp in [tp for tp in offsets if tp.topic not in deletable]:
            del offsets[tp]
            denied[tp] = DeleteRecordsPartitionResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        if not offsets:
            return build_response(header, body, denied)
    future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()

    def on_done(results: dict[TopicPartition, DeleteRecordsPartitionResult]) -> None:
        if denied:
            results = {**results, **denied}
        if not future.done():  # the connection may have gone (future cancelled)
            future.set_result(build_response(header, body, results))

    rm = ctx.replica_manager
    await rm.delete_records(offsets, timeout_ms=body.timeout_ms, on_done=on_done)
    if future.done():
        return future.result()
    return future
