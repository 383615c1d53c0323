"""OffsetDelete (47), v0: delete a group's committed offsets of some partitions.

Allowed for an Empty group, and in a consumer group for the topics none of its members
subscribes to (GROUP_SUBSCRIBED_TO_TOPIC per partition otherwise); a group with another
protocol type and members is NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND. A
partition this broker's metadata does not know (a deleted topic, a partition beyond its
count) is UNKNOWN_TOPIC_OR_PARTITION and not handed to the coordinator, as Kafka answers;
the group error, when there is one, still wins over every partition's.
"""

from __future__ import annotations

import asyncio

from broker.apis.group_answers import group_error, later
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import OffsetDeleteRequest, OffsetDeleteResponse
from protocol.values import TopicPartition

Partition = OffsetDeleteResponse.OffsetDeleteResponsePartition
Topic = OffsetDeleteResponse.OffsetDeleteResponseTopic


async def handle(
    ctx: GroupAccess, request: ListenerRequest[OffsetDeleteRequest]
) -> Response | asyncio.Future[Response]:
    body = request.body
    error = (
        ErrorCode.INVALID_GROUP_ID
        if not body.group_id
        else group_error(ctx, body.group_id, request, AclOperation.DELETE)
    )
    if error != ErrorCode.NONE:
        return make_response(request.header, OffsetDeleteResponse(error_code=error, topics=[]))
    requested = list(
        dict.fromkeys(
            TopicPartition(t.name, p.partition_index) for t in body.topics for p in t.partitions
        )
    )
    cache = ctx.metadata_cache
    # as Kafka: READ on each topic, TOPIC_AUTHORIZATION_FAILED for the others
    readable = ctx.broker.access.allowed(
        request, AclOperation.READ, ResourceType.TOPIC, {tp.topic for tp in requested}
    )
    denied = {tp for tp in requested if tp.topic not in readable}
    known = [
        tp
        for tp in requested
        if tp not in denied and cache.partition(tp.topic, tp.partition) is not None
    ]

    async def answer() -> Response:
        top, results = await ctx.coordinator.offsets.delete(body.group_id, known)
        if top != ErrorCode.NONE:
            return make_response(request.header, OffsetDeleteResponse(error_code=top, topics=[]))
        by_topic: dict[str, list[Partition]] = {}
        for tp in requested:
            partition_error = (
                ErrorCode.TOPIC_AUTHORIZATION_FAILED
                if tp in denied
                else results.get(tp, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            )
            by_topic.setdefault(tp.topic, []).append(
                Partition(partition_index=tp.partition, error_code=partition_error)
            )
        topics = [Topic(name=name, partitions=ps) for name, ps in by_topic.items()]
        response = OffsetDeleteResponse(error_code=top, throttle_time_ms=0, topics=topics)
        return make_response(request.header, response)

    return later(answer())
