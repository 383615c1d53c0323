"""CreatePartitions (37), v0-3: grow a topic's partition count.

Like CreateTopics, only the active controller serves it (NOT_CONTROLLER elsewhere). Each
topic's new partitions get replicas continuing Kafka's assignment pattern (or the
request's explicit assignments, which must name live brokers); the topic znode is
rewritten conditionally on its version and the controller's watch on it creates the new
partitions' states. With a positive ``timeout_ms`` the response waits, as CreateTopics'
does, until every live broker's cache has leaders for the new partitions.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Collection

from broker.admin.topics import AdminError, add_partitions, plan_partitions, read_topic
from broker.apis.create_topics import respond_when_led
from broker.apis.request import ListenerRequest
from broker.apis.services import TopicAdmin
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import CreatePartitionsRequest, CreatePartitionsResponse

log = logging.getLogger(__name__)

Result = CreatePartitionsResponse.CreatePartitionsTopicResult


async def handle(
    ctx: TopicAdmin, request: ListenerRequest[CreatePartitionsRequest]
) -> Response | asyncio.Future[Response]:
    body = request.body
    header = request.header
    names = [t.name for t in body.topics]
    results: dict[str, Result] = {}

    def respond() -> Response:
        ordered = [results[n] for n in dict.fromkeys(names)]
        return make_response(header, CreatePartitionsResponse(throttle_time_ms=0, results=ordered))

    if ctx.controller.active() is None:
        for name in names:
            results[name] = Result(name=name, error_code=ErrorCode.NOT_CONTROLLER)
        return respond()
    duplicates = {n for n in names if names.count(n) > 1}
    for name in duplicates:
        results[name] = Result(
            name=name,
            error_code=ErrorCode.INVALID_REQUEST,
            error_message="Duplicate topic in request.",
        )
    access = ctx.broker.access
    for name in dict.fromkeys(names):
        if name not in results and not access.authorize(
            request, AclOperation.ALTER, ResourceType.TOPIC, name
        ):
            results[name] = Result(name=name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    live = ctx.metadata_cache.alive_broker_ids()
    added: dict[str, Collection[int]] = {}
    for topic in body.topics:
        if topic.name in results:
            continue
        try:
            zk = ctx.zk
            current, version = await read_topic(zk, topic.name)
            # null (or empty: never meant as "zero new partitions") lets the broker assign
            assignments = topic.assignments
            manual = [a.broker_ids for a in assignments] if assignments else None
            new = plan_partitions(
                current, topic.count, manual, live_brokers=live, rng=random.Random()
            )
            if not body.validate_only:
                await add_partitions(zk, current, version, new)
                added[topic.name] = sorted(new)
                log.info("topic %s: added partitions %s", topic.name, new)
        except AdminError as exc:
            results[topic.name] = Result(
                name=topic.name, error_code=exc.error_code, error_message=exc.message
            )
            continue
        except Exception as exc:  # ZooKeeper trouble costs this topic only
            log.warning("CreatePartitions on %s failed: %s", topic.name, exc)
            results[topic.name] = Result(
                name=topic.name, error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=str(exc)
            )
            continue
        results[topic.name] = Result(name=topic.name, error_code=ErrorCode.NONE)

    # validate_only added nothing: answered at once
    return respond_when_led(
        ctx, request, added, body.timeout_ms, lambda n: _timed_out(results[n]), respond
    )


def _timed_out(result: Result) -> None:
    result.error_code = ErrorCode.REQUEST_TIMED_OUT
    result.error_message = "Timed out waiting for the new partitions to have leaders."
