"""Processor: owns a set of connections, turns bytes into requests and responses into bytes.

Everything is driven by readiness callbacks on sockets the Processor owns (``add_reader``
/ ``add_writer``), not by asyncio transports or streams: streams are slow under
concurrency and uvloop's transports refuse both ``sendfile`` and a writer on their socket,
which zero-copy responses need (docs/architecture.md, "Performance facts").

The life of a request, as the methods below run it:

    _on_readable        recv, cut frames (size checked before buffering), keep them
    _dispatch           parse the next frame, take a reply slot, offer it to the
                        RequestChannel (the connection is muted, lazily: below); on a
                        SASL listener the connection's authenticator sees the frame
                        first and may answer, refuse or close instead (sasl_io)
    deferred            (handler task) a Produce waits in a purgatory: read on (pipelining)
    respond             (handler task) hand the outcome on at once (queued behind one
                        being handed on, should its write give another)
    _reply              fill the request's reply slot; None fills it with nothing
    _flush              encode and write the filled slots at the head, in request order
    _on_writable        continue a write that filled the socket buffer
    _resume             unmute: dispatch the next frame already read, or read again

Pipelining (``broker.network.pipeline``): a connection may have up to
``max_pipelined_requests`` requests in the broker, of which at most one in the handlers;
responses are written strictly in request order from the connection's ``ReplyQueue``.

All of it runs on one event loop: the Processors of a listener are a partition of its
connections (Kafka's ``num.network.threads``), not threads.

Muting is lazy. A muted connection reads nothing (``Connection.muted``), but its reader
stays registered: ``_on_readable`` unregisters it only if bytes arrive while it is muted,
and ``_unmute`` registers it again. Registering is not free (under uvloop each
add_reader after a remove_reader makes a poll handle, an ioctl and an epoll_ctl, and the
removal several epoll_ctl calls), and most clients send nothing while they wait for their
answer, so a request usually costs no registration at all. A client that pipelines
produces does send while its request is handled: the connection reads those bytes ahead
(``Connection.reads_ahead``, bounded by the pipeline depth) instead of unregistering,
which it would otherwise do every few requests. Backpressure is unchanged: bytes that
arrive while the connection must not read (a full pipeline, a full request channel, a
request whose answer must be written before the next is read) stay in the kernel's
buffer, at the cost of one ignored readiness event.

TLS (SSL and SASL_SSL listeners, ``tls_io`` and ``tls_transport``): each connection has a
``TlsSession``; ``_on_readable`` hands what it read to it first and cuts frames from the
plaintext that comes out (nothing until the handshake is done), and ``_write`` encrypts
with ``ResponseSend.write_tls`` instead of sending (no sendfile). A handshake not done
within ``handshake_timeout_s`` of the accept is closed by the idle sweep.

Errors stay with their connection: a bad frame, a dead peer or a failing handler closes
(or answers) that connection only.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import socket
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from broker.metrics import BrokerMetrics, LocalCounter, RequestMetrics
from broker.network.codec import Codec
from broker.network.connection import Connection, ConnState
from broker.network.pipeline import DEFAULT_DEPTH, lets_next_in, reads_on_when_answered
from broker.network.request_channel import Request, RequestChannel
from broker.network.sasl_io import SaslIo
from broker.network.send import ResponseSend
from broker.network.tls_io import TlsIo
from broker.network.tls_transport import ListenerTls
from broker.security.sasl_authenticator import SaslAuthenticator
from protocol.errors import ProtocolError

log = logging.getLogger(__name__)

#: bytes asked of recv() per readiness event. A produce request carrying a 64 KiB batch
#: (librdkafka's and perf's batch.size in the benchmarks) is a little larger than 64 KiB:
#: at 64 KiB per recv it took two reads and two loop callbacks; 256 KiB (uvloop's own
#: read size) takes it, and the next pipelined request, in one.
RECV_SIZE = 256 * 1024


@dataclass(frozen=True, slots=True)
class ProcessorSettings:
    max_frame_size: int = 104857600  # socket.request.max.bytes
    idle_timeout_s: float = 600.0  # connections.max.idle.ms / 1000
    send_buffer: int = 102400  # socket.send.buffer.bytes; -1 keeps the OS default
    receive_buffer: int = 102400  # socket.receive.buffer.bytes
    #: requests of one connection in the broker at once (broker.network.pipeline: past
    #: the first five only small ones); 1 is Kafka's rule of one request per connection
    max_pipelined_requests: int = DEFAULT_DEPTH
    #: a TLS connection that has not finished its handshake this long after it was
    #: accepted is closed (``tls_transport``; see docs/architecture.md for the bound)
    handshake_timeout_s: float = 10.0


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _busy(
    method: Callable[Concatenate[Processor, _P], _R],
) -> Callable[Concatenate[Processor, _P], _R]:
    """Count the time spent in ``method`` as this processor's busy time (the outermost
    call only: a response written from inside a read is not counted twice). The
    processor is idle for the rest: Kafka's network processor idle ratio."""

    @functools.wraps(method)
    def timed(self: Processor, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if self._busy_depth:
            return method(self, *args, **kwargs)
        self._busy_depth = 1
        started = self._clock()
        try:
            return method(self, *args, **kwargs)
        finally:
            self._busy_depth = 0
            self.busy_s += self._clock() - started

    return timed


class Processor:
    """One network processor. Event-loop bound; not safe across threads."""

    _ids = itertools.count()

    def __init__(
        self,
        processor_id: int,
        listener: str,
        channel: RequestChannel,
        codec: Codec,
        metrics: BrokerMetrics,
        settings: ProcessorSettings,
        clock: Callable[[], float],
        on_close: Callable[[Connection], None] = lambda conn: None,
        tls: ListenerTls | None = None,
        authenticator: Callable[[], SaslAuthenticator] | None = None,
    ) -> None:
        self.id = processor_id
        self.listener = listener
        self._channel = channel
        self._codec = codec
        self._metrics = metrics
        self._settings = settings
        self._clock = clock
        self._on_close = on_close
        #: the listener's TLS (SSL, SASL_SSL): every connection handshakes first
        self._tls = tls
        #: makes each connection's SASL state on a SASL listener (None: no SASL)
        self._authenticator = authenticator
        self._loop = asyncio.get_running_loop()
        self._tls_io = TlsIo(listener, tls, self._loop, metrics, clock, self._close)
        self._sasl_io = SaslIo(
            codec, self._loop, settings.max_frame_size, self._answer_later, self._close
        )
        self._connections: dict[int, Connection] = {}  # by fd
        self._responses: deque[tuple[Request, Any]] = deque()
        self._processing_responses = False
        self._draining = False
        self._idle_handle: asyncio.TimerHandle | None = None
        self._drained = asyncio.Event()  # set once draining and no connection is busy
        # metric children resolved once per label value (labels() is not free)
        self._received = metrics.network_received_bytes.labels(listener=listener)
        self._sent = metrics.network_sent_bytes.labels(listener=listener)
        self._open = metrics.connections.labels(listener=listener)
        # per API key: its name, its request counter on this listener, its cells
        self._per_api: dict[int, tuple[str, LocalCounter, RequestMetrics]] = {}
        # idle ratio: busy seconds (see _busy) against the time since it was made
        self.created_at = clock()
        self.busy_s = 0.0
        self._busy_depth = 0

    # --- bookkeeping ------------------------------------------------------------------------

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    @property
    def busy_count(self) -> int:
        """Connections with a request in the broker (queued, handled, waiting in a purgatory
        or being written)."""
        return sum(1 for c in self._connections.values() if not c.idle)

    def start(self) -> None:
        self._schedule_idle_sweep()

    # --- new connections (from the Acceptor) --------------------------------------------

    def accept(self, sock: socket.socket, address: tuple[str, int]) -> None:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._settings.send_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._settings.send_buffer)
        if self._settings.receive_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._settings.receive_buffer)
        local = sock.getsockname()
        # Kafka's connection id: local address, remote address, and a disambiguating index
        conn_id = f"{local[0]}:{local[1]}-{address[0]}:{address[1]}-{next(self._ids)}"
        conn = Connection(
            sock,
            conn_id,
            self.listener,
            address,
            self._settings.max_frame_size,
            self._clock(),
            self._settings.max_pipelined_requests,
        )
        if self._tls is not None:
            conn.tls = self._tls.session(conn.last_active)
        if self._authenticator is not None:
            sasl = conn.sasl = self._authenticator()
            # until authenticated, frames are capped by sasl.server.max.receive.size
            conn.decoder.max_frame_size = sasl.settings.max_receive_size
        self._connections[conn.fd] = conn
        self._open.inc()
        self._watch(conn)

    # --- reading ------------------------------------------------------------------------------

    @_busy
    def _on_readable(self, conn: Connection) -> None:
        if conn.muted:
            # muted lazily (module docstring): bytes arrived while the connection must
            # not read; stop watching now, so they wait in the kernel's buffer, not ours
            self._stop_watching(conn)
            return
        try:
            data = conn.sock.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._close(conn, "error", exc)
            return
        if not data:
            self._close(conn, "peer")
            return
        conn.last_active = self._clock()
        self._received.inc(len(data))
        plain: bytes | memoryview = data
        if conn.tls is not None:
            plain = self._tls_io.decrypt(conn, conn.tls, data)
            if not plain:
                return  # handshaking, a partial record, or the connection closed
        try:
            frames = conn.decoder.feed(plain)
        except ProtocolError as exc:  # a declared size out of bounds: nothing was buffered
            self._metrics.malformed_requests.labels(listener=self.listener).inc()
            self._close(conn, "malformed", exc)
            return
        if frames:
            conn.pending.extend(frames)
            if conn.state is ConnState.READING:  # with room: not muted, checked above
                self._dispatch(conn)
            # else read ahead: dispatched once the request in the handlers lets it in

    def _dispatch(self, conn: Connection) -> None:
        """Parse the next pending frame and hand it to the handlers (or answer it).

        Called in READING with room in the connection's pipeline only. On a SASL
        listener the connection's authenticator sees the frame first (``sasl_io``)."""
        frame = conn.pending.popleft()
        sasl = conn.sasl
        if sasl is not None and self._sasl_io.took(conn, sasl, frame, self._clock()):
            return
        try:
            decoded = self._codec.decode_request(frame)
        except ProtocolError as exc:
            self._metrics.malformed_requests.labels(listener=self.listener).inc()
            self._answer_malformed(conn, exc)
            return
        except Exception as exc:  # a codec bug: the contract is ProtocolError only
            log.exception("decoding a request from %s failed unexpectedly", conn.id)
            self._metrics.malformed_requests.labels(listener=self.listener).inc()
            self._close(conn, "malformed", exc)
            return
        header = decoded.header
        per_api = self._per_api.get(header.api_key)
        if per_api is None:
            per_api = self._resolve_per_api(header.api_key)
        api_name, requests, cells = per_api
        requests.inc()
        request = Request(
            header=header,
            body=decoded.body,
            listener=self.listener,
            connection_id=conn.id,
            client_host=conn.client_host,
            client_port=conn.client_port,
            size=len(frame),
            received_at=self._clock(),
            responder=self,
            api_name=api_name,
            connection=conn,
            metrics=cells,
            principal=conn.principal,
        )
        conn.replies.open(request, request.size)
        if self._channel.offer(request):
            conn.in_flight = request
            conn.move(ConnState.IN_FLIGHT)
        else:  # backpressure: park until a handler frees a slot
            conn.blocked_request = request
            conn.move(ConnState.BLOCKED)
            self._channel.when_space(lambda: self._retry_blocked(conn))

    def _retry_blocked(self, conn: Connection) -> bool:
        request = conn.blocked_request
        if conn.state is not ConnState.BLOCKED or request is None:
            return False  # closed while parked: the slot goes to the next in line
        if not self._channel.offer(request):
            self._channel.when_space(lambda: self._retry_blocked(conn))
            return False
        conn.blocked_request = None
        conn.in_flight = request
        conn.move(ConnState.IN_FLIGHT)
        return True

    def _answer_malformed(self, conn: Connection, exc: ProtocolError) -> None:
        """Answer a frame whose header parsed but body did not; close when we cannot."""
        header = exc.header
        response = None
        if header is not None:
            try:
                response = self._codec.error_response(header, exc.error_code)
            except Exception:  # a failing error builder must not take the processor down
                log.exception("building the error response for %r failed", exc)
        if response is None:
            self._close(conn, "malformed", exc)
            return
        log.info("answering %s with error %s: %s", conn.id, exc.error_code, exc.message)
        token = object()  # the reply slot of an answer that no handler sees
        conn.replies.open(token)
        conn.in_flight = token
        conn.move(ConnState.IN_FLIGHT)
        # sent on the next loop iteration, not recursively: a burst of such frames read
        # together must not grow the stack (send -> unmute -> dispatch -> send ...)
        self._loop.call_soon(self._answer_later, conn, token, response)

    @_busy
    def _answer_later(self, conn: Connection, token: object, response: object) -> None:
        self._reply(conn, token, response)

    # --- responses (the Responder interface, called from handler tasks) -------------------

    @_busy
    def deferred(self, request: Request) -> None:
        """The handler returned a Future for ``request``: it waits in a purgatory. A
        pipelined API (Produce) has done its local work -- appended -- so the connection
        may take its next request; its response keeps its place in the order."""
        conn = request.connection
        if not isinstance(conn, Connection) or conn.in_flight is not request:
            return
        if not lets_next_in(request.api_key):
            return  # Kafka's rule: the connection waits for the response
        conn.in_flight = None
        conn.move(ConnState.READING)
        self._unmute(conn)

    @_busy
    def respond(self, request: Request, response: object | None) -> None:
        # Written at once rather than on a later loop iteration: that saves a loop round
        # trip per request. A response given while one is being handled here (from
        # inside its write) waits in the queue, which keeps them in the order given.
        if self._processing_responses:
            self._responses.append((request, response))
            return
        self._processing_responses = True
        try:
            while True:
                conn = request.connection
                assert isinstance(conn, Connection)
                self._reply(conn, request, response)
                if not self._responses:
                    break
                request, response = self._responses.popleft()
        finally:
            self._processing_responses = False

    def respond_error(self, request: Request, error_code: int) -> None:
        try:
            response = self._codec.error_response(request.header, error_code)
        except Exception:  # the handler already failed; its connection is all we can lose
            log.exception("building the error response for %s failed", request)
            response = None
        if response is None:
            conn = request.connection
            if isinstance(conn, Connection) and conn.state is not ConnState.CLOSED:
                self._close(conn, "handler-error")
            return
        self.respond(request, response)

    def _reply(self, conn: Connection, key: object, response: object | None) -> None:
        """``key``'s outcome is known: fill its slot, then write what the order allows."""
        if conn.state is ConnState.CLOSED:
            return  # the client went away while its request was handled
        if not conn.replies.fill(key, response):
            log.error("connection %s: a response for a request it does not owe", conn.id)
            return
        if conn.in_flight is key:
            conn.in_flight = None
            # the newest request: read on (no response, or earlier answers owed), or
            # wait until its answer is out (broker.network.pipeline)
            earlier_owed = len(conn.replies) > 1 or conn.send is not None
            if reads_on_when_answered(response is not None, earlier_owed):
                conn.move(ConnState.READING)
            else:
                conn.move(ConnState.SENDING)
        self._flush(conn)

    # --- writing --------------------------------------------------------------------------------

    def _flush(self, conn: Connection) -> None:
        """Write the filled replies at the head of the order, until one fills the socket
        buffer or the head is still awaited; then let the connection read on if it may."""
        while conn.send is None and conn.replies:  # nothing owed: no take to try
            head = conn.replies.take()
            if head is None:
                break
            key, response = head
            request = key if isinstance(key, Request) else None
            if response is None:
                if request is not None and request.throttle_ms:
                    self._throttle(conn, request.throttle_ms)  # acks=0: muted all the same
                continue  # a request that gets no response keeps only its place
            try:
                send = ResponseSend(self._codec.encode(response))
            except Exception as exc:  # an unencodable response is a bug; it costs one connection
                log.exception("encoding the response to %s failed", request)
                self._close(conn, "encode-error", exc)
                return
            conn.send = send
            conn.sent_request = request
            done = self._write(conn)
            if done is None:
                return  # the connection died and is closed
            if not done:
                if conn.tls is not None:
                    conn.tls.writer_registered = False  # its writer, if any, is replaced
                self._loop.add_writer(conn.fd, self._on_writable, conn)
                return
            self._finish_response(conn)
        self._resume(conn)

    @_busy
    def _on_writable(self, conn: Connection) -> None:
        if self._write(conn):
            # unregister before finishing: flushing may start the next response
            self._loop.remove_writer(conn.fd)
            self._finish_response(conn)
            self._flush(conn)

    def _write(self, conn: Connection) -> bool | None:
        """Write what the socket takes: True when the response is out, False when the
        socket is full, None when the connection died (and is now closed)."""
        send = conn.send
        assert send is not None
        before = send.sent
        try:
            if conn.tls is None:
                done = send.write(conn.sock)
            else:  # no sendfile under TLS: regions are read and encrypted (send module)
                done = send.write_tls(conn.tls, conn.sock)
        except OSError as exc:
            self._close(conn, "error", exc)
            return None
        self._sent.inc(send.sent - before)
        conn.last_active = self._clock()
        return done

    def _finish_response(self, conn: Connection) -> None:
        request = conn.sent_request
        if request is not None and request.metrics is not None:
            now = self._clock()
            request.metrics.total_time.observe(now - request.received_at)
            if request.response_ready_at:
                request.metrics.response_time.observe(now - request.response_ready_at)
        conn.send = None
        conn.sent_request = None
        if request is not None and request.throttle_ms:
            self._throttle(conn, request.throttle_ms)

    def _resume(self, conn: Connection) -> None:
        """After writing: the newest request's answer is out (SENDING), or a slot of the
        pipeline may have freed (READING): read on if the connection may.

        In READING this runs ``_unmute`` whatever the reader's registration: muting is
        lazy, so a connection whose pipeline was full may still be registered and yet
        hold frames in ``pending`` that only a freed slot lets out."""
        if conn.state is ConnState.SENDING:
            if conn.replies or conn.send is not None:
                return  # earlier answers, or this one, still to be written
            conn.move(ConnState.READING)
        elif conn.state is not ConnState.READING:
            return
        if conn.sasl is not None and conn.sasl.failed and conn.idle:
            self._close(conn, "authentication-failed")  # its refusal is written
            return
        self._unmute(conn)

    # --- muting ---------------------------------------------------------------------------------

    def _throttle(self, conn: Connection, delay_ms: int) -> None:
        """A client quota's throttle (KIP-219): the response is out; read nothing more of
        ``conn`` for ``delay_ms``, then resume as after any write."""
        until = self._clock() + delay_ms / 1000.0
        if until <= conn.throttled_until:
            return  # a longer throttle is running
        first = not conn.throttled_until
        conn.throttled_until = until
        if first:
            self._loop.call_later(delay_ms / 1000.0, self._unthrottle, conn)

    @_busy
    def _unthrottle(self, conn: Connection) -> None:
        if conn.state is ConnState.CLOSED:
            return
        left = conn.throttled_until - self._clock()
        if left > 0.001:  # extended meanwhile
            self._loop.call_later(left, self._unthrottle, conn)
            return
        conn.throttled_until = 0.0
        self._resume(conn)

    def _watch(self, conn: Connection) -> None:
        """Register the reader of a connection that has none."""
        self._loop.add_reader(conn.fd, self._on_readable, conn)
        conn.reader_registered = True

    def _stop_watching(self, conn: Connection) -> None:
        if conn.reader_registered:
            self._loop.remove_reader(conn.fd)
            conn.reader_registered = False

    def _unmute(self, conn: Connection) -> None:
        """In READING: serve a frame already read, or wait for more bytes -- when the
        pipeline has room; else stay muted until its oldest response is written."""
        if self._draining:
            if conn.idle:
                self._close(conn, "shutdown")
            else:  # earlier responses still owed: read nothing, close once they are out
                self._stop_watching(conn)
            return
        if conn.throttled_until:
            return  # a client quota's throttle: _unthrottle resumes it
        # Without room in the pipeline nothing changes: the connection stays muted by it
        # (lazily: module docstring). Room is asked only when there is something to do:
        # most often no frame is pending and the reader is still registered.
        if conn.pending:
            if conn.has_room:
                self._dispatch(conn)
        elif not conn.reader_registered and conn.has_room:
            self._watch(conn)

    # --- idle connections, closing, shutdown ------------------------------------------------

    def _schedule_idle_sweep(self) -> None:
        bound = self._settings.idle_timeout_s
        if self._tls is not None:
            bound = min(bound, self._settings.handshake_timeout_s)
        interval = min(max(bound / 4, 0.01), 5.0)
        self._idle_handle = self._loop.call_later(interval, self._sweep_idle)

    def _sweep_idle(self) -> None:
        """Close connections with nothing in the broker and no traffic for the idle timeout.

        A muted connection is never idle: its request (a long poll, say) is still running.
        """
        now = self._clock()
        deadline = now - self._settings.idle_timeout_s
        handshake_deadline = now - self._settings.handshake_timeout_s
        for conn in list(self._connections.values()):
            tls = conn.tls
            if tls is not None and not tls.handshake_done:
                # counted from the accept, whatever trickles in (a TLS slow-loris)
                if tls.started_at <= handshake_deadline:
                    self._tls_io.handshake_timed_out(conn)
            elif conn.idle and conn.last_active <= deadline:
                self._close(conn, "idle")
        self._schedule_idle_sweep()

    def _close(self, conn: Connection, reason: str, exc: BaseException | None = None) -> None:
        if conn.state is ConnState.CLOSED:
            return
        if exc is not None:
            log.info("closing %s (%s): %s", conn.id, reason, exc)
        self._stop_watching(conn)
        if conn.send is not None or (conn.tls is not None and conn.tls.writer_registered):
            self._loop.remove_writer(conn.fd)
        conn.move(ConnState.CLOSED)
        conn.pending.clear()
        conn.blocked_request = None
        conn.in_flight = None
        conn.replies.clear()
        conn.send = None
        conn.sent_request = None
        del self._connections[conn.fd]
        conn.sock.close()
        self._open.dec()
        self._metrics.connections_closed.labels(listener=self.listener, reason=reason).inc()
        self._on_close(conn)
        self._check_drained()

    def _check_drained(self) -> None:
        if self._draining and self.busy_count == 0:
            self._drained.set()

    def begin_shutdown(self) -> None:
        """Stop taking requests: idle and parked connections close now, busy ones after
        the responses they are owed are written (pipelined ones included)."""
        self._draining = True
        for conn in list(self._connections.values()):
            if conn.idle or conn.state is ConnState.BLOCKED:
                self._close(conn, "shutdown")
            else:  # a pipelined connection in READING reads nothing more: stop now
                self._stop_watching(conn)
        self._check_drained()

    async def wait_drained(self) -> None:
        await self._drained.wait()

    def close_all(self) -> None:
        if self._idle_handle is not None:
            self._idle_handle.cancel()
        for conn in list(self._connections.values()):
            self._close(conn, "shutdown")

    # --- metrics ----------------------------------------------------------------------------

    def _resolve_per_api(self, api_key: int) -> tuple[str, LocalCounter, RequestMetrics]:
        """What ``_dispatch`` needs of an API, looked up once per API key (labels()
        is not free): its name, its request counter, its per-request cells."""
        name = self._codec.api_name(api_key)
        counter = self._metrics.requests.labels(api=name, listener=self.listener)
        per_api = self._per_api[api_key] = (name, counter, self._metrics.request_metrics(name))
        return per_api

    def principals(self) -> Counter[tuple[str, str]]:
        """Open connections per (listener, principal)."""
        return Counter((self.listener, str(c.principal)) for c in self._connections.values())

    def idle_seconds(self) -> float:
        """Seconds since this processor was made that it spent outside its callbacks."""
        return max(0.0, self._clock() - self.created_at - self.busy_s)
