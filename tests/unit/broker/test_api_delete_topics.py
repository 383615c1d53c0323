"""The DeleteTopics handler against fakes (no sockets, no ZooKeeper).

The metadata cache is fed through the UpdateMetadata handler as the controller would: a
topic appears with leaders, and leaves with leader -2 once its deletion started, which is
what a waiting DeleteTopics response is answered on. Timeouts expire by advancing a
MockClock.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from broker.apis import delete_topics, update_metadata
from broker.apis.services import HandlerServices
from protocol import ApiKey, ErrorCode
from protocol.messages import DeleteTopicsRequest, UpdateMetadataRequest
from protocol.primitives import ZERO_UUID
from protocol.values import LEADER_DURING_DELETE
from tests.fakes.zk import FakeZk
from tests.unit.broker.broker_helpers import HandlerRequest as Req
from tests.unit.broker.broker_helpers import metadata_topic
from tests.unit.broker.handler_services import HostsNothing, NoGroups, handler_services
from tests.unit.controller_double import controller_double
from timer import DelayedOperationPurgatory
from timer.clock import MockClock

U = UpdateMetadataRequest
IDS = {"a": uuid.uuid4(), "b": uuid.uuid4()}


def zk_with_topics(names: set[str]) -> FakeZk:
    zk = FakeZk()
    for name in sorted(names):
        zk.add_topic(name, topic_id=IDS[name])
    return zk


def make_ctx(active: bool = True, enabled: bool = True) -> HandlerServices:
    clock = MockClock()
    props = {"zookeeper.connect": "z:1", "delete.topic.enable": str(enabled).lower()}
    return handler_services(
        props=props,
        cluster_id="cluster",
        clock=clock,
        zk=zk_with_topics(set(IDS)),
        controller=controller_double(active),
        topic_purgatory=DelayedOperationPurgatory("topic", clock=clock, reaper_enabled=False),
        replica_manager=HostsNothing(),
        group_store=NoGroups(),
    )


async def publish(ctx: HandlerServices, topics: list[str], leader: int = 0) -> None:
    """UpdateMetadata for one partition of each topic (leader -2: deleted)."""
    body = U(
        controller_id=0,
        controller_epoch=1,
        broker_epoch=-1,
        topic_states=[
            metadata_topic(name, 1, leader=leader, topic_id=IDS[name]) for name in topics
        ],
        live_brokers=[
            U.UpdateMetadataBroker(
                id=0,
                endpoints=[
                    U.UpdateMetadataEndpoint(
                        port=9092, host="127.0.0.1", listener="PLAINTEXT", security_protocol=0
                    )
                ],
            )
        ],
    )
    await update_metadata.handle(ctx.replicas, Req(ApiKey.UPDATE_METADATA, 7, body))


def by_name(*names: str, version: int = 5, timeout_ms: int = 5000) -> Req:
    body = DeleteTopicsRequest(topic_names=list(names), timeout_ms=timeout_ms)
    return Req(ApiKey.DELETE_TOPICS, version, body)


def by_state(*entries: tuple[str | None, uuid.UUID], timeout_ms: int = 5000) -> Req:
    S = DeleteTopicsRequest.DeleteTopicState
    body = DeleteTopicsRequest(
        topics=[S(name=n, topic_id=i) for n, i in entries], timeout_ms=timeout_ms
    )
    return Req(ApiKey.DELETE_TOPICS, 6, body)


def codes(response: Any) -> dict[str | None, int]:
    assert not isinstance(response, asyncio.Future), "answered at once"
    return {r.name: r.error_code for r in response.body.responses}


def queued(ctx: HandlerServices) -> list[str]:
    zk = ctx.topics.zk
    assert isinstance(zk, FakeZk)
    return zk.queued_deletions


async def test_a_broker_that_is_not_the_controller_refuses() -> None:
    ctx = make_ctx(active=False)
    await publish(ctx, ["a"])
    response = await delete_topics.handle(ctx.topics, by_name("a"))
    assert codes(response) == {"a": ErrorCode.NOT_CONTROLLER}
    assert queued(ctx) == []


@pytest.mark.parametrize(
    ("version", "code"),
    [
        (0, ErrorCode.INVALID_REQUEST),
        (1, ErrorCode.INVALID_REQUEST),
        (2, ErrorCode.INVALID_REQUEST),
        (3, ErrorCode.TOPIC_DELETION_DISABLED),
        (5, ErrorCode.TOPIC_DELETION_DISABLED),
    ],
)
async def test_with_deletion_disabled_every_topic_is_refused(version: int, code: int) -> None:
    ctx = make_ctx(enabled=False)
    await publish(ctx, ["a"])
    response = await delete_topics.handle(ctx.topics, by_name("a", version=version))
    assert codes(response) == {"a": code}
    assert queued(ctx) == []


async def test_the_answer_waits_until_the_cache_has_dropped_the_topics() -> None:
    ctx = make_ctx()
    await publish(ctx, ["a", "b"])
    pending = await delete_topics.handle(ctx.topics, by_name("a", "b"))
    assert isinstance(pending, asyncio.Future) and not pending.done()
    assert queued(ctx) == ["a", "b"]
    await publish(ctx, ["a"], leader=LEADER_DURING_DELETE)
    assert not pending.done()  # b is still served
    await publish(ctx, ["b"], leader=LEADER_DURING_DELETE)
    assert pending.done()
    assert codes(pending.result()) == {"a": ErrorCode.NONE, "b": ErrorCode.NONE}


async def test_a_topic_still_cached_at_the_timeout_is_request_timed_out() -> None:
    ctx = make_ctx()
    await publish(ctx, ["a"])
    pending = await delete_topics.handle(ctx.topics, by_name("a", timeout_ms=100))
    assert isinstance(pending, asyncio.Future)
    clock = ctx.topics.clock
    assert isinstance(clock, MockClock)
    clock.advance(200)
    ctx.topics.topic_purgatory.advance_clock()
    assert codes(pending.result()) == {"a": ErrorCode.REQUEST_TIMED_OUT}
    assert queued(ctx) == ["a"]  # queued all the same: the deletion goes on


async def test_timeout_zero_queues_and_answers_at_once() -> None:
    ctx = make_ctx()
    await publish(ctx, ["a"])
    response = await delete_topics.handle(ctx.topics, by_name("a", timeout_ms=0))
    assert codes(response) == {"a": ErrorCode.REQUEST_TIMED_OUT}
    assert queued(ctx) == ["a"]


async def test_unknown_names_and_ids_and_malformed_entries() -> None:
    ctx = make_ctx()
    await publish(ctx, ["a", "b"])
    unknown = uuid.uuid4()
    response = await delete_topics.handle(
        ctx.topics,
        by_state(("a", IDS["a"]), (None, unknown), ("nope", ZERO_UUID), (None, ZERO_UUID)),
    )
    assert not isinstance(response, asyncio.Future)
    results = [(r.name, r.topic_id, r.error_code) for r in response.body.responses]
    assert results == [
        ("a", IDS["a"], ErrorCode.INVALID_REQUEST),  # a name and an id: refused
        (None, unknown, ErrorCode.UNKNOWN_TOPIC_ID),
        ("nope", ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (None, ZERO_UUID, ErrorCode.INVALID_REQUEST),
    ]
    assert queued(ctx) == []


async def test_a_topic_by_id_is_deleted_and_answered_with_its_name() -> None:
    ctx = make_ctx()
    await publish(ctx, ["a", "b"])
    pending = await delete_topics.handle(ctx.topics, by_state((None, IDS["b"])))
    assert queued(ctx) == ["b"]
    await publish(ctx, ["b"], leader=LEADER_DURING_DELETE)
    assert isinstance(pending, asyncio.Future)
    (result,) = pending.result().body.responses
    assert (result.name, result.topic_id, result.error_code) == ("b", IDS["b"], ErrorCode.NONE)


async def test_a_topic_queued_already_is_waited_for_again() -> None:
    ctx = make_ctx()
    await publish(ctx, ["a"])
    first = await delete_topics.handle(ctx.topics, by_name("a"))
    second = await delete_topics.handle(ctx.topics, by_name("a", "a"))
    assert queued(ctx) == ["a"]
    await publish(ctx, ["a"], leader=LEADER_DURING_DELETE)
    assert isinstance(first, asyncio.Future) and isinstance(second, asyncio.Future)
    assert codes(first.result()) == codes(second.result()) == {"a": ErrorCode.NONE}


def test_resolve_is_a_pure_decision() -> None:
    names = {IDS["a"]: "a"}.get
    exists = {"a"}.__contains__
    E = delete_topics.Entry
    assert delete_topics.resolve(E("a"), names, exists) == ("a", ErrorCode.NONE, None)
    assert delete_topics.resolve(E(None, IDS["a"]), names, exists)[:2] == ("a", ErrorCode.NONE)
    assert delete_topics.resolve(E("b"), names, exists)[1] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
