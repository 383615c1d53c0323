"""LeaveGroup (13), v0-5: members leave a group (which then rebalances).

v0-2 name one member, and its error is the answer's; v3+ name several, each with its
``group_instance_id`` (a static member may leave by instance id alone), and the answer
carries one error per member beside the top-level one. v5 adds each member's reason
(KIP-800), which the coordinator logs.
"""

from __future__ import annotations

from broker.apis.group_answers import group_error
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from protocol import ErrorCode, Response, make_response
from protocol.messages import LeaveGroupRequest, LeaveGroupResponse


async def handle(ctx: GroupAccess, request: ListenerRequest[LeaveGroupRequest]) -> Response:
    body = request.body
    version = int(request.header.api_version)
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in body.members]
        reasons = [m.reason if version >= 5 else None for m in body.members]
    else:
        leaving = [(body.member_id, None)]
        reasons = [None]
    error = group_error(ctx, body.group_id, request)
    errors: list[int] = []
    if error == ErrorCode.NONE:
        error, errors = ctx.coordinator.leave_group(body.group_id, leaving, reasons)
    if version < 3:
        if error == ErrorCode.NONE and errors:
            error = errors[0]
        return make_response(
            request.header, LeaveGroupResponse(throttle_time_ms=0, error_code=error)
        )
    members = (
        [
            LeaveGroupResponse.MemberResponse(
                member_id=member_id, group_instance_id=instance_id, error_code=member_error
            )
            for (member_id, instance_id), member_error in zip(leaving, errors, strict=True)
        ]
        if errors
        else []
    )
    return make_response(
        request.header, LeaveGroupResponse(throttle_time_ms=0, error_code=error, members=members)
    )
