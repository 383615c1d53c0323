"""DescribeGroups (15), v0-5: each group's state, protocol and members.

Members' metadata and assignments are reported only while the group is Stable (in the
middle of a rebalance they are not settled). A group this broker coordinates but does
not know is reported Dead with no error, as Kafka does; a group it does not coordinate
carries the coordinator error. v3+ report the authorized operations when asked (every
group operation: there are no ACLs), -2^31 otherwise; v4 adds ``group_instance_id``.
"""

from __future__ import annotations

from broker.apis.group_answers import group_error
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import DescribeGroupsRequest, DescribeGroupsResponse
from protocol.values import AUTHORIZED_OPERATIONS_OMITTED

Described = DescribeGroupsResponse.DescribedGroup
Member = DescribeGroupsResponse.DescribedGroupMember

#: Kafka's ACL operations that apply to a group, as a bit set: READ (3), DELETE (6),
#: DESCRIBE (8)
GROUP_ACL_OPERATIONS = (AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE)
GROUP_OPERATIONS = sum(1 << op for op in GROUP_ACL_OPERATIONS)


async def handle(ctx: GroupAccess, request: ListenerRequest[DescribeGroupsRequest]) -> Response:
    body = request.body
    operations = (
        GROUP_OPERATIONS if body.include_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED
    )
    access = ctx.broker.access
    described = []
    for group_id in body.groups:
        error = group_error(ctx, group_id, request, AclOperation.DESCRIBE)
        if error != ErrorCode.NONE:
            described.append(
                Described(error_code=error, group_id=group_id, group_state="", protocol_type="",
                          protocol_data="", members=[],
                          authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
            )  # fmt: skip
            continue
        summary = ctx.coordinator.describe_group(group_id)
        described.append(
            Described(
                error_code=ErrorCode.NONE,
                group_id=group_id,
                group_state=summary.state.value,
                protocol_type=summary.protocol_type,
                protocol_data=summary.protocol_name,
                members=[
                    Member(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata,
                        member_assignment=m.assignment,
                    )
                    for m in summary.members
                ],
                authorized_operations=operations
                if operations == AUTHORIZED_OPERATIONS_OMITTED or not access.enabled
                else access.authorized_operations(
                    request, ResourceType.GROUP, group_id, GROUP_ACL_OPERATIONS
                ),
            )
        )
    return make_response(
        request.header, DescribeGroupsResponse(throttle_time_ms=0, groups=described)
    )
