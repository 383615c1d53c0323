"""Requests as the handlers see them, and the bounded channel that carries them.

Processors put parsed requests on a ``RequestChannel``; the handler pool takes them off.
The channel holds at most ``queued.max.requests``: when it is full, ``offer`` refuses, the
Processor parks the connection (it stops reading it) and registers a wake-up with
``when_space``. Taking a request frees one slot and wakes the oldest parked connection, so
memory stays bounded by the number of connections times one request, whatever the load.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from broker.security.principal import ANONYMOUS, KafkaPrincipal

if TYPE_CHECKING:
    from broker.metrics import RequestMetrics


class Responder(Protocol):
    """Where a request's outcome goes: the Processor that owns its connection."""

    def respond(self, request: Request, response: object | None) -> None:
        """``response`` is a protocol Response, a ``ResponseParts``, or None (no response)."""

    def respond_error(self, request: Request, error_code: int) -> None:
        """The handler failed: answer with ``error_code`` where possible, else close."""

    def deferred(self, request: Request) -> None:
        """The handler returned a Future: ``request`` waits in a purgatory (its response
        comes later through ``respond``)."""


@dataclass(slots=True, eq=False)
class Request:
    """One request on its way through the broker.

    ``header`` and ``body`` are what ``protocol.decode_request`` produced (``body`` is None
    for an ApiVersions request above the supported version). The rest says where it came
    from and when, for routing the response and for metrics. Times are the server clock's
    seconds (monotonic).
    """

    header: Any
    #: left out of the repr that failure logs print: some bodies carry secrets (the salted
    #: passwords of AlterUserScramCredentials, SASL tokens)
    body: Any = field(repr=False)
    listener: str
    connection_id: str
    client_host: str
    client_port: int
    size: int
    received_at: float
    responder: Responder = field(repr=False)
    api_name: str = "Unknown"
    #: who the connection authenticated as (User:ANONYMOUS without authentication)
    principal: KafkaPrincipal = ANONYMOUS
    dequeued_at: float = 0.0
    #: when the handler returned (its local work done), and when the response was ready
    #: (later than that when the handler returned a future: the request waited remotely)
    handled_at: float = 0.0
    response_ready_at: float = 0.0
    #: the connection this came from; opaque to handlers
    connection: object = field(default=None, repr=False)
    #: its API's per-request metric cells, resolved by the Processor that read it (the
    #: handler pool resolves them by ``api_name`` for a request made without them)
    metrics: RequestMetrics | None = field(default=None, repr=False)
    #: set by a client quota (broker.client_quotas.enforce): once the response is out,
    #: the connection reads nothing for this long (ms)
    throttle_ms: int = 0

    @property
    def api_key(self) -> int:
        return int(self.header.api_key)

    @property
    def api_version(self) -> int:
        return int(self.header.api_version)

    @property
    def correlation_id(self) -> int:
        return int(self.header.correlation_id)


class RequestChannel:
    """A bounded FIFO of requests between Processors and handlers. One event loop only."""

    def __init__(self, capacity: int, name: str = "data-plane") -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.name = name
        self._queue: deque[Request] = deque()
        self._receivers: deque[asyncio.Future[Request]] = deque()
        # parked producers; each returns True when it used the slot it was woken for
        self._space_waiters: deque[Callable[[], bool]] = deque()
        #: the loop of the first receive: the channel's one loop, looked up once
        #: (asyncio.get_running_loop costs a system call per call on some Pythons)
        self._loop: asyncio.AbstractEventLoop | None = None

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def waiting_for_space(self) -> int:
        return len(self._space_waiters)

    def offer(self, request: Request) -> bool:
        """Queue ``request`` or hand it straight to a waiting handler; False when full."""
        while self._receivers:
            receiver = self._receivers.popleft()
            if not receiver.done():
                receiver.set_result(request)
                return True
        if len(self._queue) >= self.capacity:
            return False
        self._queue.append(request)
        return True

    def when_space(self, wake: Callable[[], bool]) -> None:
        """Call ``wake`` when a slot frees; it returns whether it took the slot."""
        self._space_waiters.append(wake)

    async def receive(self) -> Request:
        if self._queue:
            request = self._queue.popleft()
            self._wake_one()
            return request
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        receiver: asyncio.Future[Request] = loop.create_future()
        self._receivers.append(receiver)
        try:
            return await receiver
        except asyncio.CancelledError:
            if receiver.done() and not receiver.cancelled():
                # handed a request as we were cancelled: put it back at the front
                self._queue.appendleft(receiver.result())
            raise

    def _wake_one(self) -> None:
        while self._space_waiters and len(self._queue) < self.capacity:
            if self._space_waiters.popleft()():
                return
