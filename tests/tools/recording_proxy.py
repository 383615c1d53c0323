"""A recording Kafka proxy: clients talk to it, it talks to an upstream broker.

Each client connection gets its own upstream connection (opened on first need), so the
per-connection ordering that Kafka guarantees is kept: responses go back to the client in
the order of its requests, even when some requests are answered locally by a fake broker
(see fake_broker.py) instead of the upstream. Every size-prefixed frame is recorded in both
directions; a response is paired with its request by correlation id.

Routing and rewriting are injected:
- ``route(header) -> "mock" | "fake"`` picks who answers a request;
- ``rewrite(header, response) -> bytes | None`` may replace an upstream response on its way
  to the client (broker addresses in Metadata/FindCoordinator must point back at the proxy,
  and the ApiVersions table must advertise what the proxy serves). The recording always
  keeps the upstream's original bytes; the exchange notes that the client saw a rewrite.
- ``rewrite_request(header, request) -> bytes | None`` likewise may replace a request on
  its way to the upstream; the recording keeps what the client sent.

Only 127.0.0.1 is ever bound. Every wait is bounded by ``io_timeout``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import struct
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tests.tools.kp import (
    FrameHeader,
    expects_response,
    read_request_header,
    read_response_correlation_id,
)

UPSTREAM = "mock"
FAKE = "fake"

Router = Callable[[FrameHeader], str]
Rewriter = Callable[[FrameHeader, bytes], bytes | None]
FakeHandler = Callable[[FrameHeader, bytes], Awaitable[bytes | None]]

MAX_FRAME = 64 * 1024 * 1024


@dataclass
class Exchange:
    """One request and (unless acks=0) its response, as seen on one client connection."""

    connection: int
    header: FrameHeader
    request: bytes
    upstream: str
    response: bytes | None = None
    rewritten: bool = False


class Recorder:
    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []

    def add(self, exchange: Exchange) -> None:
        self.exchanges.append(exchange)


async def read_frame(reader: asyncio.StreamReader, timeout: float | None) -> bytes | None:
    """One frame without its size prefix; None at a clean end of stream."""
    try:
        prefix = await asyncio.wait_for(reader.readexactly(4), timeout)
    except asyncio.IncompleteReadError:
        return None
    (size,) = struct.unpack(">i", prefix)
    if not 0 <= size <= MAX_FRAME:
        raise ValueError(f"bad frame size {size}")
    return await asyncio.wait_for(reader.readexactly(size), timeout)


def frame_bytes(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame)) + frame


class RecordingProxy:
    def __init__(
        self,
        upstream: tuple[str, int],
        route: Router,
        fake: FakeHandler,
        rewrite: Rewriter,
        recorder: Recorder,
        io_timeout: float = 60.0,
        rewrite_request: Rewriter | None = None,
    ) -> None:
        self._upstream = upstream
        self._route = route
        self._fake = fake
        self._rewrite = rewrite
        self._rewrite_request = rewrite_request
        self._recorder = recorder
        self._io_timeout = io_timeout
        self._server: asyncio.Server | None = None
        self._conn_ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 5)
        if self._server is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await _Connection(self, next(self._conn_ids), reader, writer).run()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # either side hung up, or the proxy is closing: a normal end
        except Exception:
            # A bug in routing/rewriting/the fake must be seen, not silently drop frames.
            traceback.print_exc()
        finally:
            self._tasks.discard(task)
            writer.close()


class _Connection:
    """One client connection: a reader, an in-order writer, an upstream reader."""

    def __init__(
        self,
        proxy: RecordingProxy,
        conn_id: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.proxy = proxy
        self.conn_id = conn_id
        self.reader = reader
        self.writer = writer
        self.order: asyncio.Queue[tuple[Exchange, asyncio.Future[bytes | None]] | None]
        self.order = asyncio.Queue()
        self.pending: dict[int, asyncio.Future[bytes | None]] = {}
        self.up_reader: asyncio.StreamReader | None = None
        self.up_writer: asyncio.StreamWriter | None = None
        self.up_task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        writer_task = asyncio.create_task(self._write_loop())
        try:
            await self._read_loop()
            await self.order.put(None)
            await asyncio.wait_for(writer_task, self.proxy._io_timeout)
        finally:
            for task in (writer_task, self.up_task):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
            if self.up_writer is not None:
                self.up_writer.close()

    async def _read_loop(self) -> None:
        while True:
            # A client may sit idle for long; only the upstream side is time-bounded.
            frame = await read_frame(self.reader, None)
            if frame is None:
                return
            header = read_request_header(frame)
            route = self.proxy._route(header)
            exchange = Exchange(self.conn_id, header, frame, route)
            self.proxy._recorder.add(exchange)
            loop = asyncio.get_running_loop()
            future: asyncio.Future[bytes | None] = loop.create_future()
            if not expects_response(frame):
                future.set_result(None)
                if route == UPSTREAM:
                    await self._send_upstream(frame)
                else:
                    await self.proxy._fake(header, frame)
            elif route == UPSTREAM:
                self.pending[header.correlation_id] = future
                await self._send_upstream(frame)
            else:
                future.set_result(await self.proxy._fake(header, frame))
            await self.order.put((exchange, future))

    async def _send_upstream(self, frame: bytes) -> None:
        if self.proxy._rewrite_request is not None:
            frame = self.proxy._rewrite_request(read_request_header(frame), frame) or frame
        if self.up_writer is None:
            host, port = self.proxy._upstream
            self.up_reader, self.up_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), self.proxy._io_timeout
            )
            self.up_task = asyncio.create_task(self._upstream_loop())
        assert self.up_writer is not None
        self.up_writer.write(frame_bytes(frame))
        await asyncio.wait_for(self.up_writer.drain(), self.proxy._io_timeout)

    async def _upstream_loop(self) -> None:
        assert self.up_reader is not None
        while True:
            frame = await read_frame(self.up_reader, None)
            if frame is None:
                for future in self.pending.values():
                    if not future.done():
                        future.set_exception(ConnectionError("upstream closed"))
                return
            correlation_id = read_response_correlation_id(frame)
            if correlation_id in self.pending:
                future = self.pending.pop(correlation_id)
                if not future.done():
                    future.set_result(frame)

    async def _write_loop(self) -> None:
        while True:
            item = await self.order.get()
            if item is None:
                return
            exchange, future = item
            response = await asyncio.wait_for(future, self.proxy._io_timeout)
            if response is None:
                continue
            exchange.response = response
            to_client = response
            if exchange.upstream == UPSTREAM:
                rewritten = self.proxy._rewrite(exchange.header, response)
                if rewritten is not None:
                    exchange.rewritten = True
                    to_client = rewritten
            self.writer.write(frame_bytes(to_client))
            await asyncio.wait_for(self.writer.drain(), self.proxy._io_timeout)
