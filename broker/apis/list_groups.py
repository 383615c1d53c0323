"""ListGroups (16), v0-4: the groups this broker coordinates; v4 filters by state.

Each broker lists only its own groups (those of the offsets partitions it leads); the
admin client asks every broker and merges. A state filter matches names in any case.
While any offsets partition is still loading the answer is COORDINATOR_LOAD_IN_PROGRESS
with no groups, as Kafka answers.
"""

from __future__ import annotations

from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import ListGroupsRequest, ListGroupsResponse


async def handle(ctx: GroupAccess, request: ListenerRequest[ListGroupsRequest]) -> Response:
    states = request.body.states_filter if int(request.header.api_version) >= 4 else []
    if ctx.coordinator.store.loading_partitions:
        # a partial list would hide groups: the client asks again
        response = ListGroupsResponse(
            throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, groups=[]
        )
        return make_response(request.header, response)
    groups = [
        ListGroupsResponse.ListedGroup(
            group_id=g.group_id, protocol_type=g.protocol_type or "", group_state=g.state.value
        )
        for g in ctx.coordinator.list_groups(states)
    ]
    # as Kafka: DESCRIBE on the cluster lists every group, else those it may describe
    access = ctx.broker.access
    if access.enabled and not access.authorize(
        request, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME, quiet=True
    ):
        visible = access.allowed(
            request,
            AclOperation.DESCRIBE,
            ResourceType.GROUP,
            [g.group_id for g in groups],
            quiet=True,
        )
        groups = [g for g in groups if g.group_id in visible]
    response = ListGroupsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, groups=groups)
    return make_response(request.header, response)
