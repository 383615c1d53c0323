"""ListOffsets (2), versions 0-7: an offset per partition for a timestamp.

v0 is the older question, answered with a list (``old_style_offsets``): up to
``max_num_offsets`` segment boundaries at or before the time, newest first
(broker.legacy_offsets has the rule). v1+ ask for one offset:

Timestamps: -2 the log start (EARLIEST), -1 the last fetchable offset (LATEST: the high
watermark, the LSO for READ_COMMITTED; v1 has no isolation level and reads as
READ_UNCOMMITTED; a replica's request sees the log end),
-3 the record with the largest timestamp (MAX_TIMESTAMP, v7), otherwise the first
record whose timestamp is at least the one asked for. No such record: offset and
timestamp -1 with no error. A partition named twice is INVALID_REQUEST from v1, as in
Kafka (whose v0 path answers each naming).
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import ReplicaAccess
from broker.partition import PartitionError
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import ListOffsetsRequest, ListOffsetsResponse
from protocol.values import TopicPartition
from storage import StorageError, TimestampOffset

_Partition = ListOffsetsResponse.ListOffsetsPartitionResponse


def _answer_v0(
    ctx: ReplicaAccess,
    body: ListOffsetsRequest,
    tp: TopicPartition,
    p: ListOffsetsRequest.ListOffsetsPartition,
) -> _Partition:
    try:
        offsets = ctx.replica_manager.legacy_offsets_for_timestamp(
            tp, p.timestamp, p.max_num_offsets, replica_id=body.replica_id
        )
    except PartitionError as exc:
        return _Partition(partition_index=tp.partition, error_code=exc.error_code)
    except StorageError:
        return _Partition(partition_index=tp.partition, error_code=ErrorCode.KAFKA_STORAGE_ERROR)
    return _Partition(
        partition_index=tp.partition, error_code=ErrorCode.NONE, old_style_offsets=offsets
    )


def _answer(
    ctx: ReplicaAccess,
    body: ListOffsetsRequest,
    tp: TopicPartition,
    p: ListOffsetsRequest.ListOffsetsPartition,
) -> _Partition:
    rm = ctx.replica_manager
    try:
        found: TimestampOffset | None = rm.fetch_offset_for_timestamp(
            tp,
            p.timestamp,
            current_leader_epoch=p.current_leader_epoch,
            isolation_level=body.isolation_level,
            replica_id=body.replica_id,
        )
    except PartitionError as exc:
        return _Partition(partition_index=tp.partition, error_code=exc.error_code)
    except StorageError:
        return _Partition(partition_index=tp.partition, error_code=ErrorCode.KAFKA_STORAGE_ERROR)
    if found is None:
        return _Partition(partition_index=tp.partition, error_code=ErrorCode.NONE)
    return _Partition(
        partition_index=tp.partition,
        error_code=ErrorCode.NONE,
        timestamp=found.timestamp,
        offset=found.offset,
        leader_epoch=found.leader_epoch,
    )


async def handle(ctx: ReplicaAccess, request: ApiRequest[ListOffsetsRequest]) -> Response:
    header, body = request.header, request.body
    seen: set[TopicPartition] = set()
    duplicates: set[TopicPartition] = set()
    for topic in body.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            (duplicates if tp in seen and header.api_version > 0 else seen).add(tp)
    answer = _answer_v0 if header.api_version == 0 else _answer
    # DESCRIBE on each topic (Kafka: TOPIC_AUTHORIZATION_FAILED for the others)
    access = ctx.broker.access
    described = access.allowed(
        request, AclOperation.DESCRIBE, ResourceType.TOPIC, [t.name for t in body.topics]
    )
    topics = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if topic.name not in described:
                partitions.append(
                    _Partition(
                        partition_index=tp.partition,
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    )
                )
            elif tp in duplicates:
                partitions.append(
                    _Partition(partition_index=tp.partition, error_code=ErrorCode.INVALID_REQUEST)
                )
            else:
                partitions.append(answer(ctx, body, tp, p))
        topics.append(
            ListOffsetsResponse.ListOffsetsTopicResponse(name=topic.name, partitions=partitions)
        )
    return make_response(header, ListOffsetsResponse(throttle_time_ms=0, topics=topics))
