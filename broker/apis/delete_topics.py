"""DeleteTopics (20), v0-6: queue topics for deletion and wait until no broker serves them.

Kafka's ZooKeeper-mode flow:

1. Only the active controller serves it; other brokers answer NOT_CONTROLLER and the
   admin client retries against the controller its Metadata names.
2. With ``delete.topic.enable`` false every topic is refused: INVALID_REQUEST for v0-2
   (which have no better code), TOPIC_DELETION_DISABLED from v3.
3. Topics are named (v0-5 by name; v6 entries by name or by topic id, not both:
   INVALID_REQUEST). An id this broker does not know is UNKNOWN_TOPIC_ID, a name not in
   its metadata cache UNKNOWN_TOPIC_OR_PARTITION.
4. Each remaining topic is queued under /admin/delete_topics (queued already: fine). If
   ``timeout_ms`` <= 0 they are answered REQUEST_TIMED_OUT at once (queued, not waited
   for). Else the response waits in a DelayedDeleteTopics until this broker's cache no
   longer has them (the controller has told every broker), within the timeout. The
   znodes and log directories go afterwards, asynchronously.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from broker.admin.topics import AdminError, queue_deletion
from broker.apis.request import ListenerRequest
from broker.apis.services import TopicAdmin
from broker.delayed.create_topics import topic_key
from broker.delayed.delete_topics import DelayedDeleteTopics
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import DeleteTopicsRequest, DeleteTopicsResponse
from protocol.primitives import ZERO_UUID

log = logging.getLogger(__name__)

Result = DeleteTopicsResponse.DeletableTopicResult


@dataclass(frozen=True)
class Entry:
    """One topic of the request: by name, or (v6) by id."""

    name: str | None
    topic_id: uuid.UUID = ZERO_UUID


def entries(body: DeleteTopicsRequest, version: int) -> list[Entry]:
    """The request's topics in order, repeats dropped (Kafka keys its answer by name)."""
    if version >= 6:
        found = [Entry(t.name, t.topic_id) for t in body.topics]
    else:
        found = [Entry(name) for name in body.topic_names]
    return list(dict.fromkeys(found))


def resolve(
    entry: Entry, name_of: Callable[[uuid.UUID], str | None], exists: Callable[[str], bool]
) -> tuple[str | None, int, str | None]:
    """``(topic name, error code, message)`` of one entry before anything is written
    (pure): NONE means the topic may be queued."""
    if entry.name is not None and entry.topic_id != ZERO_UUID:
        return (
            entry.name,
            ErrorCode.INVALID_REQUEST,
            ("You may not specify both topic name and topic id."),
        )
    if entry.name is None:
        if entry.topic_id == ZERO_UUID:
            return None, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified."
        name = name_of(entry.topic_id)
        if name is None:
            return None, ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."
    else:
        name = entry.name
    if not exists(name):
        return (
            name,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("This server does not host this topic-partition."),
        )
    return name, ErrorCode.NONE, None


def refused_code(version: int) -> int:
    """What a broker with delete.topic.enable=false answers."""
    return ErrorCode.INVALID_REQUEST if version < 3 else ErrorCode.TOPIC_DELETION_DISABLED


async def handle(
    ctx: TopicAdmin, request: ListenerRequest[DeleteTopicsRequest]
) -> Response | asyncio.Future[Response]:
    header = request.header
    version = int(header.api_version)
    wanted = entries(request.body, version)
    results = [Result(name=e.name, topic_id=e.topic_id, error_code=0) for e in wanted]

    def respond() -> Response:
        return make_response(header, DeleteTopicsResponse(throttle_time_ms=0, responses=results))

    def fail(result: Result, code: int, message: str | None) -> None:
        result.error_code = code
        result.error_message = message

    if ctx.controller.active() is None:
        for r in results:
            fail(r, ErrorCode.NOT_CONTROLLER, "This is not the controller.")
        return respond()
    if not ctx.config.get_bool("delete.topic.enable"):
        for r in results:
            fail(r, refused_code(version), "Topic deletion is disabled.")
        return respond()

    cache = ctx.metadata_cache
    access = ctx.broker.access
    queued: dict[str, Result] = {}
    for entry, result in zip(wanted, results, strict=True):
        name, code, message = resolve(entry, cache.topic_name, cache.contains_topic)
        result.name = name
        if name is not None and not access.authorize(
            request, AclOperation.DELETE, ResourceType.TOPIC, name
        ):
            fail(result, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
        elif code != ErrorCode.NONE:
            fail(result, code, message)
        elif name is not None and name in queued:
            fail(result, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
        elif name is not None:
            queued[name] = result
    zk = ctx.zk
    for name, result in list(queued.items()):
        try:
            await queue_deletion(zk, name)
        except AdminError as exc:
            fail(result, exc.error_code, exc.message)
            del queued[name]
        except Exception as exc:  # ZooKeeper failed: this topic only; the broker carries on
            log.warning("DeleteTopics: queueing %s failed: %s", name, exc)
            fail(result, ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
            del queued[name]
        else:
            log.info("topic %s queued for deletion", name)
    timeout_ms = request.body.timeout_ms
    if not queued:
        return respond()
    if timeout_ms <= 0:
        for result in queued.values():
            fail(result, ErrorCode.REQUEST_TIMED_OUT, "Deletion requested, not waited for.")
        return respond()

    future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()

    def on_done(remaining: set[str]) -> None:
        for name in sorted(remaining):
            log.warning(
                "DeleteTopics: %s still in the metadata cache after %d ms", name, timeout_ms
            )
            fail(queued[name], ErrorCode.REQUEST_TIMED_OUT, "Timed out waiting for deletion.")
        if not future.done():
            future.set_result(respond())

    operation = DelayedDeleteTopics(
        timeout_ms, list(queued), lambda t: not cache.contains_topic(t), on_done
    )
    purgatory = ctx.topic_purgatory
    purgatory.try_complete_else_watch(operation, [topic_key(name) for name in queued])
    return future
