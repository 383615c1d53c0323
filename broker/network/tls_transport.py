"""TLS on one connection of the Processor's raw non-blocking sockets, through memory BIOs.

The Processor reads and writes its sockets itself (``processor`` explains why: no asyncio
transports), so TLS cannot come from ``loop.create_server(ssl=...)``. Each connection of
a TLS listener gets a ``TlsSession``: an ``ssl.SSLObject`` between two ``MemoryBIO``s.
The session never touches the socket on its own account except in ``flush``; the rest is
pure state:

    receive(ciphertext) -> plaintext   feed what recv() returned; drives the handshake
                                       first, then decrypts every whole record there is
    encrypt(plaintext)                 append the records to the ciphertext backlog
    flush(sock)                        send the backlog, as much as the socket takes

Invariants the Processor relies on:

- Until ``handshake_done`` the connection serves nothing: ``receive`` returns no
  plaintext before the handshake completes. Bytes a client sends right behind its
  Finished message (its first request) come out of the same ``receive`` call that
  completes the handshake.
- ``receive`` drains the SSLObject: every whole record fed in is decrypted and returned,
  so no plaintext waits inside OpenSSL where no readiness event would announce it. Only
  the tail of an incomplete record stays in the incoming BIO until more bytes arrive.
- Anything OpenSSL wants to say (the handshake's flights, TLS 1.3 session tickets, the
  answer to a peer's KeyUpdate, a close_notify alert) lands in the backlog; the Processor
  flushes it after every ``receive`` and keeps a writer registered while any is left.
- Ciphertext the socket did not take stays in the backlog, in order, and is flushed on
  writability before anything else is encrypted behind it (``ResponseSend.write_tls``
  stops encrypting once the backlog reaches ``HIGH_WATER``).

Errors: a malformed record, a failed handshake (garbage instead of a ClientHello, an
untrusted client certificate) raises ``ssl.SSLError`` out of ``receive``; the Processor
closes that connection only.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Sequence
from typing import Final

from broker.security.principal import ANONYMOUS, KafkaPrincipal
from broker.security.principal_mapping import MappingRule, map_name, subject_name

#: ciphertext kept before the writer stops encrypting more of a response
HIGH_WATER: Final = 256 * 1024

#: plaintext asked of the SSLObject per read (it returns at most one record's worth)
_READ_SIZE: Final = 256 * 1024


class TlsSession:
    """One connection's TLS state (server side). Not safe across tasks."""

    __slots__ = (
        "_incoming",
        "_object",
        "_outgoing",
        "backlog",
        "handshake_done",
        "peer_closed",
        "started_at",
        "writer_registered",
    )

    def __init__(self, context: ssl.SSLContext, started_at: float) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._object = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        #: ciphertext waiting for the socket, oldest first
        self.backlog = bytearray()
        self.handshake_done = False
        #: the peer sent close_notify: nothing more will come
        self.peer_closed = False
        #: when the connection was accepted (the handshake bound counts from here)
        self.started_at = started_at
        #: whether the Processor watches the socket for writability on this session's
        #: account (a backlog outside a response being written)
        self.writer_registered = False

    # --- reading --------------------------------------------------------------------------

    def receive(self, data: bytes) -> bytes:
        """Feed ciphertext; return the plaintext it completes (b"" during the handshake or
        for a partial record). Raises ssl.SSLError on a bad handshake or record."""
        self._incoming.write(data)
        obj = self._object
        if not self.handshake_done:
            try:
                obj.do_handshake()
            except ssl.SSLWantReadError:
                return b""
            finally:  # the next flight, or the alert of a failed handshake
                self._collect()
            self.handshake_done = True
        chunks: list[bytes] = []
        while True:
            try:
                chunk = obj.read(_READ_SIZE)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                self.peer_closed = True
                break
            if not chunk:  # the ssl module's answer to a close_notify read
                self.peer_closed = True
                break
            chunks.append(chunk)
        self._collect()  # post-handshake messages may have produced an answer
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    # --- writing --------------------------------------------------------------------------

    def encrypt(self, data: bytes | bytearray | memoryview) -> None:
        """Turn ``data`` into records at the end of the backlog."""
        self._object.write(data)
        self._collect()

    def flush(self, sock: socket.socket) -> bool:
        """Send the backlog without blocking; True once it is empty. OSError other than
        a full socket (a dead peer) propagates."""
        backlog = self.backlog
        send = sock.send
        while backlog:
            try:
                sent = send(backlog)
            except (BlockingIOError, InterruptedError):
                return False
            del backlog[:sent]  # bytearray drops its head without moving the rest
            if not sent:
                return False
        return True

    @property
    def pending(self) -> int:
        """Ciphertext bytes not yet taken by the socket."""
        return len(self.backlog)

    def _collect(self) -> None:
        if self._outgoing.pending:
            self.backlog += self._outgoing.read()

    # --- after the handshake ------------------------------------------------------------

    def peer_certificate(self) -> bytes | None:
        """The client's certificate (DER) when it sent one and it was verified."""
        return self._object.getpeercert(binary_form=True)

    def describe(self) -> str:
        """``TLSv1.3 TLS_AES_256_GCM_SHA384``: for the log line of a finished handshake."""
        cipher = self._object.cipher()
        return f"{self._object.version()} {cipher[0] if cipher else '?'}"


class ListenerTls:
    """What a TLS listener's Processors share: the current server context (replaced
    whole when its certificates are reloaded; connections already open keep theirs) and
    the principal mapping rules."""

    def __init__(
        self, listener_name: str, context: ssl.SSLContext, rules: Sequence[MappingRule]
    ) -> None:
        self.listener_name = listener_name
        self.context = context
        self.rules = tuple(rules)

    def session(self, now: float) -> TlsSession:
        """A new connection's session, on the context of the moment."""
        return TlsSession(self.context, now)

    def principal(self, session: TlsSession) -> KafkaPrincipal:
        """The principal of a finished handshake: ``User:<mapped subject>`` with a client
        certificate, ANONYMOUS without. NoMatchingRule when no rule maps the subject."""
        der = session.peer_certificate()
        if der is None:
            return ANONYMOUS
        return KafkaPrincipal.user(map_name(self.rules, subject_name(der)))
