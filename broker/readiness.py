"""Requests that arrive before the broker can answer them: held until it can, or refused.

The socket server opens its listeners (startup step 5) before the broker registers in
ZooKeeper and before the controller's first UpdateMetadata fills the metadata cache. A
client request answered in that window sees a cluster of nobody: a Metadata answer that
lists no broker and no controller, for instance, leaves librdkafka's admin client waiting
for a controller it has no way to find until its request times out (30 s, with nothing in
the broker's log), which is what an AdminClient issued the instant the port accepted met.

The broker is *ready* once both hold:

- it is registered (it has a broker epoch: /brokers/ids/<id> is its own znode), and
- its metadata cache lists it as alive (the controller has sent it an UpdateMetadata that
  includes it, with the controller id and the topics).

Ready is a latch: a ready broker never goes back (a broker whose ZooKeeper session ends
keeps answering from its cache, as Kafka's does).

Until then, by API (``served_before_ready``):

- ApiVersions and the controller's requests (LeaderAndIsr, UpdateMetadata, StopReplica,
  ControlledShutdown) are served at once: the controller's requests are what makes the
  broker ready, and on a broker without a control-plane listener they come in on the
  client listener, so holding them would deadlock it.
- Every other request is held. Its handler task is released at once (the request waits
  as a future, like a purgatory's), and the connection stays muted as for any request in
  flight. Once ready, it is served; a request with a ``timeout_ms`` gets what is left of
  it, so it is still answered within the time its client gave.
- A request still held after ``hold_budget_ms`` (``HOLD_MS``, or its own positive
  ``timeout_ms`` if shorter) is refused with REQUEST_TIMED_OUT, which clients retry: per
  topic for CreateTopics, at top level where the response has an error code, else by
  closing the connection (clients reconnect and retry). The broker logs why it was not
  ready (``not_ready_reason``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from broker.apis.request import HandlerResult, ListenerRequest
from broker.background import BackgroundTasks
from protocol import ApiKey, ErrorCode, Response, make_response
from protocol.api import api_name
from protocol.messages import CreateTopicsRequest, CreateTopicsResponse, RequestHeader
from timer.clock import Clock

log = logging.getLogger(__name__)

#: the longest a request waits for the broker to become ready when it carries no shorter
#: timeout of its own (a broker that has not heard from the controller by then has a
#: problem of its own; the client is better off retrying, perhaps elsewhere)
HOLD_MS = 10_000

#: served whatever the broker's state: the handshake, and what the controller sends
_SERVED_BEFORE_READY = frozenset(
    {
        ApiKey.API_VERSIONS,
        ApiKey.LEADER_AND_ISR,
        ApiKey.UPDATE_METADATA,
        ApiKey.STOP_REPLICA,
        ApiKey.CONTROLLED_SHUTDOWN,
    }
)

#: the answer to a request refused for lack of readiness: (header, body, message) -> it
Refusal = Callable[[RequestHeader, Any, str], Response | None]
#: an error response with a top-level error code, or None (KafkaApis' error_response)
ErrorResponse = Callable[[RequestHeader, int], Response | None]


def served_before_ready(api_key: int) -> bool:
    """Whether a request of this API is served before the broker is ready."""
    return api_key in _SERVED_BEFORE_READY


def not_ready_reason(registered: bool, listed_in_cache: bool) -> str | None:
    """Why the broker cannot answer client requests yet (None: it can)."""
    if not registered:
        return "this broker has not registered in ZooKeeper yet"
    if not listed_in_cache:
        return "the controller has not sent this broker the cluster's metadata yet"
    return None


def hold_budget_ms(timeout_ms: object, hold_ms: int = HOLD_MS) -> int:
    """How long a request may wait for readiness: ``hold_ms``, or the request's own
    ``timeout_ms`` when that is positive and shorter. (A CreateTopics with timeout 0 asks
    not to wait for leaders; it still waits to be served at all.)"""
    if isinstance(timeout_ms, int) and not isinstance(timeout_ms, bool) and timeout_ms > 0:
        return min(timeout_ms, hold_ms)
    return hold_ms


def refuse_create_topics(header: RequestHeader, body: Any, message: str) -> Response:
    """CreateTopics refused before readiness: every topic REQUEST_TIMED_OUT (nothing
    was created)."""
    assert isinstance(body, CreateTopicsRequest)
    result = CreateTopicsResponse.CreatableTopicResult
    topics = [
        result(
            name=name,
            error_code=ErrorCode.REQUEST_TIMED_OUT,
            error_message=message,
            num_partitions=-1,
            replication_factor=-1,
            configs=None,
        )
        for name in dict.fromkeys(t.name for t in body.topics)
    ]
    return make_response(header, CreateTopicsResponse(throttle_time_ms=0, topics=topics))


#: APIs whose refusal is per topic, not a top-level error code
REFUSALS: dict[int, Refusal] = {ApiKey.CREATE_TOPICS: refuse_create_topics}


class ReadinessGate:
    """Holds client requests until ``why_not_ready()`` returns None. Event-loop bound.

    ``check()`` re-evaluates the condition; the broker calls it once registered and after
    every UpdateMetadata. ``admit(request, serve)`` serves the request now if it may be
    (the result of ``serve``), else returns a future of its answer.
    """

    def __init__(
        self,
        why_not_ready: Callable[[], str | None],
        clock: Clock,
        error_response: ErrorResponse,
        hold_ms: int = HOLD_MS,
    ) -> None:
        self._why_not_ready = why_not_ready
        self._clock = clock
        self._error_response = error_response
        self.hold_ms = hold_ms
        self._ready = asyncio.Event()
        #: whether the broker is ready: the latch, as a plain attribute (KafkaApis
        #: reads it on every request)
        self.ready = False
        #: requests waiting now (a gauge for tests and logs)
        self.held = 0
        #: the held requests' tasks, cancelled by ``close`` (the broker is stopping)
        self._tasks = BackgroundTasks("held until ready")

    def check(self) -> bool:
        """Latch readiness if the condition holds now; whether the broker is ready."""
        if not self.ready and self._why_not_ready() is None:
            log.info("ready to serve client requests (%d were waiting)", self.held)
            self._ready.set()
            self.ready = True
        return self.ready

    async def admit(
        self,
        request: ListenerRequest[Any],
        serve: Callable[[ListenerRequest[Any]], Awaitable[HandlerResult]],
    ) -> HandlerResult:
        if self.ready or served_before_ready(int(request.header.api_key)):
            return await serve(request)
        loop = asyncio.get_running_loop()
        # Any: the result is a Response, or None for an acks=0 Produce (no answer at all)
        answer: asyncio.Future[Any] = loop.create_future()
        task = self._tasks.spawn(self._held(request, serve, answer), name="held-until-ready")
        if task is None:  # closing: nobody will read an answer
            answer.cancel()
        else:  # a task cancelled at close takes its pending answer with it
            task.add_done_callback(lambda done: answer.cancel() if done.cancelled() else None)
        return answer

    async def close(self) -> None:
        """Give up the requests still held (their answers are cancelled: the listeners
        have closed by then, so nobody reads them)."""
        await self._tasks.close()

    async def _held(
        self,
        request: ListenerRequest[Any],
        serve: Callable[[ListenerRequest[Any]], Awaitable[HandlerResult]],
        answer: asyncio.Future[Any],
    ) -> None:
        """Serve ``request`` once ready and put its response in ``answer``; or refuse it.
        A refusal with no response to carry it cancels ``answer``: the network then
        closes the connection (its error builder has nothing for such an API either)."""
        timeout_ms = getattr(request.body, "timeout_ms", None)
        budget = hold_budget_ms(timeout_ms, self.hold_ms)
        began = self._clock.monotonic_ms()
        self.held += 1
        try:
            await asyncio.wait_for(self._ready.wait(), budget / 1000)
        except TimeoutError:
            self._refuse(request, budget, answer)
            return
        finally:
            self.held -= 1
        if isinstance(timeout_ms, int) and timeout_ms > 0:
            waited = self._clock.monotonic_ms() - began
            request.body.timeout_ms = max(1, timeout_ms - waited)
        try:
            result = await serve(request)
            if isinstance(result, asyncio.Future):
                result = await result
        except Exception as exc:  # handed to the network, which answers it as a failure
            if not answer.done():
                answer.set_exception(exc)
            return
        if not answer.done():
            answer.set_result(result)

    def _refuse(
        self, request: ListenerRequest[Any], waited_ms: int, answer: asyncio.Future[Any]
    ) -> None:
        header = request.header
        reason = self._why_not_ready() or "it became ready only just now"
        log.warning(
            "%s v%d from %r refused after waiting %d ms for this broker to be ready: %s",
            api_name(int(header.api_key)),
            header.api_version,
            header.client_id,
            waited_ms,
            reason,
        )
        refusal = REFUSALS.get(int(header.api_key))
        if refusal is not None:
            response = refusal(header, request.body, f"The broker is starting ({reason}).")
        else:
            response = self._error_response(header, ErrorCode.REQUEST_TIMED_OUT)
        if answer.done():
            return
        if response is None:
            answer.cancel()
        else:
            answer.set_result(response)
