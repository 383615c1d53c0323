"""TLS on one connection of the Processor's raw non-blocking sockets, through memory BIOs.

The Processor reads and writes its sockets itself (``processor`` explains why: no asyncio
transports), so TLS cannot come from ``loop.create_server(ssl=...)``. Each connection of
a TLS listener gets a ``TlsSession``: an ``ssl.SSLObject`` between two ``MemoryBIO``s.
The session never touches the socket on its own account except in ``flush``; the rest is
pure state:

    receive(ciphertext) -> plaintext   feed what recv() returned; drives the handshake
                                       first, then decrypts every whole record there is
                                       (into the listener's ``PlaintextBuffer``)
    encrypt(plaintext)                 make records of it, behind the pending ciphertext
    flush(sock)                        send the pending ciphertext, as much as the socket
                                       takes; the rest is kept in the backlog

Invariants the Processor relies on:

- Until ``handshake_done`` the connection serves nothing: ``receive`` returns no
  plaintext before the handshake completes. Bytes a client sends right behind its
  Finished message (its first request) come out of the same ``receive`` call that
  completes the handshake.
- ``receive`` drains the SSLObject: every whole record fed in is decrypted and returned,
  so no plaintext waits inside OpenSSL where no readiness event would announce it. Only
  the tail of an incomplete record stays in the incoming BIO until more bytes arrive.
- Anything OpenSSL wants to say (the handshake's flights, TLS 1.3 session tickets, the
  answer to a peer's KeyUpdate, a close_notify alert) is pending ciphertext; the
  Processor flushes it after every ``receive`` and keeps a writer registered while any
  is left.
- Ciphertext the socket did not take stays in the backlog, in order, ahead of anything
  encrypted later, and is flushed on writability (``ResponseSend.write_tls`` stops
  encrypting once ``pending`` reaches ``HIGH_WATER``).

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

#: the most plaintext one TLS record carries
_RECORD: Final = 16 * 1024

_EMPTY: Final = memoryview(b"")


class PlaintextBuffer:
    """Scratch space that ``TlsSession.receive`` decrypts into, shared by the sessions of
    one listener (all on one event loop): what ``receive`` returns is valid until the next
    ``receive`` of any of them. The Processor's frame decoder copies what it keeps, so
    one buffer serves every connection, where a buffer per connection would cost its size
    times the connections, and a new bytes object per TLS record (what ``read()`` without
    a buffer makes) costs an allocation of the requested size each time."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()

    def view(self, size: int) -> memoryview:
        """At least ``size`` writable bytes (a new buffer when the old is too small: views
        handed out before stay valid)."""
        if len(self._buffer) < size:
            self._buffer = bytearray(size)
        return memoryview(self._buffer)


class TlsSession:
    """One connection's TLS state (server side). Not safe across tasks."""

    __slots__ = (
        "_incoming",
        "_object",
        "_outgoing",
        "_plaintext",
        "backlog",
        "handshake_done",
        "peer_closed",
        "started_at",
        "writer_registered",
    )

    def __init__(
        self, context: ssl.SSLContext, started_at: float, plaintext: PlaintextBuffer
    ) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._object = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._plaintext = plaintext
        #: ciphertext the socket did not take, oldest first (newer ciphertext may still
        #: wait in the outgoing BIO behind it: ``pending`` counts both)
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

    def receive(self, data: bytes) -> memoryview:
        """Feed ciphertext; return the plaintext it completes (empty during the handshake
        or for a partial record), a view into the listener's ``PlaintextBuffer`` valid
        until the next ``receive``. Raises ssl.SSLError on a bad handshake or record."""
        incoming = self._incoming
        incoming.write(data)
        obj = self._object
        if not self.handshake_done:
            try:
                obj.do_handshake()
            except ssl.SSLWantReadError:
                return _EMPTY
            self.handshake_done = True
        # plaintext never outgrows the ciphertext it comes from; the slack covers a record
        # OpenSSL already took in whole but had no room to hand over
        room = incoming.pending + _RECORD
        view = self._plaintext.view(room)
        size = 0
        # One call per TLS record (OpenSSL hands over one record per read), so this loop
        # is the hot path of a TLS produce: librdkafka writes a record per buffer
        # segment, and with 1 KiB messages its segments alternate a record's header
        # (under 100 bytes) and its value -- about 1.7 million records per GB. The C
        # method of the SSLObject is called directly: SSLObject.read is a Python
        # wrapper around it that cost 7% of this loop (1.29 -> 1.20 us a record,
        # measured; OpenSSL's own work is about 1.1 us of it).
        read = obj._sslobj.read  # type: ignore[attr-defined]
        while size < room:
            try:
                # with a buffer, read() answers the count it wrote
                count: int = read(room - size, view[size:])
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                self.peer_closed = True
                break
            if not count:  # the ssl module's answer to a close_notify read
                self.peer_closed = True
                break
            size += count
        return view[:size]

    # --- writing --------------------------------------------------------------------------

    def encrypt(self, data: bytes | bytearray | memoryview) -> None:
        """Turn ``data`` into records behind the ciphertext already pending."""
        self._object.write(data)

    def flush(self, sock: socket.socket) -> bool:
        """Send the pending ciphertext without blocking; True once none is left. OSError
        other than a full socket (a dead peer) propagates."""
        backlog = self.backlog
        if self._outgoing.pending:
            fresh = self._outgoing.read()
            if backlog:
                backlog += fresh
            else:  # the usual case: straight from the BIO, keeping only what is left
                try:
                    sent = sock.send(fresh)
                except (BlockingIOError, InterruptedError):
                    sent = 0
                if sent == len(fresh):
                    return True
                backlog += memoryview(fresh)[sent:]
                return False
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
        return len(self.backlog) + self._outgoing.pending

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
        self._plaintext = PlaintextBuffer()

    def session(self, now: float) -> TlsSession:
        """A new connection's session, on the context of the moment."""
        return TlsSession(self.context, now, self._plaintext)

    def principal(self, session: TlsSession) -> KafkaPrincipal:
        """The principal of a finished handshake: ``User:<mapped subject>`` with a client
        certificate, ANONYMOUS without. NoMatchingRule when no rule maps the subject."""
        der = session.peer_certificate()
        if der is None:
            return ANONYMOUS
        return KafkaPrincipal.user(map_name(self.rules, subject_name(der)))
