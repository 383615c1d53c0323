"""JoinGroup (11), v0-9: join or rejoin a group; the answer may wait for the rebalance.

v0 has no rebalance timeout (the session timeout serves as one). From v4 a member
joining without a member id is given one and told to rejoin with it
(MEMBER_ID_REQUIRED), unless it is a static member (v5+ ``group_instance_id``). The
leader's answer lists every member's metadata for the chosen protocol; v7 adds the
protocol type and makes the protocol name nullable. v8 carries the client's reason for
joining (KIP-800), which the coordinator logs; v9 lets a static leader that replaced
itself in a Stable group be told so with ``skip_assignment`` (KIP-814): it gets the
members but keeps the group's assignment, where older versions are told another leader.
"""

from __future__ import annotations

import asyncio

from broker.apis.group_answers import client_host, group_error, once
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from broker.group.results import JoinRequest, JoinResult
from protocol import ErrorCode, Response, make_response
from protocol.messages import JoinGroupRequest, JoinGroupResponse


async def handle(
    ctx: GroupAccess, request: ListenerRequest[JoinGroupRequest]
) -> Response | asyncio.Future[Response]:
    body = request.body
    version = int(request.header.api_version)
    error = group_error(ctx, body.group_id, request)
    if error != ErrorCode.NONE:
        return make_response(request.header, _response(JoinResult(error, body.member_id), version))
    join = JoinRequest(
        group_id=body.group_id,
        member_id=body.member_id,
        group_instance_id=body.group_instance_id if version >= 5 else None,
        client_id=request.header.client_id or "",
        client_host=client_host(request),
        session_timeout_ms=body.session_timeout_ms,
        rebalance_timeout_ms=body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms,
        protocol_type=body.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in body.protocols],
        require_known_member_id=version >= 4,
        supports_skip_assignment=version >= 9,
        reason=body.reason if version >= 8 else None,
    )
    return once(
        ctx.coordinator.join_group(join),
        lambda result: make_response(request.header, _response(result, version)),
    )


def _response(result: JoinResult, version: int) -> JoinGroupResponse:
    name = result.protocol_name
    if name is None and version < 7:
        name = ""  # nullable from v7 only
    return JoinGroupResponse(
        throttle_time_ms=0,
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=name,
        leader=result.leader_id,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata
            )
            for m in result.members
        ],
    )
