"""OffsetForLeaderEpoch (23), versions 0-4: where a leader epoch ended, per partition.

Consumers (KIP-320) and followers (KIP-101) ask, after a leader change, for the end
offset of the last epoch they saw: the largest epoch the leader-epoch cache knows at or
below it, and the start offset of the epoch after it (the log end for the current one).
Unknown to the cache: epoch and offset -1, no error. ``current_leader_epoch`` fences the
caller (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); only the debugging replica id (-2)
may ask a follower. v0-1 carry no current epoch (no fencing) and v0-2 no replica id (it
reads as the spec's default, -2); v0's answer has no epoch, only the end offset.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import ReplicaAccess
from broker.partition import PartitionError
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from protocol.values import TopicPartition
from storage import StorageError

_EpochEndOffset = OffsetForLeaderEpochResponse.EpochEndOffset


def _refused(partition: int, error: int) -> OffsetForLeaderEpochResponse.EpochEndOffset:
    return _EpochEndOffset(error_code=error, partition=partition, leader_epoch=-1, end_offset=-1)


def _answer(
    ctx: ReplicaAccess,
    replica_id: int,
    topic: str,
    p: OffsetForLeaderEpochRequest.OffsetForLeaderPartition,
) -> OffsetForLeaderEpochResponse.EpochEndOffset:
    tp = TopicPartition(topic, p.partition)
    try:
        rm = ctx.replica_manager
        epoch, end_offset = rm.last_offset_for_leader_epoch(
            tp,
            p.leader_epoch,
            current_leader_epoch=p.current_leader_epoch,
            replica_id=replica_id,
        )
    except PartitionError as exc:
        error = exc.error_code
    except StorageError:
        error = ErrorCode.KAFKA_STORAGE_ERROR
    else:
        return _EpochEndOffset(
            error_code=ErrorCode.NONE,
            partition=p.partition,
            leader_epoch=epoch,
            end_offset=end_offset,
        )
    return _EpochEndOffset(error_code=error, partition=p.partition, leader_epoch=-1, end_offset=-1)


async def handle(ctx: ReplicaAccess, request: ApiRequest[OffsetForLeaderEpochRequest]) -> Response:
    header, body = request.header, request.body
    # as Kafka: a follower needs CLUSTER_ACTION on the cluster, a consumer DESCRIBE on
    # each topic
    access = ctx.broker.access
    names = [t.topic for t in body.topics]
    if body.replica_id >= 0:
        cluster_ok = access.authorize(
            request, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME
        )
        allowed = set(names) if cluster_ok else set()
        refusal = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    else:
        allowed = access.allowed(request, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
        refusal = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    topics = [
        OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(
            topic=topic.topic,
            partitions=[
                _answer(ctx, body.replica_id, topic.topic, p)
                if topic.topic in allowed
                else _refused(p.partition, refusal)
                for p in topic.partitions
            ],
        )
        for topic in body.topics
    ]
    return make_response(header, OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics))
