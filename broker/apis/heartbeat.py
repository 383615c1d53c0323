"""Heartbeat (12), v0-4: a member says it is alive; the answer says whether to rejoin.

REBALANCE_IN_PROGRESS tells the member to rejoin, ILLEGAL_GENERATION and
UNKNOWN_MEMBER_ID that it is out of the group; v3 adds ``group_instance_id``
(FENCED_INSTANCE_ID for a replaced static member).
"""

from __future__ import annotations

from broker.apis.group_answers import group_error
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from protocol import ErrorCode, Response, make_response
from protocol.messages import HeartbeatRequest, HeartbeatResponse


async def handle(ctx: GroupAccess, request: ListenerRequest[HeartbeatRequest]) -> Response:
    body = request.body
    error = group_error(ctx, body.group_id, request)
    if error == ErrorCode.NONE:
        instance = body.group_instance_id if int(request.header.api_version) >= 3 else None
        error = ctx.coordinator.heartbeat(
            body.group_id, body.member_id, instance, body.generation_id
        )
    return make_response(request.header, HeartbeatResponse(throttle_time_ms=0, error_code=error))
