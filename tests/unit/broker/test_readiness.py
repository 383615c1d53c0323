"""The readiness gate: client requests held until the broker can answer, the controller's
served at once, and a refusal with REQUEST_TIMED_OUT when readiness does not come."""

from __future__ import annotations

import asyncio
from typing import Any

from broker.apis import error_response
from broker.readiness import (
    ReadinessGate,
    hold_budget_ms,
    not_ready_reason,
    served_before_ready,
)
from protocol import ApiKey, ErrorCode, Response, make_request, make_response
from protocol.messages import (
    CreateTopicsRequest,
    DescribeClusterRequest,
    MetadataRequest,
    MetadataResponse,
    UpdateMetadataRequest,
)
from timer.clock import MockClock

DEADLINE_S = 10.0


class _Req:
    def __init__(self, api_key: int, version: int, body: Any) -> None:
        self.header = make_request(api_key, version, 5, "test", body).header
        self.body = body
        self.listener = "PLAINTEXT"


def test_the_handshake_and_the_controllers_requests_pass_before_readiness() -> None:
    for api in (ApiKey.API_VERSIONS, ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA,
                ApiKey.STOP_REPLICA, ApiKey.CONTROLLED_SHUTDOWN):  # fmt: skip
        assert served_before_ready(api)
    for api in (ApiKey.METADATA, ApiKey.CREATE_TOPICS, ApiKey.PRODUCE, ApiKey.FETCH):
        assert not served_before_ready(api)


def test_reasons_name_what_is_missing() -> None:
    assert "not registered" in (not_ready_reason(False, False) or "")
    assert "metadata" in (not_ready_reason(True, False) or "")
    assert not_ready_reason(True, True) is None


def test_a_request_waits_at_most_its_own_positive_timeout() -> None:
    assert hold_budget_ms(None, 10_000) == 10_000
    assert hold_budget_ms(3_000, 10_000) == 3_000
    assert hold_budget_ms(60_000, 10_000) == 10_000
    assert hold_budget_ms(0, 10_000) == 10_000  # "do not wait for leaders" still waits to run


class _Served:
    """A serve function that records what it served."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def __call__(self, request: Any) -> Response:
        self.seen.append(request)
        return make_response(request.header, MetadataResponse(controller_id=0))


async def test_a_client_request_is_held_until_ready_then_served() -> None:
    state = {"ready": False}
    gate = ReadinessGate(lambda: None if state["ready"] else "not yet", MockClock(), error_response)
    serve = _Served()
    pending = await gate.admit(_Req(ApiKey.METADATA, 12, MetadataRequest(topics=None)), serve)
    assert isinstance(pending, asyncio.Future)
    await asyncio.sleep(0)  # let the held task start waiting
    assert not pending.done() and serve.seen == [] and gate.held == 1
    assert not gate.check()  # still not ready: still held
    state["ready"] = True
    assert gate.check()
    response = await asyncio.wait_for(pending, DEADLINE_S)
    assert isinstance(response, Response)
    assert response.body.controller_id == 0 and len(serve.seen) == 1
    # once ready, served at once
    now = await gate.admit(_Req(ApiKey.METADATA, 12, MetadataRequest(topics=None)), serve)
    assert isinstance(now, Response)


async def test_the_controllers_requests_are_served_while_client_ones_wait() -> None:
    gate = ReadinessGate(lambda: "not yet", MockClock(), error_response)
    serve = _Served()
    result = await gate.admit(_Req(ApiKey.UPDATE_METADATA, 7, UpdateMetadataRequest()), serve)
    assert isinstance(result, Response)


async def test_a_held_create_topics_is_refused_per_topic_within_its_timeout() -> None:
    gate = ReadinessGate(lambda: "not yet", MockClock(), error_response, hold_ms=60_000)
    body = CreateTopicsRequest(
        topics=[CreateTopicsRequest.CreatableTopic(name="a", num_partitions=1,
                                                   replication_factor=1)],
        timeout_ms=50,
    )  # fmt: skip
    pending = await gate.admit(_Req(ApiKey.CREATE_TOPICS, 7, body), _Served())
    assert isinstance(pending, asyncio.Future)
    response = await asyncio.wait_for(pending, DEADLINE_S)
    assert isinstance(response, Response)
    (topic,) = response.body.topics
    assert (topic.name, topic.error_code) == ("a", ErrorCode.REQUEST_TIMED_OUT)
    assert "starting" in topic.error_message


async def test_a_refusal_uses_the_top_level_error_code_where_there_is_one() -> None:
    gate = ReadinessGate(lambda: "not yet", MockClock(), error_response, hold_ms=20)
    request = _Req(ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest())
    pending = await gate.admit(request, _Served())
    assert isinstance(pending, asyncio.Future)
    response = await asyncio.wait_for(pending, DEADLINE_S)
    assert isinstance(response, Response)
    assert response.body.error_code == ErrorCode.REQUEST_TIMED_OUT


async def test_a_refusal_without_an_error_field_closes_the_connection() -> None:
    gate = ReadinessGate(lambda: "not yet", MockClock(), error_response, hold_ms=20)
    pending = await gate.admit(_Req(ApiKey.METADATA, 12, MetadataRequest(topics=None)), _Served())
    assert isinstance(pending, asyncio.Future)
    await asyncio.wait({pending}, timeout=DEADLINE_S)
    assert pending.cancelled()  # the network answers a cancelled future by closing


async def test_a_request_served_after_waiting_gets_what_is_left_of_its_timeout() -> None:
    clock = MockClock()
    state = {"ready": False}
    gate = ReadinessGate(lambda: None if state["ready"] else "not yet", clock, error_response)
    body = CreateTopicsRequest(topics=[], timeout_ms=5_000)
    serve = _Served()
    pending = await gate.admit(_Req(ApiKey.CREATE_TOPICS, 7, body), serve)
    assert isinstance(pending, asyncio.Future)
    await asyncio.sleep(0)
    clock.advance(2_000)
    state["ready"] = True
    gate.check()
    await asyncio.wait_for(pending, DEADLINE_S)
    assert serve.seen[0].body.timeout_ms == 3_000


async def test_closing_the_gate_gives_up_the_held_requests() -> None:
    gate = ReadinessGate(lambda: "never", MockClock(), error_response)
    serve = _Served()
    request = _Req(ApiKey.METADATA, 12, MetadataRequest(topics=None))
    pending = await gate.admit(request, serve)
    assert isinstance(pending, asyncio.Future)
    await asyncio.sleep(0)  # the held task waits
    await asyncio.wait_for(gate.close(), DEADLINE_S)
    assert pending.cancelled() and serve.seen == [] and gate.held == 0
    later = await gate.admit(request, serve)  # after close: nothing is held any more
    assert isinstance(later, asyncio.Future) and later.cancelled()
