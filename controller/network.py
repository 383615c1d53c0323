"""TcpChannelManager: the real ControllerChannelManager, a small asyncio Kafka client.

One sender task and one queue per broker. Each sender keeps one connection to its
broker's control-plane listener (or the first listener when there is none) and sends the
queued requests one at a time, in order: ``int32 size | request header | body``, then
waits for the response with the same correlation id. When the connection fails or a
response does not come in time, it closes the connection, waits (exponential backoff),
reconnects and sends the same request again, until it succeeds or the broker is
removed. Brokers fence repeated and stale requests by controller epoch, broker epoch and
leader epoch, so a retry is safe.

This is control-plane traffic, a few requests per cluster change: asyncio streams are
fine here (they are kept off the broker's data path).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from dataclasses import dataclass
from typing import Any

import protocol
from controller.channel import ResponseCallback
from zk.model import BrokerInfo, EndPoint

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class ChannelConfig:
    #: the listener to reach brokers on (Kafka's control.plane.listener.name)
    listener_name: str | None = None
    connect_timeout_s: float = 5.0
    #: Kafka's controller.socket.timeout.ms (30 s)
    request_timeout_s: float = 30.0
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 5.0
    max_response_bytes: int = 100 * 1024 * 1024


@dataclass
class _Queued:
    api_key: int
    api_version: int
    body: Any
    callback: ResponseCallback | None


async def exchange(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    api_key: int,
    api_version: int,
    body: Any,
    correlation_id: int,
    client_id: str,
    config: ChannelConfig,
) -> Any:
    """Send one request on a connection and return the decoded response body.

    Raises OSError/EOFError/TimeoutError/ProtocolError when the connection is unusable.
    """
    request = protocol.make_request(api_key, api_version, correlation_id, client_id, body)
    frame = protocol.encode_request(request)
    writer.write(_SIZE.pack(len(frame)) + frame)
    await writer.drain()
    # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation
    # that races with the awaited result, and a sender task that is being stopped would
    # then retry forever
    async with asyncio.timeout(config.request_timeout_s):
        (size,) = _SIZE.unpack(await reader.readexactly(4))
    if not 0 <= size <= config.max_response_bytes:
        raise EOFError(f"response size {size} out of range")
    async with asyncio.timeout(config.request_timeout_s):
        payload = await reader.readexactly(size)
    response = protocol.decode_response(payload, api_key, api_version)
    if response.header.correlation_id != correlation_id:
        raise EOFError(
            f"correlation id {response.header.correlation_id}, expected {correlation_id}"
        )
    return response.body


async def request_once(
    endpoint: EndPoint,
    api_key: int,
    api_version: int,
    body: Any,
    client_id: str,
    config: ChannelConfig | None = None,
) -> Any:
    """Open a connection, send one request, return the response body, close."""
    config = config or ChannelConfig()
    async with asyncio.timeout(config.connect_timeout_s):
        reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port)
    try:
        return await exchange(reader, writer, api_key, api_version, body, 1, client_id, config)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


class _BrokerSender:
    """Owns one broker's queue and connection. Not safe across tasks: only its own task
    uses the connection; ``queue`` is the only thing shared (asyncio.Queue)."""

    def __init__(self, controller_id: int, broker: BrokerInfo, config: ChannelConfig) -> None:
        self.broker = broker
        self.config = config
        self.client_id = f"controller-{controller_id}"
        self.queue: asyncio.Queue[_Queued] = asyncio.Queue()
        self.correlation_id = 0
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.task = asyncio.create_task(self._run(), name=f"controller-sender-{broker.id}")
        self.sent = 0

    def endpoint(self) -> EndPoint:
        wanted = self.config.listener_name
        if wanted is not None:
            ep = self.broker.endpoint(wanted)
            if ep is not None:
                return ep
        return self.broker.endpoints[0]

    async def _run(self) -> None:
        while True:
            item = await self.queue.get()
            backoff = self.config.backoff_initial_s
            while True:
                try:
                    body = await self._round_trip(item)
                    break
                except (OSError, EOFError, TimeoutError, protocol.ProtocolError) as exc:
                    # the connection is gone or confused: drop it, wait, send again
                    log.warning(
                        "controller -> broker %s: %s; retrying in %.1fs",
                        self.broker.id,
                        exc or type(exc).__name__,
                        backoff,
                    )
                    await self._close()
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, self.config.backoff_max_s)
            self.sent += 1
            if item.callback is not None:
                try:
                    item.callback(body)
                except Exception:
                    # a callback's bug must not stop deliveries to this broker
                    log.exception("controller response callback failed")

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.reader is not None and self.writer is not None:
            return self.reader, self.writer
        ep = self.endpoint()
        async with asyncio.timeout(self.config.connect_timeout_s):  # see exchange()
            reader, writer = await asyncio.open_connection(ep.host, ep.port)
        self.reader, self.writer = reader, writer
        return reader, writer

    async def _round_trip(self, item: _Queued) -> Any:
        reader, writer = await self._connect()
        self.correlation_id = (self.correlation_id + 1) & 0x7FFFFFFF
        return await exchange(
            reader,
            writer,
            item.api_key,
            item.api_version,
            item.body,
            self.correlation_id,
            self.client_id,
            self.config,
        )

    async def _close(self) -> None:
        writer, self.reader, self.writer = self.writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        await self._close()


class TcpChannelManager:
    """Implements controller.channel.ControllerChannelManager. Call from the event loop."""

    def __init__(self, controller_id: int, config: ChannelConfig | None = None) -> None:
        self.controller_id = controller_id
        self.config = config or ChannelConfig()
        self._senders: dict[int, _BrokerSender] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    def add_broker(self, broker: BrokerInfo) -> None:
        current = self._senders.get(broker.id)
        if current is not None:
            if current.broker == broker:
                return
            self.remove_broker(broker.id)  # re-registered (new epoch or endpoints)
        self._senders[broker.id] = _BrokerSender(self.controller_id, broker, self.config)

    def remove_broker(self, broker_id: int) -> None:
        sender = self._senders.pop(broker_id, None)
        if sender is not None:
            task = asyncio.create_task(sender.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    def send(
        self,
        broker_id: int,
        api_key: int,
        api_version: int,
        body: Any,
        callback: ResponseCallback | None = None,
    ) -> None:
        sender = self._senders.get(broker_id)
        if sender is None:
            log.debug("no channel to broker %s: request %s dropped", broker_id, api_key)
            return
        sender.queue.put_nowait(_Queued(api_key, api_version, body, callback))

    def queued(self, broker_id: int) -> int:
        sender = self._senders.get(broker_id)
        return sender.queue.qsize() if sender is not None else 0

    async def shutdown(self) -> None:
        senders, self._senders = list(self._senders.values()), {}
        await asyncio.gather(*(s.stop() for s in senders), *self._stopping)
