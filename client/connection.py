"""One TCP connection to one broker: pipelined requests, ApiVersions negotiation.

Frames on the wire are ``int32 size | header | body``. Requests are written as soon as
they are made (several may be in flight: pipelining); responses come back in request
order and are matched by correlation id (:mod:`client.inflight`). Each response is
decoded by the coroutine that awaits it, so a malformed answer raises there.

The connection is an ``asyncio.BufferedProtocol`` (no Streams: a callback per read, no
extra task; docs/architecture.md, "Performance facts"): the transport reads straight into
the buffer a :class:`~client.receiver.FrameReceiver` offers, so a large response (a 1 MiB
fetch) is written once by the kernel into its own bytearray and never copied. When the
transport's write buffer fills, new requests wait for ``resume_writing``: a fast sender is
held back rather than buffering without bound.

On a SASL listener (``config.security.uses_sasl``) ``open`` authenticates after
ApiVersions (``client.sasl``); when the broker gives the session a lifetime (KIP-368), the
connection re-authenticates before it runs out: new requests wait, the ones in flight are
answered, the handshake and tokens go out, then the waiting requests are sent. A failed
re-authentication closes the connection like any other failure.

Failure scope: a timeout, a correlation mismatch or an undecodable frame closes the
connection and fails every request in flight on it; the caller (``KafkaClient``)
reconnects. Not safe across threads; any number of tasks on its loop may use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, cast

import protocol
from client import sasl
from client.errors import ConnectionLost, RequestTimedOut, UnsupportedApi
from client.inflight import CorrelationMismatch, InFlight, InFlightRequests
from client.receiver import FrameReceiver
from client.security import PLAINTEXT, ClientSecurity
from client.versions import API_VERSIONS_FIRST_TRY, negotiate, retry_version
from protocol import ApiKey, ErrorCode
from protocol.messages import ApiVersionsRequest

_SIZE: Final = struct.Struct(">i")
#: size (4) + api key (2) + api version (2) + correlation id (4): the bytes of a request
#: that change from one send of a pre-built request to the next.
PREFIX_SIZE: Final = 12
_CID: Final = struct.Struct(">i")

CLIENT_SOFTWARE_NAME: Final = "minikafka-client"
CLIENT_SOFTWARE_VERSION: Final = "0.1.0"


@dataclass(frozen=True)
class ConnectionConfig:
    client_id: str = "minikafka-client"
    connect_timeout_s: float = 10.0
    #: Kafka's request.timeout.ms (30 s)
    request_timeout_s: float = 30.0
    #: a response above this closes the connection before it is buffered
    max_response_bytes: int = 512 * 1024 * 1024
    #: the listener's security protocol, TLS context and SASL credentials
    security: ClientSecurity = PLAINTEXT


@dataclass(frozen=True)
class PrebuiltRequest:
    """A request encoded once and sent many times: only the correlation id changes.

    ``head`` is the first PREFIX_SIZE bytes (size, api key, version, correlation id 0),
    ``tail`` the rest of the frame, shared untouched by every send."""

    api_key: int
    api_version: int
    head: bytes
    tail: bytes

    @staticmethod
    def encode(api_key: int, api_version: int, client_id: str | None, body: Any) -> PrebuiltRequest:
        frame = protocol.encode_request(
            protocol.make_request(api_key, api_version, 0, client_id, body)
        )
        sized = _SIZE.pack(len(frame)) + frame
        return PrebuiltRequest(api_key, api_version, sized[:PREFIX_SIZE], sized[PREFIX_SIZE:])

    def head_with(self, correlation_id: int) -> bytearray:
        head = bytearray(self.head)
        _CID.pack_into(head, 8, correlation_id)
        return head

    def __len__(self) -> int:
        return len(self.head) + len(self.tail)


def _decode_api_versions(frame: bytes | memoryview, version: int) -> Any | None:
    """The ApiVersionsResponse body, read at ``version`` or else as v0 (error answers
    are v0 bodies whatever version was asked); None when neither reads."""
    for v in (version, 0):
        try:
            return protocol.decode_response(frame, ApiKey.API_VERSIONS, v).body
        except protocol.ProtocolError:
            continue
    return None


def _peek_error_code(frame: bytes | memoryview) -> int | None:
    """The int16 error code after the 4-byte correlation id (header v0) of an
    ApiVersions response."""
    if len(frame) < 6:
        return None
    return int(struct.unpack_from(">h", frame, 4)[0])


class _Expired(Exception):
    """Set on a request's future when its timeout passes (never leaves this module)."""


#: a request in flight waits on this for its answer
_Waiter = asyncio.Future[bytes | memoryview]


class Connection(asyncio.BufferedProtocol):
    def __init__(self, host: str, port: int, config: ConnectionConfig | None = None) -> None:
        self.host = host
        self.port = port
        self.config = config or ConnectionConfig()
        #: api key -> negotiated version (filled by ``negotiate_versions``)
        self.versions: dict[int, int] = {}
        self.broker_ranges: dict[int, tuple[int, int]] = {}
        self._transport: asyncio.Transport | None = None
        #: the loop the transport runs on, known from ``connection_made``: asked once,
        #: not per request (asyncio.get_running_loop costs a getpid system call each)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._receiver = FrameReceiver(self.config.max_response_bytes)
        self._inflight: InFlightRequests[_Waiter] = InFlightRequests()
        #: One timer for the deadlines of every request in flight, due at the earliest
        #: of them (``_timer_due``), rather than a timer per request: a request answered
        #: in time (nearly all) then costs no timer to start and cancel, about 4 us each
        #: under uvloop, once per fetch on a replica fetcher's connection. Requests sent
        #: later are due later (one timeout per caller), so the timer is moved only when
        #: it fires, to the earliest deadline still pending.
        self._timer: asyncio.TimerHandle | None = None
        self._timer_due = 0.0
        self._writable = asyncio.Event()
        self._writable.set()
        self._closed = asyncio.Event()
        self._error: BaseException | None = None
        #: SASL sessions (KIP-368): the timer of the next re-authentication, its task,
        #: and the gate new requests wait at while it runs (None: open)
        self._reauth_timer: asyncio.TimerHandle | None = None
        self._reauth_task: asyncio.Task[None] | None = None
        self._reauth_gate: asyncio.Event | None = None
        #: the session lifetime the broker gave at the last (re-)authentication, in ms
        self.session_lifetime_ms = 0

    def __repr__(self) -> str:
        return f"Connection({self.host}:{self.port})"

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    async def open(
        cls, host: str, port: int, config: ConnectionConfig | None = None, *, negotiate: bool = True
    ) -> Connection:
        conn = cls(host, port, config)
        loop = asyncio.get_running_loop()
        security = conn.config.security
        # TLS (SSL, SASL_SSL): the handshake is part of connecting, under the same bound;
        # the broker's certificate is checked against ``host`` as the context says
        if security.uses_tls:
            connecting = loop.create_connection(
                lambda: conn, host, port, ssl=security.ssl_context, server_hostname=host
            )
        else:
            connecting = loop.create_connection(lambda: conn, host, port)
        try:
            await asyncio.wait_for(connecting, conn.config.connect_timeout_s)
        except (OSError, TimeoutError) as exc:
            raise ConnectionLost(f"cannot connect to {host}:{port}: {exc or 'timed out'}") from None
        try:
            if negotiate:
                await conn.negotiate_versions()
            if conn.config.security.uses_sasl:
                await conn.authenticate()
        except BaseException:
            conn.close()
            raise
        return conn

    async def authenticate(self) -> None:
        """SASL with the configured credentials (``client.sasl``); AuthenticationFailed
        when refused. Schedules the re-authentication the session needs."""
        credentials = self.config.security.sasl
        assert credentials is not None
        lifetime_ms = await sasl.authenticate(self._sasl_round_trip, credentials, self.versions)
        self.session_lifetime_ms = lifetime_ms
        delay = sasl.reauth_delay_s(lifetime_ms)
        if delay is not None and self._loop is not None and self._error is None:
            self._reauth_timer = self._loop.call_later(delay, self._start_reauth)

    async def _sasl_round_trip(self, api_key: int, version: int, body: Any) -> Any:
        frame = await self._round_trip(api_key, version, body, gated=False)
        return self._decode(frame, api_key, version)

    def _start_reauth(self) -> None:
        self._reauth_timer = None
        if self._error is None and self._loop is not None:
            self._reauth_task = self._loop.create_task(self._reauthenticate())

    async def _reauthenticate(self) -> None:
        """Hold new requests, let those in flight be answered, authenticate again."""
        gate = self._reauth_gate = asyncio.Event()
        try:
            pending = [entry.waiter for entry in self._inflight if not entry.waiter.done()]
            if pending:
                await asyncio.wait(pending)  # never cancels them (gather would)
            await self.authenticate()
        except Exception as exc:  # the connection cannot be used any more: close it
            self._fail(
                exc
                if isinstance(exc, ConnectionLost)
                else ConnectionLost(f"{self}: re-authentication failed: {exc}")
            )
        finally:
            self._reauth_gate = None
            self._reauth_task = None
            gate.set()

    async def negotiate_versions(self) -> dict[int, int]:
        """ApiVersions at our newest version. A broker that does not know that version
        answers UNSUPPORTED_VERSION, normally with a v0 body listing its ranges; we then
        ask again at the best version it lists, or at v0 when its body cannot be read
        (librdkafka's mock cluster answers v3 with a body in neither shape)."""
        version = API_VERSIONS_FIRST_TRY
        tried: set[int] = set()
        while version not in tried:
            tried.add(version)
            body = ApiVersionsRequest(
                client_software_name=CLIENT_SOFTWARE_NAME,
                client_software_version=CLIENT_SOFTWARE_VERSION,
            )
            frame = await self._round_trip(ApiKey.API_VERSIONS, version, body)
            response = _decode_api_versions(frame, version)
            if response is None:
                if _peek_error_code(frame) == ErrorCode.UNSUPPORTED_VERSION:
                    version = 0
                    continue
                break
            ranges = [(k.api_key, k.min_version, k.max_version) for k in response.api_keys]
            if response.error_code == ErrorCode.UNSUPPORTED_VERSION:
                version = retry_version(ranges) or 0
                continue
            if response.error_code != ErrorCode.NONE:
                break
            self.broker_ranges = {key: (lo, hi) for key, lo, hi in ranges}
            self.versions = negotiate(ranges)
            return self.versions
        raise UnsupportedApi(f"{self}: ApiVersions negotiation failed")

    def version(self, api_key: int) -> int:
        """The negotiated version of an API; UnsupportedApi when there is none."""
        try:
            return self.versions[api_key]
        except KeyError:
            name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else api_key
            raise UnsupportedApi(f"broker {self.host}:{self.port} does not serve {name}") from None

    def supports(self, api_key: int) -> bool:
        return api_key in self.versions

    # -- requests --------------------------------------------------------------------------

    async def request(
        self, api_key: int, body: Any, *, version: int | None = None, timeout_s: float | None = None
    ) -> Any:
        """Send one request and return the decoded response body."""
        v = self.version(api_key) if version is None else version
        frame = await self._round_trip(api_key, v, body, timeout_s)
        return self._decode(frame, api_key, v)

    async def send(self, api_key: int, body: Any, *, version: int | None = None) -> None:
        """Send a request that gets no response (Produce with acks=0)."""
        v = self.version(api_key) if version is None else version
        cid = self._inflight.next_id()
        frame = protocol.encode_request(
            protocol.make_request(api_key, v, cid, self.config.client_id, body)
        )
        await self._write([_SIZE.pack(len(frame)), frame])

    async def send_prebuilt(
        self, request: PrebuiltRequest, *, expect_response: bool, timeout_s: float | None = None
    ) -> bytes | memoryview | None:
        """Send a pre-built request; return the raw response frame (None when no response
        is expected). Decode it with ``protocol.decode_response`` if needed."""
        if not expect_response:
            await self._write([request.head_with(self._inflight.next_id()), request.tail])
            return None
        return await self._round_trip_prebuilt(request, timeout_s)

    async def request_prebuilt(
        self,
        request: PrebuiltRequest,
        *,
        timeout_s: float | None = None,
        decode: Callable[[bytes | memoryview, int], Any] | None = None,
    ) -> Any:
        """Send a pre-built request and return the decoded response body, as
        :meth:`request` does (a replica fetcher's Fetch, patched from a template).
        ``decode(frame, version)`` reads the response in place of the generic decoder
        (a reader of only what the caller uses); its ProtocolError closes the
        connection as an undecodable response does."""
        frame = await self._round_trip_prebuilt(request, timeout_s)
        if decode is None:
            return self._decode(frame, request.api_key, request.api_version)
        try:
            return decode(frame, request.api_version)
        except protocol.ProtocolError as exc:
            self._fail(ConnectionLost(f"{self}: undecodable response: {exc}"))
            raise ConnectionLost(f"{self}: undecodable response: {exc}") from None

    async def _round_trip_prebuilt(
        self, request: PrebuiltRequest, timeout_s: float | None
    ) -> bytes | memoryview:
        await self._wait_writable()
        transport, loop = self._bound()
        entry = self._track(loop, request.api_key, request.api_version, timeout_s)
        transport.writelines([request.head_with(entry.correlation_id), request.tail])
        return await self._await(entry)

    def _decode(self, frame: bytes | memoryview, api_key: int, version: int) -> Any:
        try:
            return protocol.decode_response(frame, api_key, version).body
        except protocol.ProtocolError as exc:
            self._fail(ConnectionLost(f"{self}: undecodable response: {exc}"))
            raise ConnectionLost(f"{self}: undecodable response: {exc}") from None

    async def _round_trip(
        self,
        api_key: int,
        version: int,
        body: Any,
        timeout_s: float | None = None,
        *,
        gated: bool = True,
    ) -> bytes | memoryview:
        await self._wait_writable(gated)
        transport, loop = self._bound()
        entry = self._track(loop, api_key, version, timeout_s)
        try:
            frame = protocol.encode_request(
                protocol.make_request(
                    api_key, version, entry.correlation_id, self.config.client_id, body
                )
            )
        except BaseException:
            self._inflight.forget(entry.correlation_id)
            raise
        transport.writelines([_SIZE.pack(len(frame)), frame])
        return await self._await(entry)

    def _track(
        self, loop: asyncio.AbstractEventLoop, api_key: int, version: int, timeout_s: float | None
    ) -> InFlight[_Waiter]:
        """A request put in flight, with its future and deadline (``timeout_s``, or the
        config's request timeout, from now); the deadline timer is moved up to it if it
        is due first."""
        timeout = self.config.request_timeout_s if timeout_s is None else timeout_s
        deadline = loop.time() + timeout
        entry = self._inflight.add(api_key, version, loop.create_future(), deadline, timeout)
        if self._timer is None or deadline < self._timer_due:
            self._arm_timer(loop, deadline)
        return entry

    async def _await(self, entry: InFlight[_Waiter]) -> bytes | memoryview:
        # A deadline on the future itself rather than asyncio.wait_for: wait_for wakes
        # the caller through a second future, a loop turn later, on every response.
        try:
            return await entry.waiter
        except _Expired:
            self._inflight.forget(entry.correlation_id)
            error = RequestTimedOut(f"{self}: no response within {entry.timeout_s:.1f}s")
            self._fail(error)
            raise error from None

    def _arm_timer(self, loop: asyncio.AbstractEventLoop, due: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(due, self._expire_due)
        self._timer_due = due

    def _expire_due(self) -> None:
        """The deadline timer fired: fail the requests past their deadline (each one's
        caller then closes the connection), wait for the earliest of the others."""
        self._timer = None
        loop = self._loop
        if loop is None:
            return
        now = loop.time()
        earliest: float | None = None
        for entry in self._inflight:
            if entry.waiter.done():
                continue
            if entry.deadline <= now:
                entry.waiter.set_exception(_Expired())
            elif earliest is None or entry.deadline < earliest:
                earliest = entry.deadline
        if earliest is not None:
            self._arm_timer(loop, earliest)

    async def _write(self, pieces: list[bytes | bytearray]) -> None:
        await self._wait_writable()
        self._bound()[0].writelines(pieces)

    async def _wait_writable(self, gated: bool = True) -> None:
        """Until the request may be written: not during a re-authentication (unless it
        is one of its own, ``gated=False``), nor while the transport's buffer is full."""
        while True:
            gate = self._reauth_gate
            if gated and gate is not None:
                await gate.wait()
                continue
            if self._error is not None:
                raise self._error
            if self._writable.is_set():
                return
            await self._writable.wait()

    def _bound(self) -> tuple[asyncio.Transport, asyncio.AbstractEventLoop]:
        """The transport to write to and its loop; the connection's error once it
        failed, ConnectionLost before it is connected."""
        if self._error is not None:
            raise self._error
        transport, loop = self._transport, self._loop
        if transport is None or loop is None:
            raise ConnectionLost(f"{self} is not connected")
        return transport, loop

    # -- closing ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._error is not None

    def close(self) -> None:
        self._fail(ConnectionLost(f"{self} closed"))

    async def wait_closed(self) -> None:
        await self._closed.wait()

    def _fail(self, error: BaseException) -> None:
        """Close the transport and fail every request in flight with ``error``."""
        if self._error is None:
            self._error = error
        for entry in self._inflight.drain():
            fut = entry.waiter
            if not fut.done():
                fut.set_exception(error)
                # a waiter nobody awaits any more must not log "exception never retrieved"
                fut.exception()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
            self._reauth_timer = None
        self._writable.set()  # wake writers so that they see the error
        transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()
        else:
            self._closed.set()

    # -- asyncio.BufferedProtocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement the Transport interface without subclassing it
        self._transport = cast(asyncio.Transport, transport)
        self._loop = asyncio.get_running_loop()
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                import socket

                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._receiver.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        try:
            for frame in self._receiver.buffer_updated(nbytes):
                fut = self._inflight.complete(frame).waiter
                if not fut.done():
                    fut.set_result(frame)
        except (protocol.ProtocolError, CorrelationMismatch) as exc:
            self._fail(ConnectionLost(f"{self}: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionLost(f"{self}: connection lost{': ' + str(exc) if exc else ''}"))
        self._closed.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()


async def request_once(
    host: str,
    port: int,
    api_key: int,
    api_version: int,
    body: Any,
    config: ConnectionConfig | None = None,
) -> Any:
    """Open a connection, send one request at ``api_version`` (no ApiVersions exchange),
    return the decoded response body, close. Raises ClientError (ConnectionLost,
    RequestTimedOut) when the broker cannot be reached or does not answer in time."""
    conn = await Connection.open(host, port, config, negotiate=False)
    try:
        return await conn.request(api_key, body, version=api_version)
    finally:
        conn.close()
        await conn.wait_closed()
