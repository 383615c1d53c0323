"""Framing: a stream of ``int32 size | frame`` into whole frames, check-then-parse.

The size prefix is checked the moment its 4 bytes are known: a negative size or one above
``max_frame_size`` raises ProtocolError before any of the frame is buffered, and no buffer
is ever sized from a declared length (it grows only with bytes actually received).

Frames are writable memoryviews, each over its own bytearray, independent of the input:
the broker rewrites record batch headers (base offset, leader epoch) in place inside
them. Every byte is copied exactly once: a frame that arrives whole inside one ``feed``
is copied out of the input; a frame split across feeds is gathered into its bytearray as
its pieces arrive (amortised O(n), never re-scanned). Many small frames and one huge
frame are both linear in the bytes received.

Not safe across tasks: one FrameDecoder per connection.
"""

from __future__ import annotations

import struct
from typing import Final

from protocol.errors import ErrorCode, ProtocolError

_SIZE: Final = struct.Struct(">i")


def check_frame_size(size: int, limit: int) -> int:
    """``size`` if a frame may declare it, else the ProtocolError to close the connection
    with: checked before anything of the frame is buffered."""
    if size < 0:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"negative frame size {size}")
    if size > limit:
        raise ProtocolError(
            ErrorCode.INVALID_REQUEST, f"frame of {size} bytes exceeds the limit of {limit}"
        )
    return size


class FrameDecoder:
    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        # The incomplete unit being gathered: the size prefix while ``_size < 0``, then
        # the frame body.
        self._partial = bytearray()
        self._size = -1
        # A bad size found after some good frames in the same input: those frames are
        # returned first, the error is raised by the next feed.
        self._error: ProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame (its prefix or body so far)."""
        return len(self._partial)

    def feed(self, data: bytes | bytearray | memoryview) -> list[memoryview | bytes]:
        """Take the next bytes of the stream; return the frames they complete, in order,
        as writable memoryviews that do not refer to ``data``.

        A size that is negative or above the limit raises ProtocolError; frames completed
        before it in the same input are returned first and the error comes on the next
        call. The stream cannot be resynchronised after that: close the connection."""
        if self._error is not None:
            raise self._error
        view = memoryview(data).cast("B")
        frames: list[memoryview | bytes] = []
        try:
            self._split(view, frames)
        except ProtocolError as e:
            if not frames:
                raise
            self._error = e
        return frames

    def _split(self, view: memoryview, frames: list[memoryview | bytes]) -> None:
        n = len(view)
        pos = 0
        if self._partial or self._size >= 0:
            pos = self._gather(view, 0, frames)
        # Whole frames straight out of the input.
        while n - pos >= 4 and self._size < 0:
            size = check_frame_size(_SIZE.unpack_from(view, pos)[0], self.max_frame_size)
            if n - pos - 4 < size:
                break
            frames.append(memoryview(bytearray(view[pos + 4 : pos + 4 + size])))
            pos += 4 + size
        if pos < n:
            self._gather(view, pos, frames)

    def _gather(self, view: memoryview, pos: int, frames: list[memoryview | bytes]) -> int:
        """Add bytes from ``view[pos:]`` to the incomplete unit; return the new position."""
        n = len(view)
        if self._size < 0:
            take = min(4 - len(self._partial), n - pos)
            self._partial += view[pos : pos + take]
            pos += take
            if len(self._partial) < 4:
                return pos
            size = _SIZE.unpack_from(self._partial, 0)[0]
            self._partial = bytearray()
            self._size = check_frame_size(size, self.max_frame_size)
        take = min(self._size - len(self._partial), n - pos)
        self._partial += view[pos : pos + take]
        pos += take
        if len(self._partial) == self._size:
            frames.append(memoryview(self._partial))
            self._partial = bytearray()
            self._size = -1
        return pos
