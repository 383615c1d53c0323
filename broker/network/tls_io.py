"""The Processor's TLS side: driving each connection's ``TlsSession`` on its socket.

The Processor owns the sockets and the connection state; this owns what TLS adds to
them, for one Processor:

    decrypt        ciphertext read -> plaintext frames, the handshake first; a finished
                   handshake is timed and gives the connection its principal
    flush          the session's own ciphertext (handshake flights, session tickets,
                   the answer to a KeyUpdate) when no response is being written; a
                   writer stays registered while some is left
    failures       a failed handshake or a bad record closes that connection only,
                   after one attempt to send the alert saying why; a handshake not done
                   within the bound is closed by the Processor's sweep

Responses are encrypted by ``ResponseSend.write_tls`` on the Processor's write path, which
drains the same backlog first, so ciphertext leaves in the order it was made. A
response's writer replaces the session's own writer (one writer per socket) and clears
``writer_registered``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable

from broker.metrics import BrokerMetrics
from broker.network.connection import Connection, ConnState
from broker.network.tls_transport import ListenerTls, TlsSession
from broker.security.principal_mapping import NoMatchingRule

log = logging.getLogger(__name__)

#: closes a connection: (connection, reason, exception or None)
Close = Callable[[Connection, str, BaseException | None], None]


class TlsIo:
    """TLS on the connections of one Processor. Event-loop bound."""

    def __init__(
        self,
        listener: str,
        tls: ListenerTls | None,
        loop: asyncio.AbstractEventLoop,
        metrics: BrokerMetrics,
        clock: Callable[[], float],
        close: Close,
    ) -> None:
        self._listener = listener
        self._tls = tls
        self._loop = loop
        self._clock = clock
        self._close = close
        self._handshake_time = metrics.tls_handshake_duration.labels(listener=listener)
        self._handshake_failed = metrics.tls_handshake_failures.labels(listener=listener)

    def decrypt(self, conn: Connection, tls: TlsSession, data: bytes) -> memoryview | bytes:
        """The plaintext ``data`` completes (valid until the next ``decrypt`` of the
        listener); empty while handshaking or once closed."""
        handshaking = not tls.handshake_done
        try:
            plain = tls.receive(data)
        except ssl.SSLError as exc:
            self._failed(conn, tls, handshaking, exc)
            return b""
        if handshaking and tls.handshake_done and not self._finished(conn, tls):
            return b""
        if tls.peer_closed:
            self._close(conn, "peer", None)
            return b""
        if tls.pending and conn.send is None:
            self.flush(conn, tls)
        return plain if conn.state is not ConnState.CLOSED else b""

    def flush(self, conn: Connection, tls: TlsSession) -> None:
        """Send the session's own backlog; watch for writability while some is left."""
        try:
            done = tls.flush(conn.sock)
        except OSError as exc:
            self._close(conn, "error", exc)
            return
        if not done and not tls.writer_registered:
            self._loop.add_writer(conn.fd, self._on_writable, conn)
            tls.writer_registered = True

    def handshake_timed_out(self, conn: Connection) -> None:
        self._handshake_failed.inc()
        self._close(conn, "tls-handshake-timeout", None)

    def _on_writable(self, conn: Connection) -> None:
        tls = conn.tls
        if tls is None or conn.state is ConnState.CLOSED:
            return
        try:
            done = tls.flush(conn.sock)
        except OSError as exc:
            self._close(conn, "error", exc)
            return
        if done:
            self._loop.remove_writer(conn.fd)
            tls.writer_registered = False

    def _finished(self, conn: Connection, tls: TlsSession) -> bool:
        """Time the handshake and take the principal from the client's certificate;
        False when no mapping rule names it (the connection is then closed)."""
        assert self._tls is not None
        self._handshake_time.observe(max(0.0, self._clock() - tls.started_at))
        try:
            conn.principal = self._tls.principal(tls)
        except (NoMatchingRule, ValueError) as exc:
            self._handshake_failed.inc()
            self._close(conn, "tls-principal", exc)
            return False
        log.info(
            "connection %s on %s: TLS handshake done (%s), principal %s",
            conn.id, self._listener, tls.describe(), conn.principal,
        )  # fmt: skip
        return True

    def _failed(
        self, conn: Connection, tls: TlsSession, handshaking: bool, exc: BaseException
    ) -> None:
        if handshaking:
            self._handshake_failed.inc()
        with contextlib.suppress(OSError):  # the alert saying why, if the socket takes it
            tls.flush(conn.sock)
        self._close(conn, "tls-handshake-failed" if handshaking else "tls-error", exc)
