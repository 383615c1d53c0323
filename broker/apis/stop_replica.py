"""StopReplica (5), v0-3: stop serving (and maybe delete) replicas.

Thin: the ReplicaManager stops each partition, fencing stale controller epochs and, from
v3, stale leader epochs per partition (deleting logs in a worker thread). The versions
differ only in how partitions are listed: v0 flat with one delete flag, v1-2 grouped by
topic with one delete flag, v3 per partition with its leader epoch and delete flag.
"""

from __future__ import annotations

import logging

from broker.apis.epochs import is_stale_broker_epoch
from broker.apis.request import ApiRequest
from broker.apis.services import ReplicaAccess
from protocol import ErrorCode, Response, make_response
from protocol.messages import StopReplicaRequest, StopReplicaResponse
from protocol.values import TopicPartition

log = logging.getLogger(__name__)


def stop_entries(
    body: StopReplicaRequest,
) -> tuple[list[tuple[str, int, bool]], dict[TopicPartition, int]]:
    """(topic, partition, delete) per partition, and leader epochs where given (v3+)."""
    entries: list[tuple[str, int, bool]] = []
    epochs: dict[TopicPartition, int] = {}
    delete_all = body.delete_partitions
    for p in body.ungrouped_partitions:
        entries.append((p.topic_name, p.partition_index, delete_all))
    for v1_topic in body.topics:
        entries.extend((v1_topic.name, i, delete_all) for i in v1_topic.partition_indexes)
    for topic in body.topic_states:
        for state in topic.partition_states:
            entries.append((topic.topic_name, state.partition_index, state.delete_partition))
            epochs[TopicPartition(topic.topic_name, state.partition_index)] = state.leader_epoch
    return entries, epochs


async def handle(ctx: ReplicaAccess, request: ApiRequest[StopReplicaRequest]) -> Response:
    body = request.body
    if is_stale_broker_epoch(ctx, body.broker_epoch):
        return make_response(
            request.header, StopReplicaResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
        )
    rm = ctx.replica_manager
    if rm.is_stale_controller_epoch(body.controller_epoch):
        log.warning("StopReplica with stale controller epoch %s", body.controller_epoch)
        return make_response(
            request.header, StopReplicaResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH)
        )
    entries, epochs = stop_entries(body)
    errors = await rm.stop_replicas(body.controller_epoch, entries, epochs, body.controller_id)
    response = StopReplicaResponse(
        error_code=ErrorCode.NONE,
        partition_errors=[
            StopReplicaResponse.StopReplicaPartitionError(
                topic_name=topic, partition_index=partition, error_code=code
            )
            for (topic, partition), code in sorted(errors.items())
        ],
    )
    return make_response(request.header, response)
