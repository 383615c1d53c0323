"""What the group handlers share: whether this broker coordinates a group, and answering
later.

Every group API is served by ``ctx.coordinator`` (broker.group.coordinator) after
the store says this broker coordinates the group (``coordinator_error``). Answers that
wait (a parked JoinGroup, a commit waiting for acks=all) are returned as a Future
(``once``, or ``later`` for a handler's own coroutine), which the network treats as any
deferred response: the handler's slot is freed meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from broker.apis.services import GroupAccess
from protocol import ErrorCode, Response
from protocol.acls import AclOperation, ResourceType

R = TypeVar("R")


def group_error(
    ctx: GroupAccess, group_id: str, request: object, operation: AclOperation = AclOperation.READ
) -> int:
    """NONE when the request may ``operation`` the group (GROUP_AUTHORIZATION_FAILED
    otherwise, checked first as Kafka does) and this broker coordinates ``group_id``
    (loaded); else the error to answer."""
    if not ctx.broker.access.authorize(request, operation, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return ctx.coordinator.store.coordinator_error(group_id)


def later(answer: Awaitable[Response]) -> asyncio.Future[Response]:
    """A response that is ready once ``answer`` is."""
    return asyncio.ensure_future(answer)


def once(
    result: asyncio.Future[R], respond: Callable[[R], Response]
) -> Response | asyncio.Future[Response]:
    """``respond(result)``: now when the coordinator answered at once (most requests),
    else a Future of it, completed when ``result`` is."""
    if result.done():
        return respond(result.result())
    response: asyncio.Future[Response] = asyncio.get_running_loop().create_future()

    def deliver(done: asyncio.Future[R]) -> None:
        if response.done():
            return
        if done.cancelled():
            response.cancel()
            return
        try:
            response.set_result(respond(done.result()))
        except Exception as exc:  # handed to the network, which answers with an error
            response.set_exception(exc)

    result.add_done_callback(deliver)
    return response


def client_host(request: object) -> str:
    """The client's address as Kafka reports it ("/127.0.0.1"), when the network knows it."""
    host = getattr(request, "client_host", "")
    return f"/{host}" if isinstance(host, str) and host else ""
