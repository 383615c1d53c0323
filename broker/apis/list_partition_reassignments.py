"""ListPartitionReassignments (46), v0: the reassignments in progress.

Only the active controller serves it (a top-level NOT_CONTROLLER elsewhere). ``topics``
null lists every ongoing reassignment; otherwise the named partitions that are being
reassigned (others, known or not, are left out, as Kafka does). Each entry gives the
partition's current replica set (targets first, then the replicas being removed) and the
replicas being added and removed.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import ClusterAdmin
from protocol import ErrorCode, Response, make_response
from protocol.messages import ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse
from protocol.values import TopicPartition

Ongoing = ListPartitionReassignmentsResponse.OngoingPartitionReassignment


async def handle(
    ctx: ClusterAdmin, request: ApiRequest[ListPartitionReassignmentsRequest]
) -> Response:
    topics = request.body.topics
    wanted = (
        None
        if topics is None
        else [TopicPartition(t.name, p) for t in topics for p in t.partition_indexes]
    )
    controller = ctx.controller.active()
    ongoing = None
    if controller is not None:
        ongoing = await controller.list_partition_reassignments(wanted)
    if ongoing is None:
        body = ListPartitionReassignmentsResponse(
            error_code=ErrorCode.NOT_CONTROLLER,
            error_message="This is not the correct controller for this cluster.",
        )
        return make_response(request.header, body)
    by_topic: dict[str, list[Ongoing]] = {}
    for tp, assignment in sorted(ongoing.items()):
        by_topic.setdefault(tp.topic, []).append(
            Ongoing(
                partition_index=tp.partition,
                replicas=list(assignment.replicas),
                adding_replicas=list(assignment.adding),
                removing_replicas=list(assignment.removing),
            )
        )
    body = ListPartitionReassignmentsResponse(
        error_code=ErrorCode.NONE,
        topics=[
            ListPartitionReassignmentsResponse.OngoingTopicReassignment(name=n, partitions=parts)
            for n, parts in by_topic.items()
        ],
    )
    return make_response(request.header, body)
