"""TcpChannelManager: the real ControllerChannelManager, on the client's Connection.

One sender task and one queue per broker. Each sender keeps one ``client.Connection`` to
its broker's control-plane listener (or the first listener when there is none) and sends
the queued requests one at a time, in order, each at the version the controller chose
(no ApiVersions exchange: the controller's versions are fixed). When the connection fails
or a response does not come in time, it drops the connection, waits (exponential backoff),
reconnects and sends the same request again, until it succeeds or the broker is removed.
Brokers fence repeated and stale requests by controller epoch, broker epoch and leader
epoch, so a retry is safe. Each request's callback gets its response, or None when the
broker is removed with the request in flight or still queued (``_BrokerSender.stop``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

import protocol
from client.connection import Connection, ConnectionConfig
from client.errors import ClientError
from client.security import ClientSecurity
from controller.channel import ResponseCallback
from timer.backoff import ExponentialBackoff
from zk.model import BrokerInfo, EndPoint

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChannelConfig:
    #: how to connect to that listener: its security protocol, TLS context, SASL
    #: credentials (the broker's own, as a client of its peers)
    security: ClientSecurity
    #: the listener to reach brokers on (Kafka's control.plane.listener.name, else the
    #: inter-broker listener)
    listener_name: str | None = None
    connect_timeout_s: float = 5.0
    #: Kafka's controller.socket.timeout.ms (30 s)
    request_timeout_s: float = 30.0
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 5.0
    max_response_bytes: int = 100 * 1024 * 1024

    @property
    def backoff(self) -> ExponentialBackoff:
        return ExponentialBackoff(self.backoff_initial_s, self.backoff_max_s)

    def connection_config(self, client_id: str) -> ConnectionConfig:
        return ConnectionConfig(
            client_id=client_id,
            connect_timeout_s=self.connect_timeout_s,
            request_timeout_s=self.request_timeout_s,
            max_response_bytes=self.max_response_bytes,
            security=self.security,
        )


def control_endpoint(broker: BrokerInfo, listener_name: str | None) -> EndPoint:
    """The endpoint of ``listener_name`` when the broker has one, else its first."""
    if listener_name is not None:
        ep = broker.endpoint(listener_name)
        if ep is not None:
            return ep
    return broker.endpoints[0]


@dataclass
class _Queued:
    api_key: int
    api_version: int
    body: Any
    callback: ResponseCallback | None


#: what makes a sender drop its connection and send again: the connection failed or
#: timed out (ClientError), or a request could not be encoded or decoded
_RETRIED = (ClientError, protocol.ProtocolError)


class _BrokerSender:
    """Owns one broker's queue and connection. Only its own task uses the connection;
    ``queue`` is the only thing shared (asyncio.Queue)."""

    def __init__(self, controller_id: int, broker: BrokerInfo, config: ChannelConfig) -> None:
        self.backoff = config.backoff
        self.broker = broker
        self.config = config
        self.connection_config = config.connection_config(f"controller-{controller_id}")
        self.queue: asyncio.Queue[_Queued] = asyncio.Queue()
        self.connection: Connection | None = None
        self.sent = 0
        #: the request being delivered (its callback is owed an answer if we stop)
        self.current: _Queued | None = None
        #: set by ``stop``; checked between requests, since a cancellation that races with
        #: a response can be swallowed by asyncio.wait_for on Python 3.11
        self.stopping = False
        self.task = asyncio.create_task(self._run(), name=f"controller-sender-{broker.id}")

    async def _run(self) -> None:
        while not self.stopping:
            item = self.current = await self.queue.get()
            body = await self._deliver(item)
            if self.stopping:
                return  # ``stop`` answers the item with None
            self.current = None
            self.sent += 1
            _answer(item, body)

    async def _deliver(self, item: _Queued) -> Any:
        """Send ``item`` until a response comes back (or the sender stops: None)."""
        failures = 0
        while not self.stopping:
            try:
                conn = await self._connect()
                return await conn.request(item.api_key, item.body, version=item.api_version)
            except _RETRIED as exc:
                # the connection is gone or confused: drop it, wait, send again
                failures += 1
                backoff = self.backoff.delay_s(failures)
                log.warning(
                    "controller -> broker %s: %s; retrying in %.1fs",
                    self.broker.id,
                    exc or type(exc).__name__,
                    backoff,
                )
                await self._close()
                await asyncio.sleep(backoff)
        return None

    async def _connect(self) -> Connection:
        if self.connection is None or self.connection.closed:
            ep = control_endpoint(self.broker, self.config.listener_name)
            self.connection = await Connection.open(
                ep.host, ep.port, self.connection_config, negotiate=False
            )
        return self.connection

    async def _close(self) -> None:
        conn, self.connection = self.connection, None
        if conn is not None:
            conn.close()
            await conn.wait_closed()

    async def stop(self) -> None:
        """End the task and the connection; every request not answered (the one in
        flight, the queued ones) gets None."""
        self.stopping = True
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        await self._close()
        abandoned = [self.current] if self.current is not None else []
        self.current = None
        while not self.queue.empty():
            abandoned.append(self.queue.get_nowait())
        for item in abandoned:
            _answer(item, None)


def _answer(item: _Queued, body: Any | None) -> None:
    if item.callback is None:
        return
    try:
        item.callback(body)
    except Exception:
        # a callback's bug must not stop deliveries to this broker (or its removal)
        log.exception("controller response callback failed")


class TcpChannelManager:
    """Implements controller.channel.ControllerChannelManager. Call from the event loop."""

    def __init__(self, controller_id: int, config: ChannelConfig) -> None:
        self.controller_id = controller_id
        self.config = config
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
