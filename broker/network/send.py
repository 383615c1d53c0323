"""Writing one response to a non-blocking socket: bytes with sendmsg, file regions with sendfile.

A response on the wire is ``int32 size | header | body``. The codec hands the body over as
pieces (``protocol.encode_response_parts``): ``bytes`` for what it encoded, and *file
regions* for record data that stays in the segment files. ``ResponseSend`` writes the
pieces in order; region bytes go from the page cache to the socket with ``os.sendfile`` and
never enter Python.

A region is anything with a file descriptor (``fileno()`` or an ``fd`` attribute), a
``position`` and a length (``length`` or ``len()``); ``storage.FileRegion`` is one.

On a TLS connection (``write_tls``) bytes must be encrypted in Python, so sendfile is out:
a region is read with ``os.preadv`` into one buffer of the response, reused chunk after
chunk, and encrypted from there into the session's backlog -- one copy out of the page
cache instead of none. PLAINTEXT and SASL_PLAINTEXT connections keep ``write``.
"""

from __future__ import annotations

import os
import socket
import struct
from collections import deque
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from broker.network.tls_transport import HIGH_WATER, TlsSession

_SIZE = struct.Struct(">i")  # the response size prefix: int32, big-endian, excludes itself

#: at most this many buffers go to one sendmsg (far below any IOV_MAX)
_MAX_IOV = 64

#: a first piece up to this size is copied behind the size prefix (one send, not sendmsg)
_JOIN_LIMIT = 16 * 1024

#: plaintext encrypted at a time on a TLS connection (four TLS records)
_TLS_CHUNK = 64 * 1024


@runtime_checkable
class FileRegion(Protocol):
    """Bytes ``[position, position + len)`` of an open file, to be sent with sendfile."""

    @property
    def position(self) -> int: ...

    def fileno(self) -> int: ...

    def __len__(self) -> int: ...


class RegionTruncated(OSError):
    """The file ended before the region did: the promised size cannot be delivered."""


class _Region:
    __slots__ = ("fd", "position", "remaining")

    def __init__(self, region: object) -> None:
        # an ``fd`` attribute first: storage.FileRegion has one, and reading it costs no
        # call (one region per partition of every fetch answer)
        fd = getattr(region, "fd", None)
        if not isinstance(fd, int):
            fileno = getattr(region, "fileno", None)
            fd = fileno() if callable(fileno) else None
            if not isinstance(fd, int):
                raise TypeError(f"{type(region).__name__} has no file descriptor (fileno() or fd)")
        length = getattr(region, "length", None)
        if not isinstance(length, int):
            length = len(region)  # type: ignore[arg-type]
        self.fd: int = fd
        self.position: int = int(getattr(region, "position"))  # noqa: B009 -- any region type
        self.remaining: int = length


def parts_size(parts: Iterable[object]) -> int:
    total = 0
    for part in parts:
        if isinstance(part, bytes | bytearray | memoryview):
            total += memoryview(part).nbytes
        else:
            length = getattr(part, "length", None)
            total += length if isinstance(length, int) else len(part)  # type: ignore[arg-type]
    return total


class ResponseSend:
    """The unsent rest of one response. Not safe across tasks: one connection's writer owns it.

    ``write`` sends as much as the socket takes without blocking and reports whether the
    whole response is out; a short write means the send buffer is full, so it stops there
    and the caller waits for writability.

    Pieces are bytes-like buffers and regions, in wire order, consumed from the left; a
    small first buffer is joined to the size prefix so that a typical response leaves in
    one ``send``.
    """

    __slots__ = ("_buffer", "_pieces", "sent", "size")

    def __init__(self, parts: Iterable[object]) -> None:
        pieces: deque[bytes | memoryview | _Region] = deque()
        size = 0
        for part in parts:
            if type(part) is bytes:  # the common case, checked first
                if part:
                    pieces.append(part)
                    size += len(part)
            elif isinstance(part, bytes | bytearray | memoryview):
                view = memoryview(part).cast("B")
                if view.nbytes:
                    pieces.append(view)
                    size += view.nbytes
            else:
                region = _Region(part)
                if region.remaining:
                    pieces.append(region)
                    size += region.remaining
        prefix = _SIZE.pack(size)
        first = pieces[0] if pieces else None
        if type(first) is bytes and len(first) <= _JOIN_LIMIT:
            pieces[0] = prefix + first
        else:
            pieces.appendleft(prefix)
        self._pieces = pieces
        self.size = size
        self.sent = 0
        self._buffer: bytearray | None = None  # write_tls's read buffer, made on first use

    @property
    def done(self) -> bool:
        return not self._pieces

    def write(self, sock: socket.socket) -> bool:
        """Send without blocking; True once everything is sent. OSError means a dead peer."""
        pieces = self._pieces
        while pieces:
            head = pieces[0]
            try:
                if isinstance(head, _Region):
                    # a short sendfile may mean a full socket or the end of the file: ask
                    # again, and EAGAIN or 0 tells which
                    sent = os.sendfile(sock.fileno(), head.fd, head.position, head.remaining)
                    if sent == 0:
                        raise RegionTruncated(f"file ended {head.remaining} bytes before region")
                    self.sent += sent
                    head.position += sent
                    head.remaining -= sent
                    if not head.remaining:
                        pieces.popleft()
                    continue
                if len(pieces) == 1 or isinstance(pieces[1], _Region):
                    # one buffer (a fetch answer's header, or its bytes after the records)
                    sent = sock.send(head)
                    self.sent += sent
                    if sent < len(head):
                        pieces[0] = memoryview(head)[sent:]
                        return False  # a short send: the socket buffer is full
                    pieces.popleft()
                    continue
                buffers: list[bytes | memoryview] = []
                for piece in pieces:
                    if isinstance(piece, _Region) or len(buffers) == _MAX_IOV:
                        break
                    buffers.append(piece)
                wanted = sum(map(len, buffers))
                sent = sock.sendmsg(buffers)
            except (BlockingIOError, InterruptedError):
                return False
            self.sent += sent
            self._consume_bytes(sent)
            if sent < wanted:
                return False  # a short send: the socket buffer is full
        return True

    def write_tls(self, session: TlsSession, sock: socket.socket) -> bool:
        """``write`` on a TLS connection: encrypt the pieces into ``session``'s backlog
        while it stays under its high-water mark, sending it as the socket takes it; True
        once everything, the backlog included, is sent. ``sent`` counts plaintext."""
        pieces = self._pieces
        while pieces:
            if session.pending >= HIGH_WATER and not self._drained(session, sock):
                return False
            head = pieces[0]
            if isinstance(head, _Region):
                if self._buffer is None:
                    self._buffer = bytearray(_TLS_CHUNK)
                view = memoryview(self._buffer)[: min(head.remaining, _TLS_CHUNK)]
                read = os.preadv(head.fd, [view], head.position)
                if read == 0:
                    raise RegionTruncated(f"file ended {head.remaining} bytes before region")
                session.encrypt(view[:read])
                head.position += read
                head.remaining -= read
                self.sent += read
                if not head.remaining:
                    pieces.popleft()
                continue
            if len(head) <= _TLS_CHUNK:
                session.encrypt(head)
                self.sent += len(head)
                pieces.popleft()
            else:
                session.encrypt(memoryview(head)[:_TLS_CHUNK])
                self.sent += _TLS_CHUNK
                pieces[0] = memoryview(head)[_TLS_CHUNK:]
        return session.flush(sock)

    @staticmethod
    def _drained(session: TlsSession, sock: socket.socket) -> bool:
        """Send what the socket takes; whether the backlog fell under the mark."""
        session.flush(sock)
        return session.pending < HIGH_WATER

    def _consume_bytes(self, count: int) -> None:
        pieces = self._pieces
        while count:
            head = pieces[0]
            assert not isinstance(head, _Region)
            length = len(head)
            if count >= length:
                count -= length
                pieces.popleft()
            else:
                pieces[0] = memoryview(head)[count:]
                count = 0
