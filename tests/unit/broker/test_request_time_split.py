"""A request's time split as Kafka splits it (queue, local, remote), and the request
handlers' idle time, measured by the handler pool on an injected clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from broker.metrics import BrokerMetrics
from broker.network.handler_pool import RequestHandlerPool
from broker.network.request_channel import Request, RequestChannel


class _Responder:
    def __init__(self) -> None:
        self.answered: list[object | None] = []

    def respond(self, request: Request, response: object | None) -> None:
        self.answered.append(response)

    def respond_error(self, request: Request, error_code: int) -> None:
        self.answered.append(error_code)

    def deferred(self, request: Request) -> None:
        pass


_POOL_TIMES = {
    "minikafka_request_queue_time_seconds",
    "minikafka_request_local_time_seconds",
    "minikafka_request_remote_time_seconds",
}


async def _until(condition: Callable[[], bool]) -> None:
    """Let the pool's task run until ``condition`` holds (a bounded number of turns)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


def _sums(metrics: BrokerMetrics) -> dict[str, float]:
    """The Produce request times' sums that the handler pool observes (the total and
    response times are the network's, which this test leaves out)."""
    out = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            name = sample.name.removesuffix("_sum")
            if name in _POOL_TIMES and sample.labels.get("api") == "Produce":
                out[name] = sample.value
    return out


async def test_queue_local_and_remote_times_and_the_handlers_idle_time() -> None:
    now = [0.0]
    metrics = BrokerMetrics()
    channel = RequestChannel(10)
    pending: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def handle(request: Request) -> Any:
        now[0] += 2.0  # the handler's own work: two seconds
        return pending  # then it waits for others (a delayed produce)

    pool = RequestHandlerPool(channel, handle, 1, metrics, lambda: now[0])
    pool.start()
    try:
        await _until(lambda: pool.waiting_count == 1)  # the handler waits since 0
        now[0] = 10.0  # idle for ten seconds
        responder = _Responder()
        request = Request(
            header=SimpleNamespace(api_key=0, api_version=9, correlation_id=1),
            body=None,
            listener="PLAINTEXT",
            connection_id="c",
            client_host="127.0.0.1",
            client_port=1,
            size=0,
            received_at=8.0,  # read two seconds before a handler took it
            responder=responder,
            api_name="Produce",
        )
        assert channel.offer(request)
        await _until(lambda: request.handled_at > 0)
        now[0] = 15.0  # three seconds in the purgatory
        pending.set_result("the response")
        await _until(lambda: bool(responder.answered))
        assert responder.answered == ["the response"]
        assert _sums(metrics) == {
            "minikafka_request_queue_time_seconds": 2.0,
            "minikafka_request_local_time_seconds": 2.0,
            "minikafka_request_remote_time_seconds": 3.0,
        }
        # waiting from 0 to 10, and again since 12 when the handler returned the future
        assert pool.idle_seconds() == 13.0
    finally:
        await pool.stop()
