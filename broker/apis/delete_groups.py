"""DeleteGroups (42), v0-2: delete groups and their committed offsets.

Only an Empty group can go (NON_EMPTY_GROUP otherwise); an unknown one is
GROUP_ID_NOT_FOUND. The group's metadata and commits are tombstoned in
``__consumer_offsets`` before the answer.
"""

from __future__ import annotations

import asyncio

from broker.apis.group_answers import group_error, later
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation
from protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse

Result = DeleteGroupsResponse.DeletableGroupResult


async def handle(
    ctx: GroupAccess, request: ListenerRequest[DeleteGroupsRequest]
) -> asyncio.Future[Response]:
    names = list(dict.fromkeys(request.body.groups_names))

    async def answer() -> Response:
        results = []
        for group_id in names:
            error = (
                ErrorCode.INVALID_GROUP_ID
                if not group_id
                else group_error(ctx, group_id, request, AclOperation.DELETE)
            )
            if error == ErrorCode.NONE:
                error = await ctx.coordinator.delete_group(group_id)
            results.append(Result(group_id=group_id, error_code=error))
        return make_response(
            request.header, DeleteGroupsResponse(throttle_time_ms=0, results=results)
        )

    return later(answer())
