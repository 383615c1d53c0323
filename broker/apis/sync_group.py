"""SyncGroup (14), v0-5: the leader hands in the assignment; each member gets its share.

The answers wait until the leader's assignment is stored in ``__consumer_offsets``
(broker.group.coordinator). v3 adds ``group_instance_id``; v5 the protocol type and name,
which must be the group's (INCONSISTENT_GROUP_PROTOCOL) and are echoed back.
"""

from __future__ import annotations

import asyncio

from broker.apis.group_answers import group_error, once
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from broker.group.results import SyncResult
from protocol import ErrorCode, Response, make_response
from protocol.messages import SyncGroupRequest, SyncGroupResponse


async def handle(
    ctx: GroupAccess, request: ListenerRequest[SyncGroupRequest]
) -> Response | asyncio.Future[Response]:
    body = request.body
    version = int(request.header.api_version)
    error = group_error(ctx, body.group_id, request)
    if error != ErrorCode.NONE:
        return make_response(request.header, _response(SyncResult(error)))
    result = ctx.coordinator.sync_group(
        body.group_id,
        body.generation_id,
        body.member_id,
        body.group_instance_id if version >= 3 else None,
        body.protocol_type if version >= 5 else None,
        body.protocol_name if version >= 5 else None,
        {a.member_id: bytes(a.assignment) for a in body.assignments},
    )
    return once(result, lambda answer: make_response(request.header, _response(answer)))


def _response(result: SyncResult) -> SyncGroupResponse:
    return SyncGroupResponse(
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )
