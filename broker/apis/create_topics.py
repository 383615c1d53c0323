"""CreateTopics (19), v0-7: validate, assign replicas, write to ZooKeeper, wait for leaders.

Kafka's ZooKeeper-mode flow (docs/architecture.md, "Request paths"):

1. Only the active controller creates topics; other brokers answer NOT_CONTROLLER and the
   admin client retries against the controller its Metadata names.
2. Each topic is validated and given a replica assignment over the live brokers
   (broker.admin); names repeated within one request get INVALID_REQUEST.
3. ``validate_only``: answer now with what would be created, writing nothing.
4. Otherwise write each topic (config and assignment, one multi-op, a new topic id).
5. If ``timeout_ms`` <= 0 the written topics are answered REQUEST_TIMED_OUT at once
   (created, but not waited for). Else the response waits in a DelayedCreateTopics until
   this broker's cache has leaders for every new partition, then until every other live
   broker's cache has them (broker.admin.peer_metadata), within the same timeout; a topic
   still not ready gets REQUEST_TIMED_OUT.

v0 has no ``validate_only`` (v1+) and its answer no error message; v5+ answers carry the
partition count, replication factor and configuration; v7 the topic id.

A topic's configuration is its own resource (KIP-525): creating a topic does not entitle
the creator to read it back. With the authorizer on, a created (or validated) topic whose
configs the principal may not DESCRIBE_CONFIGS answers without them: no configs, no
partition count or replication factor, no topic id, and TOPIC_AUTHORIZATION_FAILED in
``topic_config_error_code`` while its ``error_code`` says it was created. A topic that
failed answers without configs anyway, with no config error.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Collection, Mapping

from broker.admin.peer_metadata import wait_for_peers
from broker.admin.topics import AdminError, TopicPlan, create_topics, existing_topics, plan_topic
from broker.apis.request import ListenerRequest
from broker.apis.services import TopicAdmin
from broker.config import describe_topic_config
from broker.delayed.create_topics import DelayedCreateTopics, topic_key
from broker.metadata_cache import MetadataCache
from broker.security.inter_broker import inter_broker_security
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.api import api_name
from protocol.messages import CreateTopicsRequest, CreateTopicsResponse

log = logging.getLogger(__name__)

Result = CreateTopicsResponse.CreatableTopicResult
ConfigResult = CreateTopicsResponse.CreatableTopicConfigs


async def handle(
    ctx: TopicAdmin, request: ListenerRequest[CreateTopicsRequest]
) -> Response | asyncio.Future[Response]:
    body = request.body
    header = request.header
    names = [t.name for t in body.topics]
    results: dict[str, Result] = {}

    def respond() -> Response:
        ordered = [results[n] for n in dict.fromkeys(names)]
        return make_response(header, CreateTopicsResponse(throttle_time_ms=0, topics=ordered))

    if ctx.controller.active() is None:
        for name in names:
            results[name] = _error(name, ErrorCode.NOT_CONTROLLER, "This is not the controller.")
        return respond()

    duplicates = sorted({n for n in names if names.count(n) > 1})
    for name in duplicates:
        results[name] = _error(
            name,
            ErrorCode.INVALID_REQUEST,
            f"Create topics request from client `{header.client_id}` contains multiple "
            f"entries for the following topics: {', '.join(duplicates)}",
        )

    access = ctx.broker.access
    if access.enabled and not access.authorize(
        request, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME, quiet=True
    ):
        for name in dict.fromkeys(names):
            if name not in results and not access.authorize(
                request, AclOperation.CREATE, ResourceType.TOPIC, name
            ):
                results[name] = _error(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)

    # KIP-525: the created topic's configs are answered only to who may read them (a
    # filter, not a refusal: quiet, as Kafka does not log these denials)
    described = access.allowed(
        request, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names, quiet=True
    )

    plans: dict[str, TopicPlan] = {}
    try:
        existing = set(await existing_topics(ctx.zk))
    except Exception as exc:  # ZooKeeper unreachable: every topic fails, the broker carries on
        log.warning("CreateTopics: listing topics failed: %s", exc)
        for name in names:
            results.setdefault(name, _error(name, ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)))
        return respond()
    live = ctx.metadata_cache.alive_broker_ids()
    for topic in body.topics:
        if topic.name in results:
            continue
        try:
            plan = plan_topic(
                topic.name,
                topic.num_partitions,
                topic.replication_factor,
                {a.partition_index: list(a.broker_ids) for a in topic.assignments},
                {c.name: c.value for c in topic.configs},
                live_brokers=live,
                existing_topics=existing,
                default_partitions=ctx.config.get_int("num.partitions"),
                default_replication_factor=ctx.config.get_int("default.replication.factor"),
                rng=random.Random(),
            )
        except AdminError as exc:
            results[topic.name] = _error(topic.name, exc.error_code, exc.message)
            continue
        plans[topic.name] = plan
        existing.add(topic.name)

    if body.validate_only:
        for name, plan in plans.items():
            results[name] = _success(ctx, plan, name in described)
        return respond()

    # every topic's znodes in flight together: a hundred topics cost a few round trips
    written = await create_topics(ctx.zk, list(plans.values())) if plans else {}
    for name, plan in plans.items():
        failure = written[name]
        if isinstance(failure, AdminError):
            results[name] = _error(name, failure.error_code, failure.message)
            continue
        if failure is not None:  # a failed write costs this topic only
            log.warning("CreateTopics: writing %s failed: %s", name, failure)
            results[name] = _error(name, ErrorCode.UNKNOWN_SERVER_ERROR, str(failure))
            continue
        results[name] = _success(ctx, plan, name in described)
        log.info(
            "created topic %s (id %s) with assignment %s", name, plan.topic_id, plan.assignment
        )
    created: dict[str, Collection[int]] = {
        n: range(p.num_partitions) for n, p in plans.items() if results[n].error_code == 0
    }
    return respond_when_led(
        ctx, request, created, body.timeout_ms, lambda n: _timed_out(results[n]), respond
    )


def respond_when_led(
    ctx: TopicAdmin,
    request: ListenerRequest[object],
    pending: Mapping[str, Collection[int]],
    timeout_ms: int,
    timed_out: Callable[[str], None],
    respond: Callable[[], Response],
) -> Response | asyncio.Future[Response]:
    """Answer a request that created topics or partitions (CreatePartitions too).

    Nothing in ``pending`` (topic -> new partitions): answer now. ``timeout_ms`` <= 0:
    answer now, every topic marked ``timed_out`` (created, not waited for). Otherwise a
    Future, answered once each topic has leaders in this broker's cache (a
    DelayedCreateTopics) and then in every other live broker's (peer probes on the
    inter-broker listener), within ``timeout_ms``; a topic that misses it is marked.
    ``respond()`` builds the response.

    Peers are probed on the inter-broker listener, not the request's: a client listener
    may be advertised at an address only clients reach (127.0.0.1 and a port a container
    publishes, in the compose stack), while brokers reach each other on the inter-broker
    one by definition. A broker's metadata cache is the same whichever listener asks."""
    if not pending:
        return respond()
    if timeout_ms <= 0:
        for name in pending:
            timed_out(name)
        return respond()
    listener = ctx.config.inter_broker_listener_name
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Response] = loop.create_future()
    deadline = ctx.clock.monotonic_ms() + timeout_ms
    cache = ctx.metadata_cache

    async def confirm_with_peers(ready: dict[str, Collection[int]]) -> None:
        peers = {
            b.id: ep
            for b in cache.alive_brokers()
            if b.id != ctx.broker_id and (ep := b.endpoint(listener)) is not None
        }
        try:
            if ready and peers:
                missing = await wait_for_peers(
                    peers,
                    ready,
                    ctx.clock,
                    deadline,
                    security=inter_broker_security(ctx.config),
                    client_id=f"broker-{ctx.broker_id}",
                )
                if missing:
                    log.warning("brokers %s did not learn of %s in time", sorted(missing), ready)
                    for name in ready:
                        timed_out(name)
        finally:
            if not future.done():
                future.set_result(respond())

    def on_done(not_ready: set[str]) -> None:
        for name in sorted(not_ready):
            log.warning(
                "%s v%d from %r: topic %s answered REQUEST_TIMED_OUT after %d ms: %s",
                api_name(int(request.header.api_key)),
                request.header.api_version,
                request.header.client_id,
                name,
                timeout_ms,
                why_not_led(cache, name, pending[name]),
            )
            timed_out(name)
        ready = {n: ps for n, ps in pending.items() if n not in not_ready}
        # held by the family's tasks, cancelled at shutdown (the answer then goes at once)
        ctx.tasks.spawn(confirm_with_peers(ready), name="create-topics-peers")

    operation = DelayedCreateTopics(timeout_ms, pending, cache.has_leaders, on_done)
    purgatory = ctx.topic_purgatory
    purgatory.try_complete_else_watch(operation, [topic_key(name) for name in pending])
    return future


def why_not_led(cache: MetadataCache, topic: str, partitions: Collection[int]) -> str:
    """What this broker's cache lacks for ``topic`` to count as created (for the log)."""
    controller = cache.controller_id
    if controller is None:
        return "no controller has sent this broker metadata yet"
    if cache.partitions(topic) is None:
        return f"the controller (broker {controller}) has not sent the topic's metadata yet"
    leaderless = sorted(p for p in partitions if cache.leader(topic, p) is None)
    return (
        f"partitions {leaderless} have no live leader in this broker's cache "
        f"(controller: broker {controller})"
    )


def _error(name: str, code: int, message: str | None) -> Result:
    return Result(
        name=name,
        error_code=code,
        error_message=message,
        num_partitions=-1,
        replication_factor=-1,
        configs=None,
    )


def _timed_out(result: Result) -> None:
    """Created but not led in time: as any failed topic, answered without its configs."""
    result.error_code = ErrorCode.REQUEST_TIMED_OUT
    result.error_message = "Timed out waiting for the topic's partitions to have leaders."
    result.num_partitions = -1
    result.replication_factor = -1
    result.configs = []
    result.topic_config_error_code = ErrorCode.NONE


def _success(ctx: TopicAdmin, plan: TopicPlan, configs_described: bool) -> Result:
    """A created (or validated) topic's answer; ``configs_described``: whether the request
    may DESCRIBE_CONFIGS it, else its configs, sizes and id are withheld (KIP-525)."""
    if not configs_described:
        return Result(
            name=plan.name,
            error_code=ErrorCode.NONE,
            error_message=None,
            topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            num_partitions=-1,
            replication_factor=-1,
            configs=[],
        )
    return Result(
        name=plan.name,
        topic_id=plan.topic_id,
        error_code=ErrorCode.NONE,
        error_message=None,
        num_partitions=plan.num_partitions,
        replication_factor=plan.replication_factor,
        configs=[
            ConfigResult(
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                config_source=int(e.source),
                is_sensitive=e.is_sensitive,
            )
            for e in describe_topic_config(ctx.config, plan.configs)
        ],
    )
