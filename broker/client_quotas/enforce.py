"""Throttling Produce and Fetch answers by client quota (Kafka's KIP-219 behaviour).

``QuotaEnforcer.apply`` sees a handler's result for a client's Produce or Fetch, before
the network has it:

- Produce: the record bytes of the request (what is appended) are counted at once, under
  the connection's principal name and the request's client id. The throttle time goes
  into the response's ``throttle_time_ms`` (v1+); a produce waiting for acks=all gets it
  when its response is ready. An acks=0 produce gets no response but is throttled all
  the same.
- Fetch (consumers only: a follower's fetch, replica id >= 0, is exempt, replication has
  its own throttles): before the handler runs, the request's ``max_bytes`` is capped to
  what the quota allows over the window (``before``), so one answer never outruns the
  quota by more than a window. The record bytes of the answer are counted when it is
  ready; a fetch that takes the rate over its quota is answered without records (the
  bytes are taken back) and with the throttle time, as Kafka does.

In both cases the time is also set on the request (``Request.throttle_ms``): the
Processor writes the response at once and then reads nothing more of that connection
for that long (``broker.network.processor``), so a client that ignores the field is
held back anyway.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from broker.client_quotas.manager import ClientQuotas
from broker.network.request_channel import Request
from protocol import Response
from protocol.api import ApiKey
from protocol.messages import FetchRequest, FetchResponse, ProduceRequest, ProduceResponse


def produced_bytes(body: ProduceRequest) -> int:
    return sum(
        len(part.records)
        for topic in body.topic_data
        for part in topic.partition_data
        if part.records is not None
    )


def fetched_bytes(body: FetchResponse) -> int:
    return sum(
        len(part.records)
        for topic in body.responses
        for part in topic.partitions
        if part.records is not None
    )


class QuotaEnforcer:
    """Applies ``quotas`` to the Produce and Fetch results of client requests."""

    def __init__(self, quotas: ClientQuotas, now_ms: Callable[[], float]) -> None:
        self.quotas = quotas
        self._now_ms = now_ms

    def before(self, request: Any) -> None:
        """Before the handler: a consumer's fetch asks for no more than its quota allows
        in the window (``ClientQuotas.max_bytes_in_window``), as Kafka caps it; at least
        one batch still comes back whatever its size."""
        if not isinstance(request, Request) or not self.quotas.table():
            return
        body = request.body
        if request.api_key != ApiKey.FETCH or not isinstance(body, FetchRequest):
            return
        if body.replica_id >= 0:
            return
        user, client_id = self._identity(request)
        cap = self.quotas.max_bytes_in_window("fetch", user, client_id)
        if cap is not None and cap < body.max_bytes:
            body.max_bytes = cap

    def apply(self, request: Any, result: object) -> object:
        """``result`` as the handler returned it, throttle time set where due."""
        if not isinstance(request, Request) or not self.quotas.table():
            return result
        api_key = request.api_key
        if api_key == ApiKey.PRODUCE:
            return self._produce(request, result)
        if api_key == ApiKey.FETCH and isinstance(request.body, FetchRequest):
            if request.body.replica_id >= 0:
                return result  # replication: exempt
            if isinstance(result, asyncio.Future):
                result.add_done_callback(lambda done: self._fetch_done(request, done))
            elif isinstance(result, Response):
                self._fetch(request, result)
        return result

    def _identity(self, request: Request) -> tuple[str, str]:
        return request.principal.name, request.header.client_id or ""

    def _produce(self, request: Request, result: object) -> object:
        body = request.body
        if not isinstance(body, ProduceRequest):
            return result
        user, client_id = self._identity(request)
        delay = self.quotas.record("produce", user, client_id, produced_bytes(body), self._now_ms())
        if not delay:
            return result
        request.throttle_ms = delay
        if isinstance(result, Response) and isinstance(result.body, ProduceResponse):
            result.body.throttle_time_ms = delay
        elif isinstance(result, asyncio.Future):
            # runs before the handler pool's delivery: it was added first
            result.add_done_callback(lambda done: _set_produce_throttle(done, delay))
        return result

    def _fetch_done(self, request: Request, done: asyncio.Future[Any]) -> None:
        if done.cancelled() or done.exception() is not None:
            return
        answer = done.result()
        if isinstance(answer, Response):
            self._fetch(request, answer)

    def _fetch(self, request: Request, response: Response) -> None:
        body = response.body
        if not isinstance(body, FetchResponse):
            return
        size = fetched_bytes(body)
        user, client_id = self._identity(request)
        now = self._now_ms()
        delay = self.quotas.record("fetch", user, client_id, size, now)
        if not delay:
            return
        self.quotas.unrecord("fetch", user, client_id, size, now)
        request.throttle_ms = delay
        response.body = FetchResponse(
            throttle_time_ms=delay,
            error_code=body.error_code,
            session_id=body.session_id,
            responses=[],
        )


def _set_produce_throttle(done: asyncio.Future[Any], delay: int) -> None:
    if done.cancelled() or done.exception() is not None:
        return
    answer = done.result()
    if isinstance(answer, Response) and isinstance(answer.body, ProduceResponse):
        answer.body.throttle_time_ms = delay
