"""The request handler pool: N tasks that take requests off a channel and call the handler.

The handler is the broker's ``KafkaApis``, injected as an async callable::

    async def handle(request: Request) -> Response | ResponseParts | Future | None

* a Response (or ``ResponseParts``, already-encoded pieces) is written back in order;
* ``None`` means *no response* (acks=0 Produce): the connection is unmuted and reads on;
* an ``asyncio.Future`` means *respond later* (a DelayedFetch or DelayedProduce in a
  purgatory): the handler task is free at once, as Kafka's handler threads are, and the
  future's result -- any of the above -- is delivered when it completes. A handler that
  simply awaits the purgatory also works, but holds one of the ``num.io.threads`` tasks. The
  responder is told at once (``Responder.deferred``): for a Produce that is the moment
  its connection may read its next request (``broker.network.pipeline``).

A handler that raises gets its request answered with UNKNOWN_SERVER_ERROR where the
codec's error builder can, else the connection closes; the handler task carries on.

``resize(n)`` changes the number of tasks on a running pool (a dynamic ``num.io.threads``):
new tasks start at once; the tasks let go (the newest first) stop as soon as they are
not serving a request -- one waiting for a request is cancelled there (the channel puts a
request handed to it back in front), one serving finishes that request first -- so no
request in flight is dropped. Task indexes are never reused, so a task still finishing
its last request never shares an index with its successor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from broker.metrics import BrokerMetrics
from broker.network.request_channel import Request, RequestChannel
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

#: the injected request handler (KafkaApis.handle)
Handler = Callable[[Request], Awaitable[Any]]


class RequestHandlerPool:
    """``size`` handler tasks on one channel. Event-loop bound."""

    def __init__(
        self,
        channel: RequestChannel,
        handle: Handler,
        size: int,
        metrics: BrokerMetrics,
        clock: Callable[[], float],
        name: str = "data-plane",
    ) -> None:
        self._channel = channel
        self._handle = handle
        self._size = size
        self._metrics = metrics
        self._clock = clock
        self.name = name
        #: task index -> task, every task still running (retiring ones included)
        self._tasks: dict[int, asyncio.Task[None]] = {}
        #: indexes of the tasks let go by a shrink, stopping after their current request
        self._retiring: set[int] = set()
        self._next_index = 0
        self._deferred: set[asyncio.Future[Any]] = set()
        # idle ratio: seconds the average handler spent waiting for a request (each wait
        # divided by the pool's size while it lasted, as Kafka counts it, so the total
        # never drops when the pool grows), and since when each waiting task (by index)
        # has been waiting
        self._idle_s = 0.0
        self._waiting_since: dict[int, float] = {}

    @property
    def deferred_count(self) -> int:
        """Requests whose handler returned a future that has not completed yet."""
        return len(self._deferred)

    @property
    def size(self) -> int:
        """The tasks the pool is meant to run (tasks let go may still finish a request)."""
        return self._size

    def start(self) -> None:
        for _ in range(self._size):
            self._spawn()

    def _spawn(self) -> None:
        index = self._next_index
        self._next_index += 1
        task = asyncio.get_running_loop().create_task(
            self._run(index), name=f"{self.name}-handler-{index}"
        )
        self._tasks[index] = task
        task.add_done_callback(lambda _: self._forget(index))

    def _forget(self, index: int) -> None:
        self._tasks.pop(index, None)
        self._retiring.discard(index)

    def resize(self, size: int) -> None:
        """Run ``size`` tasks from now on (at least 1): start the missing ones, or let
        the newest go, each once it is not serving a request."""
        if size < 1:
            raise ValueError(f"a request handler pool needs at least one task, got {size}")
        if not self._tasks:  # not started: start() makes them
            self._size = size
            return
        self._fold_idle()
        active = sorted(i for i in self._tasks if i not in self._retiring)
        for _ in range(size - len(active)):
            self._spawn()
        for index in active[size:] if size < len(active) else ():
            self._retiring.add(index)
            if index in self._waiting_since:  # idle: stopped where it waits
                self._tasks[index].cancel()
        log.info("%s: %d request handler tasks (were %d)", self.name, size, self._size)
        self._size = size

    def _fold_idle(self) -> None:
        """Count the waits so far at the size they were waited at (before it changes)."""
        now = self._clock()
        for index, since in self._waiting_since.items():
            self._idle_s += (now - since) / self._size
            self._waiting_since[index] = now

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = {}
        self._retiring.clear()
        for future in list(self._deferred):
            future.cancel()

    @property
    def waiting_count(self) -> int:
        """Handlers waiting for a request right now."""
        return len(self._waiting_since)

    def idle_seconds(self) -> float:
        """Seconds the average handler of this pool has spent waiting for a request."""
        now = self._clock()
        waiting = sum(now - since for since in self._waiting_since.values())
        return self._idle_s + waiting / self._size

    async def _run(self, index: int) -> None:
        while index not in self._retiring:
            self._waiting_since[index] = self._clock()
            try:
                request = await self._channel.receive()
            finally:
                since = self._waiting_since.pop(index)  # moved on by a resize's fold
                now = self._clock()
                self._idle_s += (now - since) / self._size
            try:
                await self._serve(request, now)
            except Exception:  # loop boundary: whatever one request does, the task lives on
                log.exception("serving %s failed", request)

    async def _serve(self, request: Request, dequeued_at: float) -> None:
        request.dequeued_at = dequeued_at
        cells = request.metrics
        if cells is None:  # made without them (by hand): resolved once here
            cells = request.metrics = self._metrics.request_metrics(request.api_name)
        cells.queue_time.observe(request.dequeued_at - request.received_at)
        try:
            result = await self._handle(request)
        except asyncio.CancelledError:
            request.responder.respond_error(request, ErrorCode.UNKNOWN_SERVER_ERROR)
            raise
        except Exception:  # one failing request is answered (or closed), not fatal
            log.exception("handler failed on %s", request)
            request.responder.respond_error(request, ErrorCode.UNKNOWN_SERVER_ERROR)
            return
        request.handled_at = now = self._clock()
        if isinstance(result, asyncio.Future):
            self._defer(request, result)
        else:
            self._observe_times(request, now)
            request.responder.respond(request, result)

    def _observe_times(self, request: Request, now: float) -> None:
        """Local time (the handler's own work) and remote time (a deferred response's
        wait), once the response is ready (``now``)."""
        request.response_ready_at = now
        cells = request.metrics
        assert cells is not None  # resolved by _serve
        cells.local_time.observe(request.handled_at - request.dequeued_at)
        cells.remote_time.observe(now - request.handled_at)

    def _defer(self, request: Request, future: asyncio.Future[Any]) -> None:
        self._deferred.add(future)
        # before the future's callbacks can run (they are scheduled, never called here)
        request.responder.deferred(request)

        def deliver(done: asyncio.Future[Any]) -> None:
            self._deferred.discard(done)
            if done.cancelled() or done.exception() is not None:
                if not done.cancelled():
                    log.error("deferred response to %s failed", request, exc_info=done.exception())
                request.responder.respond_error(request, ErrorCode.UNKNOWN_SERVER_ERROR)
            else:
                self._observe_times(request, self._clock())
                request.responder.respond(request, done.result())

        future.add_done_callback(deliver)
