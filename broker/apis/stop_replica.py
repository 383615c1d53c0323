"""StopReplica (5), v0-3: stop serving (and maybe delete) replicas.

Thin: the ReplicaManager stops each partition, fencing stale controller epochs and, from
v3, stale leader epochs per partition (deleting logs in a worker thread). The versions
differ only in how partitions are listed: v0 flat with one delete flag, v1-2 grouped by
topic with one delete flag, v3 per partition with its leader epoch and delete flag.
"""

from __future__ import annotations

import logging
from typing import Any

from broker.apis import is_stale_broker_epoch
from broker.context import BrokerContext
from protocol import ErrorCode, Response, make_response
from protocol.messages import StopReplicaResponse
from protocol.values import TopicPartition

log = logging.getLogger(__name__)


def stop_entries(body: Any) -> tuple[list[tuple[str, int, bool]], dict[TopicPartition, int]]:
    """(topic, partition, delete) per partition, and leader epochs where given (v3+)."""
    entries: list[tuple[str, int, bool]] = []
    epochs: dict[TopicPartition, int] = {}
    delete_all = bool(getattr(body, "delete_partitions", False))
    for p in getattr(body, "ungrouped_partitions", None) or []:
        entries.append((p.topic_name, p.partition_index, delete_all))
    for topic in getattr(body, "topics", None) or []:
        entries.extend((topic.name, index, delete_all) for index in topic.partition_indexes)
    for topic in getattr(body, "topic_states", None) or []:
        for state in topic.partition_states:
            entries.append((topic.topic_name, state.partition_index, state.delete_partition))
            epochs[TopicPartition(topic.topic_name, state.partition_index)] = state.leader_epoch
    return entries, epochs


async def handle(ctx: BrokerContext, request: Any) -> Response:
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
