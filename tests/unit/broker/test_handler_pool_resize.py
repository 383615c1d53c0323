"""A running request handler pool resized (a dynamic num.io.threads): more tasks serve
at once after a grow; after a shrink the tasks let go finish the request they serve,
and no queued request is lost."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from broker.metrics import BrokerMetrics
from broker.network.handler_pool import RequestHandlerPool
from broker.network.request_channel import Request, RequestChannel


class _Responder:
    def __init__(self) -> None:
        self.answered: list[object | None] = []

    def respond(self, request: Request, response: object | None) -> None:
        self.answered.append(response)

    def respond_error(self, request: Request, error_code: int) -> None:
        self.answered.append(("error", error_code))

    def deferred(self, request: Request) -> None:
        pass


def _request(correlation_id: int, responder: _Responder) -> Request:
    return Request(
        header=SimpleNamespace(api_key=0, api_version=9, correlation_id=correlation_id),
        body=correlation_id,
        listener="PLAINTEXT",
        connection_id="c",
        client_host="127.0.0.1",
        client_port=1,
        size=0,
        received_at=0.0,
        responder=responder,
        api_name="Produce",
    )


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


class _Gate:
    """A handler that holds every request until released: how many it holds at once."""

    def __init__(self) -> None:
        self.held: list[int] = []
        self.release = asyncio.Event()

    async def handle(self, request: Request) -> Any:
        self.held.append(request.body)
        await self.release.wait()
        return f"done {request.body}"


async def test_growing_the_pool_serves_more_requests_at_once() -> None:
    gate, responder, channel = _Gate(), _Responder(), RequestChannel(100)
    pool = RequestHandlerPool(channel, gate.handle, 1, BrokerMetrics(), lambda: 0.0)
    pool.start()
    try:
        for i in range(4):
            assert channel.offer(_request(i, responder))
        await _until(lambda: len(gate.held) == 1)
        pool.resize(2)
        await _until(lambda: len(gate.held) == 2)
        pool.resize(4)
        await _until(lambda: len(gate.held) == 4)
        assert pool.size == 4
        gate.release.set()
        await _until(lambda: len(responder.answered) == 4)
        assert sorted(map(str, responder.answered)) == [f"done {i}" for i in range(4)]
    finally:
        await pool.stop()


async def test_a_shrink_lets_busy_tasks_finish_and_loses_no_request() -> None:
    gate, responder, channel = _Gate(), _Responder(), RequestChannel(100)
    pool = RequestHandlerPool(channel, gate.handle, 4, BrokerMetrics(), lambda: 0.0)
    pool.start()
    try:
        await _until(lambda: pool.waiting_count == 4)
        for i in range(2):  # two tasks busy, two waiting
            assert channel.offer(_request(i, responder))
        await _until(lambda: len(gate.held) == 2)
        pool.resize(1)
        await _until(lambda: pool.waiting_count == 0)  # the idle ones stopped at once
        for i in range(2, 6):
            assert channel.offer(_request(i, responder))
        gate.release.set()
        await _until(lambda: len(responder.answered) == 6)
        assert sorted(map(str, responder.answered)) == [f"done {i}" for i in range(6)]
        await _until(lambda: pool.waiting_count == 1)  # one task left, waiting
        assert pool.size == 1
    finally:
        await pool.stop()


async def test_a_shrink_then_grow_keeps_the_pool_at_its_size() -> None:
    gate, responder, channel = _Gate(), _Responder(), RequestChannel(100)
    gate.release.set()
    pool = RequestHandlerPool(channel, gate.handle, 4, BrokerMetrics(), lambda: 0.0)
    pool.start()
    try:
        await _until(lambda: pool.waiting_count == 4)
        pool.resize(2)
        pool.resize(3)
        await _until(lambda: pool.waiting_count == 3)
        for i in range(10):
            assert channel.offer(_request(i, responder))
        await _until(lambda: len(responder.answered) == 10)
        await _until(lambda: pool.waiting_count == 3)
    finally:
        await pool.stop()


async def test_a_pool_never_goes_below_one_task() -> None:
    pool = RequestHandlerPool(RequestChannel(1), _Gate().handle, 2, BrokerMetrics(), lambda: 0.0)
    with pytest.raises(ValueError, match="at least one"):
        pool.resize(0)


async def test_the_idle_time_never_drops_when_the_pool_grows() -> None:
    now = [0.0]
    pool = RequestHandlerPool(RequestChannel(1), _Gate().handle, 2, BrokerMetrics(), lambda: now[0])
    pool.start()
    try:
        await _until(lambda: pool.waiting_count == 2)
        now[0] = 10.0
        assert pool.idle_seconds() == 10.0  # two handlers idle for ten seconds
        pool.resize(4)
        await _until(lambda: pool.waiting_count == 4)
        assert pool.idle_seconds() == 10.0
        now[0] = 20.0  # four handlers idle for ten more seconds: the average's ten more
        assert pool.idle_seconds() == 20.0
        pool.resize(1)
        await _until(lambda: pool.waiting_count == 1)
        now[0] = 25.0
        assert pool.idle_seconds() == 25.0
    finally:
        await pool.stop()
