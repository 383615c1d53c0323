"""CreateTopics and CreatePartitions handlers against fakes (no sockets, no ZooKeeper).

The response waits in a DelayedCreateTopics until the metadata cache has leaders for
every new partition: these tests feed the cache through the UpdateMetadata handler, as
the controller would, and expire waits by advancing a MockClock.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

import protocol
from broker.apis import create_partitions, create_topics, update_metadata
from broker.apis.services import HandlerServices
from broker.auth.access import AccessControl
from broker.delayed.create_topics import DelayedCreateTopics, topic_key
from broker.metadata_cache import MetadataCache
from protocol import ApiKey, ErrorCode
from protocol.acls import AclOperation, ResourceType
from protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    UpdateMetadataRequest,
)
from tests.fakes.zk import FakeZk
from tests.unit.broker.access_doubles import allowing
from tests.unit.broker.broker_helpers import HandlerRequest as Req
from tests.unit.broker.broker_helpers import metadata_topic
from tests.unit.broker.handler_services import HostsNothing, NoGroups, family_for, handler_services
from tests.unit.controller_double import controller_double
from timer import DelayedOperationPurgatory
from timer.clock import MockClock

U = UpdateMetadataRequest


async def call(handler: Any, ctx: HandlerServices, request: Req) -> Any:
    return await handler(family_for(ctx, request.header.api_key), request)


def fzk(ctx: HandlerServices) -> FakeZk:
    assert isinstance(ctx.topics.zk, FakeZk)
    return ctx.topics.zk


def make_ctx(active: bool = True, access: AccessControl | None = None) -> HandlerServices:
    clock = MockClock()
    cache = MetadataCache(0)
    return handler_services(
        props={
            "zookeeper.connect": "z:1",
            "num.partitions": "2",
            "default.replication.factor": "1",
        },
        cluster_id="cluster",
        clock=clock,
        metadata_cache=cache,
        zk=FakeZk(),
        controller=controller_double(active),
        topic_purgatory=DelayedOperationPurgatory("topic", clock=clock, reaper_enabled=False),
        replica_manager=HostsNothing(),
        group_store=NoGroups(),
        access=access,
    )


async def publish(
    ctx: HandlerServices, topics: dict[str, int], brokers: tuple[int, ...] = (0,)
) -> Any:
    """What the controller sends once leaders are elected: UpdateMetadata to this broker.
    Only this broker is live, so CreateTopics has no peer caches to wait for."""
    states = [
        metadata_topic(name, count, topic_id=fzk(ctx).topics[name][0].topic_id)
        for name, count in topics.items()
    ]
    body = U(
        controller_id=0,
        controller_epoch=1,
        broker_epoch=-1,
        topic_states=states,
        live_brokers=[
            U.UpdateMetadataBroker(
                id=b,
                endpoints=[
                    U.UpdateMetadataEndpoint(
                        port=9092 + b, host="127.0.0.1", listener="PLAINTEXT", security_protocol=0
                    )
                ],
            )
            for b in brokers
        ],
    )
    return await update_metadata.handle(ctx.replicas, Req(ApiKey.UPDATE_METADATA, 7, body))


def topic(name: str, partitions: int = -1, rf: int = -1, **kw: Any) -> Any:
    return CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf, **kw
    )


def create(
    topics: list[Any], timeout_ms: int = 5000, validate_only: bool = False, version: int = 7
) -> Req:
    body = CreateTopicsRequest(topics=topics, timeout_ms=timeout_ms, validate_only=validate_only)
    return Req(ApiKey.CREATE_TOPICS, version, body)


async def _ctx() -> HandlerServices:
    ctx = make_ctx()
    await publish(ctx, {})
    return ctx


async def test_only_the_controller_creates_topics() -> None:
    ctx = make_ctx(active=False)
    await publish(ctx, {})
    response = await call(create_topics.handle, ctx, create([topic("t")]))
    assert [t.error_code for t in response.body.topics] == [ErrorCode.NOT_CONTROLLER]
    assert fzk(ctx).topics == {}


async def test_validate_only_writes_nothing_and_describes_the_topic() -> None:
    ctx = await _ctx()
    response = await call(create_topics.handle, ctx, create([topic("t", 3, 1)], validate_only=True))
    (result,) = response.body.topics
    assert result.error_code == ErrorCode.NONE
    assert (result.num_partitions, result.replication_factor) == (3, 1)
    assert any(c.name == "retention.ms" for c in result.configs)
    assert fzk(ctx).topics == {}


async def test_the_response_waits_for_leaders_in_the_cache() -> None:
    ctx = await _ctx()
    pending = await call(
        create_topics.handle,
        ctx,
        create([topic("t", 2, 1, configs=[_config("retention.ms", "1000")])]),
    )
    assert isinstance(pending, asyncio.Future) and not pending.done()
    assignment, _ = fzk(ctx).topics["t"]
    assert sorted(assignment.partitions) == [0, 1]
    assert fzk(ctx).entity_configs[("topics", "t")] == {"retention.ms": "1000"}
    await publish(ctx, {"t": 1})  # one partition is not enough
    await asyncio.sleep(0)
    assert not pending.done()
    await publish(ctx, {"t": 2})
    response = await asyncio.wait_for(pending, 5)
    (result,) = response.body.topics
    assert result.error_code == ErrorCode.NONE
    assert result.topic_id == assignment.topic_id != uuid.UUID(int=0)
    retention = next(c for c in result.configs if c.name == "retention.ms")
    assert retention.value == "1000"


async def test_a_wait_that_times_out_answers_request_timed_out() -> None:
    ctx = await _ctx()
    pending = await call(create_topics.handle, ctx, create([topic("t", 1, 1)], timeout_ms=300))
    assert isinstance(pending, asyncio.Future)
    ctx.topics.clock.advance(301)  # type: ignore[attr-defined]
    ctx.topics.topic_purgatory.advance_clock()
    response = await asyncio.wait_for(pending, 5)
    assert response.body.topics[0].error_code == ErrorCode.REQUEST_TIMED_OUT
    assert "t" in fzk(ctx).topics  # created all the same, as in Kafka


@pytest.mark.parametrize("version", [0, 1, 7])
async def test_zero_timeout_answers_at_once(version: int) -> None:
    ctx = await _ctx()
    request = create([topic("t", 1, 1)], timeout_ms=0, version=version)
    response = await call(create_topics.handle, ctx, request)
    (result,) = response.body.topics
    assert result.error_code == ErrorCode.REQUEST_TIMED_OUT
    # as any topic that failed: no configs or sizes (Kafka resets them on every error)
    assert (result.num_partitions, result.replication_factor, result.configs) == (-1, -1, [])
    assert "t" in fzk(ctx).topics
    protocol.encode_response(response)  # the answer fits the request's version


@pytest.mark.parametrize("validate_only", [True, False])
async def test_configs_are_answered_only_to_who_may_describe_them(validate_only: bool) -> None:
    """KIP-525: CREATE on a topic does not show its configs; DESCRIBE_CONFIGS does."""
    access = allowing(
        (ResourceType.TOPIC, "seen", AclOperation.CREATE),
        (ResourceType.TOPIC, "seen", AclOperation.DESCRIBE_CONFIGS),
        (ResourceType.TOPIC, "hidden", AclOperation.CREATE),
        (ResourceType.TOPIC, "refused", AclOperation.DESCRIBE_CONFIGS),
    )
    ctx = make_ctx(access=access)
    await publish(ctx, {})
    request = create(
        [topic("seen", 2, 1), topic("hidden", 2, 1), topic("refused", 2, 1)],
        validate_only=validate_only,
    )
    answer = await call(create_topics.handle, ctx, request)
    if not validate_only:
        assert isinstance(answer, asyncio.Future)
        await publish(ctx, {"seen": 2, "hidden": 2})
        answer = await asyncio.wait_for(answer, 5)
    protocol.encode_response(answer)
    results = {t.name: t for t in answer.body.topics}
    seen, hidden, refused = results["seen"], results["hidden"], results["refused"]
    assert (seen.error_code, seen.topic_config_error_code) == (ErrorCode.NONE, ErrorCode.NONE)
    assert (seen.num_partitions, seen.replication_factor) == (2, 1)
    assert any(c.name == "retention.ms" for c in seen.configs)
    assert (hidden.error_code, hidden.topic_config_error_code) == (
        ErrorCode.NONE,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    )
    assert (hidden.num_partitions, hidden.replication_factor, hidden.configs) == (-1, -1, [])
    assert hidden.topic_id == uuid.UUID(int=0)
    # a topic not created carries no config error, whatever its DESCRIBE_CONFIGS
    assert (refused.error_code, refused.topic_config_error_code) == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.NONE,
    )
    assert set(fzk(ctx).topics) == (set() if validate_only else {"seen", "hidden"})
    if not validate_only:
        assert seen.topic_id == fzk(ctx).topics["seen"][0].topic_id != uuid.UUID(int=0)


async def test_per_topic_errors_do_not_stop_the_others() -> None:
    ctx = await _ctx()
    response = await call(create_topics.handle,
        ctx,
        create(
            [topic("dup", 1, 1), topic("dup", 1, 1), topic("bad name"), topic("big", 1, 3),
             topic("ok", 1, 1)],
            timeout_ms=0,
        ),
    )  # fmt: skip
    codes = {t.name: t.error_code for t in response.body.topics}
    assert codes == {
        "dup": ErrorCode.INVALID_REQUEST,
        "bad name": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "big": ErrorCode.INVALID_REPLICATION_FACTOR,  # one live broker
        "ok": ErrorCode.REQUEST_TIMED_OUT,
    }
    again = await call(create_topics.handle, ctx, create([topic("ok", 1, 1)], timeout_ms=0))
    assert again.body.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS


async def test_create_partitions_adds_and_waits() -> None:
    ctx = await _ctx()
    await call(create_topics.handle, ctx, create([topic("t", 1, 1)], timeout_ms=0))
    await publish(ctx, {"t": 1})
    body = CreatePartitionsRequest(
        topics=[CreatePartitionsRequest.CreatePartitionsTopic(name="t", count=3, assignments=None)],
        timeout_ms=5000,
        validate_only=False,
    )
    pending = await call(create_partitions.handle, ctx, Req(ApiKey.CREATE_PARTITIONS, 3, body))
    assert isinstance(pending, asyncio.Future)
    assignment, version = fzk(ctx).topics["t"]
    assert sorted(assignment.partitions) == [0, 1, 2] and version == 1
    await publish(ctx, {"t": 3})
    response = await asyncio.wait_for(pending, 5)
    assert response.body.results[0].error_code == ErrorCode.NONE


@pytest.mark.parametrize(("count", "code"), [(1, ErrorCode.INVALID_PARTITIONS)])
async def test_create_partitions_refusals(count: int, code: int) -> None:
    ctx = await _ctx()
    await call(create_topics.handle, ctx, create([topic("t", 2, 1)], timeout_ms=0))
    topics = [
        CreatePartitionsRequest.CreatePartitionsTopic(name="t", count=count, assignments=None),
        CreatePartitionsRequest.CreatePartitionsTopic(name="nope", count=4, assignments=None),
    ]
    body = CreatePartitionsRequest(topics=topics, timeout_ms=0, validate_only=False)
    response = await call(create_partitions.handle, ctx, Req(ApiKey.CREATE_PARTITIONS, 3, body))
    codes = {r.name: r.error_code for r in response.body.results}
    assert codes == {"t": code, "nope": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_delayed_create_topics_completes_once_with_what_was_not_ready() -> None:
    ready: dict[str, bool] = {"a": False, "b": True}
    done: list[set[str]] = []
    op = DelayedCreateTopics(1000, {"a": [0], "b": [0, 1]}, lambda t, ps: ready[t], done.append)
    clock = MockClock()
    purgatory: DelayedOperationPurgatory[DelayedCreateTopics] = DelayedOperationPurgatory(
        "topic", clock=clock, reaper_enabled=False
    )
    assert not purgatory.try_complete_else_watch(op, [topic_key("a"), topic_key("b")])
    assert purgatory.check_and_complete(topic_key("b")) == 0
    ready["a"] = True
    assert purgatory.check_and_complete(topic_key("a")) == 1
    assert done == [set()] and op.is_completed and not op.expired
    op2 = DelayedCreateTopics(100, {"a": [0], "c": [0]}, lambda t, ps: t == "a", done.append)
    purgatory.try_complete_else_watch(op2, [topic_key("c")])
    clock.advance(101)
    purgatory.advance_clock()
    assert done[-1] == {"c"} and op2.expired


def _config(name: str, value: str) -> Any:
    return CreateTopicsRequest.CreatableTopicConfig(name=name, value=value)


def test_a_peer_reports_ready_only_with_every_partition_led() -> None:
    from broker.admin.peer_metadata import reports_ready
    from protocol.messages import MetadataResponse as M

    def answer(leaders: dict[int, int], error: int = 0) -> Any:
        partitions = [
            M.MetadataResponsePartition(partition_index=p, leader_id=leader)
            for p, leader in leaders.items()
        ]
        return M(
            topics=[M.MetadataResponseTopic(name="t", error_code=error, partitions=partitions)]
        )

    assert reports_ready(answer({0: 1, 1: 2}), {"t": [0, 1]})
    assert reports_ready(answer({0: 1, 1: 2, 2: -1}), {"t": [0, 1]})  # only the new ones
    assert not reports_ready(answer({0: 1, 1: -1}), {"t": [0, 1]})
    assert not reports_ready(answer({0: 1}), {"t": [0, 1]})
    assert not reports_ready(answer({0: 1}, error=3), {"t": [0]})
    assert not reports_ready(answer({0: 1}), {"t": [0], "u": [0]})
