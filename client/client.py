"""KafkaClient: bootstrap, one connection per broker, the cluster view, bounded retries.

Usage::

    async with KafkaClient("127.0.0.1:9092") as client:
        view = await client.refresh_metadata(["orders"])
        body = await client.request(view.leader("orders", 0), ApiKey.LIST_OFFSETS, req)

``start`` tries the bootstrap servers in order until one answers Metadata; afterwards
brokers are reached by node id through the addresses Metadata gave. Retriable failures
(a retriable error code, a lost connection, a timeout) are retried by ``retrying`` with a
metadata refresh and exponential backoff, a bounded number of times and never past the
operation's deadline. Time comes from an injected Clock.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from client.cluster_view import ClusterView
from client.connection import Connection, ConnectionConfig
from client.errors import AuthenticationFailed, ClientError, ConnectionLost, KafkaError
from client.security import PLAINTEXT, ClientSecurity
from protocol import ApiKey, ErrorCode
from protocol.messages import MetadataRequest
from protocol.values import NO_LEADER
from timer.backoff import ExponentialBackoff
from timer.clock import Clock, SystemClock

T = TypeVar("T")


@dataclass(frozen=True)
class ClientConfig:
    client_id: str = "minikafka-client"
    connect_timeout_s: float = 10.0
    request_timeout_s: float = 30.0
    #: attempts after the first one for a retriable failure
    retries: int = 20
    retry_backoff_s: float = 0.1
    retry_backoff_max_s: float = 1.0
    #: an operation with retries gives up after this long in total
    operation_timeout_s: float = 60.0
    #: the security protocol, TLS context and SASL credentials of every connection
    security: ClientSecurity = PLAINTEXT

    @property
    def backoff(self) -> ExponentialBackoff:
        return ExponentialBackoff(self.retry_backoff_s, self.retry_backoff_max_s)

    def connection_config(self) -> ConnectionConfig:
        return ConnectionConfig(
            client_id=self.client_id,
            connect_timeout_s=self.connect_timeout_s,
            request_timeout_s=self.request_timeout_s,
            security=self.security,
        )


def parse_bootstrap(servers: str | Sequence[str]) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9093"`` (or a list of ``host:port``; ``[::1]:9092`` for IPv6) into
    (host, port) pairs. Raises ValueError naming the bad entry."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"bootstrap server {item!r} is not HOST:PORT")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no bootstrap server given")
    return out


class KafkaClient:
    def __init__(
        self,
        bootstrap: str | Sequence[str],
        config: ClientConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        self.config = config or ClientConfig()
        self.backoff = self.config.backoff
        self.clock: Clock = clock or SystemClock()
        self.view = ClusterView()
        self._conns: dict[int, Connection] = {}
        self._connecting: dict[int, asyncio.Lock] = {}
        self._bootstrap_conn: Connection | None = None

    async def __aenter__(self) -> KafkaClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Reach a bootstrap server and learn the cluster (every topic's metadata)."""
        await self.refresh_metadata(None)

    async def close(self) -> None:
        conns = list(self._conns.values())
        if self._bootstrap_conn is not None:
            conns.append(self._bootstrap_conn)
        self._conns.clear()
        self._bootstrap_conn = None
        for conn in conns:
            conn.close()
        for conn in conns:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 1.0)

    # -- connections -----------------------------------------------------------------------

    async def open_connection(self, node_id: int) -> Connection:
        """A new connection to a broker, owned by the caller (not pooled)."""
        node = self.view.brokers.get(node_id)
        if node is None:
            raise ConnectionLost(f"broker {node_id} is not in the cluster metadata")
        return await Connection.open(node.host, node.port, self.config.connection_config())

    async def connection(self, node_id: int) -> Connection:
        """The pooled connection to a broker (reopened when it has failed)."""
        conn = self._conns.get(node_id)
        if conn is not None and not conn.closed:
            return conn
        lock = self._connecting.setdefault(node_id, asyncio.Lock())
        async with lock:
            conn = self._conns.get(node_id)
            if conn is None or conn.closed:
                conn = await self.open_connection(node_id)
                self._conns[node_id] = conn
            return conn

    async def any_connection(self) -> Connection:
        """A connection to some broker: a pooled one if any is open, else a known broker,
        else the bootstrap servers in order."""
        for conn in self._conns.values():
            if not conn.closed:
                return conn
        if self._bootstrap_conn is not None and not self._bootstrap_conn.closed:
            return self._bootstrap_conn
        errors = []
        refused: AuthenticationFailed | None = None  # said as it is: retrying cannot help
        for node_id in sorted(self.view.brokers):
            try:
                return await self.connection(node_id)
            except ClientError as exc:
                errors.append(str(exc))
                if isinstance(exc, AuthenticationFailed):
                    refused = refused or exc
        for host, port in self.bootstrap:
            try:
                conn = await Connection.open(host, port, self.config.connection_config())
            except ClientError as exc:
                errors.append(str(exc))
                if isinstance(exc, AuthenticationFailed):
                    refused = refused or exc
                continue
            self._bootstrap_conn = conn
            return conn
        if refused is not None:
            raise refused
        raise ConnectionLost("no broker reachable: " + "; ".join(errors))

    async def request(
        self, node_id: int | None, api_key: int, body: Any | Callable[[int], Any], **kw: Any
    ) -> Any:
        """One request to a broker (any broker when ``node_id`` is None). ``body`` may be a
        function of the negotiated version that builds the body."""
        if node_id is None:
            conn = await self.any_connection()
        elif node_id == NO_LEADER:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, "no leader known")
        else:
            conn = await self.connection(node_id)
        if callable(body):
            version = kw.pop("version", None)
            version = conn.version(api_key) if version is None else version
            return await conn.request(api_key, body(version), version=version, **kw)
        return await conn.request(api_key, body, **kw)

    # -- metadata --------------------------------------------------------------------------

    async def refresh_metadata(
        self, topics: Sequence[str] | None = None, *, allow_auto_create: bool = False
    ) -> ClusterView:
        """Metadata for ``topics`` (None: every topic); merged into ``self.view``."""

        def body(version: int) -> Any:
            wanted = (
                None
                if topics is None
                else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
            )
            return MetadataRequest(topics=wanted, allow_auto_topic_creation=allow_auto_create)

        async def once() -> Any:
            return await self.request(None, ApiKey.METADATA, body)

        fresh = ClusterView.from_metadata(await self._retry_connection_errors(once))
        self.view = fresh if topics is None else self.view.merged(fresh)
        return self.view

    async def _retry_connection_errors(self, op: Callable[[], Awaitable[T]]) -> T:
        """For metadata itself: retry on connection failures only (no refresh loop)."""
        attempt = 0
        while True:
            try:
                return await op()
            except ConnectionLost:
                attempt += 1
                if attempt > self.config.retries:
                    raise
                await asyncio.sleep(self.backoff.delay_s(attempt))

    # -- retries ---------------------------------------------------------------------------

    async def retrying(
        self,
        op: Callable[[], Awaitable[T]],
        *,
        refresh_topics: Sequence[str] | None = None,
        timeout_s: float | None = None,
    ) -> T:
        """Run ``op``; on a retriable ClientError refresh the metadata of
        ``refresh_topics``, back off and run it again, at most ``config.retries`` more
        times and not past ``timeout_s`` (default ``config.operation_timeout_s``)."""
        budget = self.config.operation_timeout_s if timeout_s is None else timeout_s
        deadline_ms = self.clock.monotonic_ms() + int(budget * 1000)
        attempt = 0
        while True:
            try:
                return await op()
            except ClientError as exc:
                attempt += 1
                remaining_s = (deadline_ms - self.clock.monotonic_ms()) / 1000
                if not exc.retriable or attempt > self.config.retries or remaining_s <= 0:
                    raise
                await asyncio.sleep(min(self.backoff.delay_s(attempt), max(remaining_s, 0.0)))
                with contextlib.suppress(ClientError):
                    await self.refresh_metadata(refresh_topics)
