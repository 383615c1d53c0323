"""Writing one response to a non-blocking socket: bytes with sendmsg, file regions with sendfile.

A response on the wire is ``int32 size | header | body``. The codec hands the body over as
pieces (``protocol.encode_response_parts``): ``bytes`` for what it encoded, and *file
regions* for record data that stays in the segment files. ``ResponseSend`` writes the
pieces in order; region bytes go from the page cache to the socket with ``os.sendfile`` and
never enter Python.

A region is anything with a file descriptor (``fileno()`` or an ``fd`` attribute), a
``position`` and a length (``length`` or ``len()``); ``storage.FileRegion`` is one.
"""

from __future__ import annotations

import os
import socket
import struct
from collections import deque
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

_SIZE = struct.Struct(">i")  # the response size prefix: int32, big-endian, excludes itself

#: at most this many buffers go to one sendmsg (far below any IOV_MAX)
_MAX_IOV = 64


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
        fileno = getattr(region, "fileno", None)
        fd = fileno() if callable(fileno) else getattr(region, "fd", None)
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
    """

    __slots__ = ("_pieces", "sent", "size")

    def __init__(self, parts: Iterable[object]) -> None:
        pieces: list[memoryview | _Region] = []
        for part in parts:
            if isinstance(part, bytes | bytearray | memoryview):
                view = memoryview(part).cast("B")
                if view.nbytes:
                    pieces.append(view)
            else:
                region = _Region(part)
                if region.remaining:
                    pieces.append(region)
        self.size = sum(p.nbytes if isinstance(p, memoryview) else p.remaining for p in pieces)
        pieces.insert(0, memoryview(_SIZE.pack(self.size)))
        self._pieces: deque[memoryview | _Region] = deque(pieces)
        self.sent = 0

    @property
    def done(self) -> bool:
        return not self._pieces

    def write(self, sock: socket.socket) -> bool:
        """Send without blocking; True once everything is sent. OSError means a dead peer."""
        pieces = self._pieces
        while pieces:
            head = pieces[0]
            try:
                if isinstance(head, memoryview):
                    buffers: list[memoryview] = []
                    for piece in pieces:
                        if not isinstance(piece, memoryview) or len(buffers) == _MAX_IOV:
                            break
                        buffers.append(piece)
                    wanted = sum(b.nbytes for b in buffers)
                    sent = sock.sendmsg(buffers) if len(buffers) > 1 else sock.send(buffers[0])
                    self._consume_bytes(sent)
                else:
                    # a short sendfile may mean a full socket or the end of the file: ask
                    # again, and EAGAIN or 0 tells which
                    wanted = 0
                    sent = os.sendfile(sock.fileno(), head.fd, head.position, head.remaining)
                    if sent == 0:
                        raise RegionTruncated(f"file ended {head.remaining} bytes before region")
                    head.position += sent
                    head.remaining -= sent
                    if not head.remaining:
                        pieces.popleft()
            except (BlockingIOError, InterruptedError):
                return False
            self.sent += sent
            if sent < wanted:
                return False  # a short sendmsg: the socket buffer is full
        return True

    def _consume_bytes(self, count: int) -> None:
        pieces = self._pieces
        while count:
            head = pieces[0]
            assert isinstance(head, memoryview)
            if count >= head.nbytes:
                count -= head.nbytes
                pieces.popleft()
            else:
                pieces[0] = head[count:]
                count = 0
