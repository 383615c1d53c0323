"""AlterPartitionReassignments (45), v0: start, replace or cancel partition reassignments.

Only the active controller serves it (a top-level NOT_CONTROLLER elsewhere; the client
asks again wherever /controller points). Each partition names its target replicas, or
null to cancel the reassignment in progress. The controller (controller.reassigner)
validates and starts each one and answers per partition: UNKNOWN_TOPIC_OR_PARTITION,
INVALID_REPLICA_ASSIGNMENT (an empty list, a broker twice, a negative id, a new replica on
a broker that is not alive), NO_REASSIGNMENT_IN_PROGRESS (a cancel with nothing to
cancel). The answer comes once the reassignments have started, not when they complete:
ListPartitionReassignments follows them.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import ClusterAdmin
from protocol import ErrorCode, Response, make_response
from protocol.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from protocol.values import TopicPartition

TopicResult = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
PartitionResult = AlterPartitionReassignmentsResponse.ReassignablePartitionResponse


def requested_targets(
    body: AlterPartitionReassignmentsRequest,
) -> dict[TopicPartition, tuple[int, ...] | None]:
    """Partition -> target replicas (None: cancel), in request order; a partition named
    twice keeps its last entry."""
    return {
        TopicPartition(topic.name, p.partition_index): (
            None if p.replicas is None else tuple(p.replicas)
        )
        for topic in body.topics
        for p in topic.partitions
    }


async def handle(
    ctx: ClusterAdmin, request: ApiRequest[AlterPartitionReassignmentsRequest]
) -> Response:
    controller = ctx.controller.active()
    outcomes = None
    if controller is not None:
        outcomes = await controller.alter_partition_reassignments(requested_targets(request.body))
    if outcomes is None:
        body = AlterPartitionReassignmentsResponse(
            error_code=ErrorCode.NOT_CONTROLLER,
            error_message="This is not the correct controller for this cluster.",
        )
        return make_response(request.header, body)
    by_topic: dict[str, list[PartitionResult]] = {}
    for tp, error in outcomes.items():
        by_topic.setdefault(tp.topic, []).append(
            PartitionResult(
                partition_index=tp.partition,
                error_code=ErrorCode.NONE if error is None else error.error_code,
                error_message=None if error is None else error.message,
            )
        )
    order = {tp: i for i, tp in enumerate(requested_targets(request.body))}
    responses = [
        TopicResult(
            name=name,
            partitions=sorted(parts, key=lambda r: order[TopicPartition(name, r.partition_index)]),
        )
        for name, parts in by_topic.items()
    ]
    return make_response(
        request.header,
        AlterPartitionReassignmentsResponse(error_code=ErrorCode.NONE, responses=responses),
    )
