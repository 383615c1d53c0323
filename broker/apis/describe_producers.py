"""DescribeProducers (61), v0: the producers a partition's replica knows (KIP-664).

For each partition asked, this broker answers the producer state its replica's log
keeps, leader or follower (clients ask the leader unless told a broker id): for each
idempotent or transactional producer the log still knows, its id, epoch, last
sequence, the timestamp of its last batch, the coordinator epoch of its last marker,
and the first offset of its open transaction (-1 when none is open).
``kafka-transactions describe-producers`` and ``find-hanging`` read it. A partition
without a replica here is NOT_LEADER_OR_FOLLOWER; an unknown one
UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import ReplicaAccess
from broker.partition import PartitionError
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import DescribeProducersRequest, DescribeProducersResponse
from protocol.values import TopicPartition
from storage import StorageError

_Partition = DescribeProducersResponse.PartitionResponse
_State = DescribeProducersResponse.ProducerState


def describe_partition(ctx: ReplicaAccess, tp: TopicPartition) -> _Partition:
    partition = ctx.replica_manager.partition_for(tp)
    if partition is None:
        known = ctx.metadata_cache.partition(tp.topic, tp.partition) is not None
        error = ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return _Partition(partition_index=tp.partition, error_code=error, active_producers=[])
    try:
        producers = partition.active_producers()
    except PartitionError as exc:
        return _Partition(
            partition_index=tp.partition,
            error_code=exc.error_code,
            error_message=str(exc),
            active_producers=[],
        )
    except StorageError as exc:
        return _Partition(
            partition_index=tp.partition,
            error_code=ErrorCode.KAFKA_STORAGE_ERROR,
            error_message=str(exc),
            active_producers=[],
        )
    states = [
        _State(
            producer_id=p.producer_id,
            producer_epoch=p.epoch,
            last_sequence=p.last_seq,
            last_timestamp=p.last_timestamp,
            coordinator_epoch=p.coordinator_epoch,
            current_txn_start_offset=p.current_txn_first_offset,
        )
        for p in sorted(producers, key=lambda p: p.producer_id)
    ]
    return _Partition(
        partition_index=tp.partition, error_code=ErrorCode.NONE, active_producers=states
    )


async def handle(ctx: ReplicaAccess, request: ApiRequest[DescribeProducersRequest]) -> Response:
    # as Kafka: READ on each topic, TOPIC_AUTHORIZATION_FAILED for the others
    readable = ctx.broker.access.allowed(
        request, AclOperation.READ, ResourceType.TOPIC, [t.name for t in request.body.topics]
    )
    topics = [
        DescribeProducersResponse.TopicResponse(
            name=t.name,
            partitions=[
                describe_partition(ctx, TopicPartition(t.name, p))
                if t.name in readable
                else _Partition(
                    partition_index=p,
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    active_producers=[],
                )
                for p in t.partition_indexes
            ],
        )
        for t in request.body.topics
    ]
    return make_response(
        request.header, DescribeProducersResponse(throttle_time_ms=0, topics=topics)
    )
