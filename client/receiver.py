"""Receiving response frames without copying them: the buffer side of a BufferedProtocol.

Frames on the wire are ``int32 size | frame``. A :class:`FrameReceiver` hands the
transport the buffer to read into next (``get_buffer``) and is told how many bytes landed
there (``buffer_updated``); it is sans-IO, so tests drive it with plain byte strings.

Two buffers, so that a large frame is written once, by the kernel, and never copied:

- the *stage*, a fixed bytearray (``stage_size``), takes reads while no frame is open.
  Size prefixes are read from it; small frames that arrive whole in it are copied out
  (a copy of at most ``stage_size`` bytes);
- the *frame buffer*, a bytearray allocated from a frame's size prefix once that size has
  passed the limit check. The part of the frame already in the stage is copied in (at
  most ``stage_size`` bytes), then ``get_buffer`` returns the frame's missing tail, so
  the transport's ``recv_into`` fills the rest of the frame in place. A 1 MiB fetch
  response costs one copy of at most 64 KiB in Python.

The tail offered is followed by some room beyond the frame (the buffer's spare bytes, at
most ``stage_size``). The event loop (libuv under uvloop) reads a socket again and again
while each read fills the whole buffer it was given, and stops at the first read that
comes back short: a tail offered exactly would end every large frame with one more
read, answered EAGAIN when nothing follows the frame (a replica fetcher's connection,
one request in flight, pays that once per response). With room to spare the read that
completes the frame comes back short. Bytes that did land past the frame (the start of
the next one) are moved to the stage, a copy of at most ``stage_size`` bytes.

Check-then-allocate: a negative size, or one above ``max_frame_size``, raises
ProtocolError before anything is allocated from it. Unlike the broker's FrameDecoder,
the client does allocate a frame from its declared size (within the limit): the
responses are answers to requests whose size it bounded itself (a fetch's max_bytes),
and the limit guards against a broken peer.

Frame buffers are recycled. A fresh 1 MiB bytearray costs far more than its size
suggests: the allocator hands back pages to the kernel when it is freed, and every
allocation then faults 256 pages in again (about 0.3 ms, a third of the time a 1 GB/s
reader has per frame). So the receiver keeps its last ``pool_size`` frame buffers and
reuses one once nothing refers to it any more: in CPython a memoryview, and every slice
of it, holds one reference to the bytearray it exposes, so a buffer whose reference count
is down to the pool's own is not visible to anyone (a decoded response's memoryview
fields keep their frame's buffer out of reuse for as long as they live). A pooled buffer
may be larger than the frame: the frame is a slice of it, exactly the frame's size.

Frames are returned as writable memoryviews: they do not refer to the stage, stay
valid after later reads, and are never written again while referenced. Not safe across
tasks: one FrameReceiver per connection.
"""

from __future__ import annotations

import struct
import sys
from typing import Final

from protocol.framing import check_frame_size

_SIZE: Final = struct.Struct(">i")
#: bytes of the stage: the largest read while no frame is open, and so the most copied
#: out of a large frame's head. Big enough that small answers need one read each.
STAGE_SIZE: Final = 64 * 1024
#: frame buffers kept for reuse, and the largest kept: a connection holds at most
#: POOL_SIZE * POOL_MAX_BUFFER bytes beyond the frames its callers hold
POOL_SIZE: Final = 4
POOL_MAX_BUFFER: Final = 8 * 1024 * 1024
#: frame buffers are allocated in multiples of this, so that responses of nearly equal
#: sizes (fetches cut at the same byte limit) fit the same buffers
ALLOC_QUANTUM: Final = 64 * 1024
#: sys.getrefcount of a pooled buffer nobody else refers to, seen from ``_reusable``:
#: the pool's list, the loop variable and getrefcount's own argument
_UNSHARED_REFS: Final = 3


class FrameReceiver:
    def __init__(
        self, max_frame_size: int, stage_size: int = STAGE_SIZE, pool_size: int = POOL_SIZE
    ) -> None:
        if stage_size < 4:
            raise ValueError("the stage must hold at least a size prefix")
        self.max_frame_size = max_frame_size
        self._stage = bytearray(stage_size)
        self._stage_view = memoryview(self._stage)
        #: bytes of the stage holding data not yet taken (always from index 0)
        self._staged = 0
        #: the open frame (None while reading into the stage) and how much of it is filled
        self._frame: memoryview | None = None
        self._filled = 0
        #: the open frame's buffer up to the end of the room offered past the frame
        self._landing: memoryview | None = None
        self._pool: list[bytearray] = []
        self._pool_size = pool_size
        #: frame buffers allocated (not reused): for tests and measurements
        self.allocations = 0

    @property
    def buffered(self) -> int:
        """Bytes received for frames not yet complete."""
        return self._staged + (self._filled if self._frame is not None else 0)

    def get_buffer(self) -> memoryview:
        """Where the next read must go: the open frame's missing tail, or else the free
        part of the stage. Never empty."""
        if self._landing is not None:
            return self._landing[self._filled :]
        return self._stage_view[self._staged :]

    def buffer_updated(self, nbytes: int) -> list[memoryview]:
        """``nbytes`` were written at the start of the last ``get_buffer``; return the
        frames completed, in order. ProtocolError for a bad size: the stream cannot be
        resynchronised after that (close the connection); frames completed before the
        bad size in the same read are lost with it, as the connection is."""
        frames: list[memoryview] = []
        frame, landing = self._frame, self._landing
        if frame is not None and landing is not None:
            self._filled += nbytes
            size = len(frame)
            if self._filled < size:
                return frames
            frames.append(frame)
            self._frame = self._landing = None
            past = self._filled - size
            if not past:
                return frames
            self._stage_view[:past] = landing[size : self._filled]
            nbytes = past
        self._staged += nbytes
        self._split_stage(frames)
        return frames

    def feed(self, data: bytes | bytearray | memoryview) -> list[memoryview]:
        """Copy ``data`` in through ``get_buffer``: for callers that are handed bytes
        (tests, or a transport that hands bytes over)."""
        view = memoryview(data).cast("B")
        frames: list[memoryview] = []
        pos = 0
        while pos < len(view):
            buf = self.get_buffer()
            n = min(len(buf), len(view) - pos)
            buf[:n] = view[pos : pos + n]
            buf.release()
            frames += self.buffer_updated(n)
            pos += n
        return frames

    def _frame_buffer(self, size: int) -> memoryview:
        """A writable view of ``size`` bytes and then at least one, at most
        ``stage_size``, spare bytes, from a buffer that nothing else refers to."""
        buf = self._reusable(size)
        if buf is None:
            self.allocations += 1
            buf = bytearray((size // ALLOC_QUANTUM + 1) * ALLOC_QUANTUM)
            if self._pool_size and len(buf) <= POOL_MAX_BUFFER:
                if len(self._pool) >= self._pool_size:
                    self._pool.pop(0)  # its holders keep it alive; it is just not reused
                self._pool.append(buf)
        return memoryview(buf)[: size + min(len(buf) - size, len(self._stage))]

    def _reusable(self, size: int) -> bytearray | None:
        for buf in self._pool:
            if len(buf) > size and sys.getrefcount(buf) == _UNSHARED_REFS:
                return buf
        return None

    def _split_stage(self, frames: list[memoryview]) -> None:
        """Take whole frames out of the stage; open a frame buffer for a frame whose
        size is known but whose bytes are not all here; keep a partial prefix."""
        stage = self._stage_view
        end = self._staged
        pos = 0
        while end - pos >= 4:
            size = check_frame_size(_SIZE.unpack_from(stage, pos)[0], self.max_frame_size)
            body = pos + 4
            if end - body >= size:
                frames.append(memoryview(bytearray(stage[body : body + size])))
                pos = body + size
                continue
            landing = self._frame_buffer(size)
            have = end - body
            landing[:have] = stage[body:end]
            self._frame, self._landing, self._filled = landing[:size], landing, have
            self._staged = 0
            return
        # fewer than 4 bytes left: move them to the front for the next read
        left = end - pos
        if left and pos:
            stage[:left] = stage[pos:end]
        self._staged = left
