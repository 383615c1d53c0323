"""Receiving response frames without copying them: the buffer side of a BufferedProtocol.

Frames on the wire are ``int32 size | frame``. A :class:`FrameReceiver` hands the
transport the buffer to read into next (``get_buffer``) and is told how many bytes landed
there (``buffer_updated``); it is sans-IO, so tests drive it with plain byte strings.

A large frame is written once, by the kernel, into a buffer it is then handed out in (a
memoryview slice, never copied). Three kinds of buffer take the reads:

- a *landing buffer*, taken from the pool (below) whenever a read starts with nothing
  pending: the start of every response on a request/response connection. It is as large
  as the responses seen lately (``expected_size``, at least ``stage_size``), so that a
  response that has arrived whole by then is read in one read and handed out in place.
  Frames below ``copy_below`` bytes, or below a quarter of the landing size, are copied
  out instead (a small answer does not keep a large buffer from reuse: a caller that
  holds frames holds at most about four times their bytes), and so is the tail of the
  read when it is only part of a size prefix;
- the *frame buffer* of a frame that did not arrive whole: the buffer it started in when
  it fits there, or else a pooled buffer of its size into which the part already read is
  copied (at most the buffer it started in, a landing buffer or the stage). ``get_buffer``
  then returns the frame's missing tail, so ``recv_into`` fills the rest in place;
- the *stage*, a fixed bytearray (``stage_size``), takes the reads that continue a size
  prefix cut short, and every read when there is no pool; frames in it are copied out.

A frame's tail is offered with some room past the frame (the buffer's spare bytes, at
most ``stage_size``). The event loop (libuv under uvloop) reads a socket again and again
while each read fills the whole buffer it was given, and stops at the first read that
comes back short: a tail offered exactly would end every large frame with one more
read, answered EAGAIN when nothing follows the frame (a replica fetcher's connection,
one request in flight, pays that once per response). With room to spare the read that
completes the frame comes back short. Bytes that did land past the frame are read in
place like the start of a landing buffer.

Check-then-allocate: a negative size, or one above ``max_frame_size``, raises
ProtocolError before anything is allocated from it. Unlike the broker's FrameDecoder,
the client does allocate a frame from its declared size (within the limit): the
responses are answers to requests whose size it bounded itself (a fetch's max_bytes),
and the limit guards against a broken peer.

Buffers are recycled. A fresh 1 MiB bytearray costs far more than its size suggests: the
allocator hands back pages to the kernel when it is freed, and every allocation then
faults 256 pages in again (about 0.3 ms, a third of the time a 1 GB/s reader has per
frame). So the receiver keeps its last ``pool_size`` buffers and reuses one once nothing
refers to it any more: in CPython a memoryview, and every slice of it, holds one
reference to the bytearray it exposes, so a buffer whose reference count is down to the
pool's own is not visible to anyone (a decoded response's memoryview fields keep their
frame's buffer out of reuse for as long as they live). A pooled buffer is larger than
its frames: each frame is a slice of it, exactly the frame's size.

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
#: bytes of the stage, the smallest landing buffer, and the most room offered past a
#: frame: big enough that small answers need one read each
STAGE_SIZE: Final = 64 * 1024
#: frames below this many bytes are copied out of a landing buffer into their own
COPY_BELOW: Final = 4096
#: buffers kept for reuse, and the largest kept: a connection holds at most
#: POOL_SIZE * POOL_MAX_BUFFER bytes beyond the frames its callers hold
POOL_SIZE: Final = 4
POOL_MAX_BUFFER: Final = 8 * 1024 * 1024
#: buffers are allocated in multiples of this, so that responses of nearly equal sizes
#: (fetches cut at the same byte limit) fit the same buffers
ALLOC_QUANTUM: Final = 64 * 1024
#: sys.getrefcount of a pooled buffer nobody else refers to, seen from ``_reusable``:
#: the pool's list, the loop variable and getrefcount's own argument
_UNSHARED_REFS: Final = 3


class FrameReceiver:
    def __init__(
        self,
        max_frame_size: int,
        stage_size: int = STAGE_SIZE,
        pool_size: int = POOL_SIZE,
        copy_below: int = COPY_BELOW,
    ) -> None:
        if stage_size < 4:
            raise ValueError("the stage must hold at least a size prefix")
        self.max_frame_size = max_frame_size
        self._stage = bytearray(stage_size)
        self._stage_view = memoryview(self._stage)
        #: bytes of the stage holding data not yet taken (always from index 0)
        self._staged = 0
        #: the open frame (None while no frame is open) and how much of it is filled
        self._frame: memoryview | None = None
        self._filled = 0
        #: where reads go while a frame is open (its buffer from the frame's start to the
        #: end of the room past it), or the landing buffer of the read in progress
        self._landing: memoryview | None = None
        self._pool: list[bytearray] = []
        self._pool_size = pool_size
        self._copy_below = copy_below
        #: the landing buffer's size: the larger responses seen lately, frame sizes
        #: prefixed; it follows a larger frame at once and a smaller one slowly
        self.expected_size = stage_size
        #: buffers allocated (not reused): for tests and measurements
        self.allocations = 0

    @property
    def buffered(self) -> int:
        """Bytes received for frames not yet complete."""
        return self._staged + (self._filled if self._frame is not None else 0)

    def get_buffer(self) -> memoryview:
        """Where the next read must go: the open frame's missing tail (and room past
        it), a landing buffer when nothing is pending, or else the free part of the
        stage. Never empty."""
        if self._landing is None:
            if self._staged or not self._pool_size:
                return self._stage_view[self._staged :]
            self._landing = memoryview(self._pooled(self.expected_size))
            self._filled = 0
        # a new view each time: the transport may release what it is given
        return self._landing[self._filled :]

    def buffer_updated(self, nbytes: int) -> list[memoryview]:
        """``nbytes`` were written at the start of the last ``get_buffer``; return the
        frames completed, in order. ProtocolError for a bad size: the stream cannot be
        resynchronised after that (close the connection); frames completed before the
        bad size in the same read are lost with it, as the connection is."""
        frames: list[memoryview] = []
        landing, frame = self._landing, self._frame
        if landing is not None:
            self._landing = None
            if frame is None:  # a landing buffer's read: frames from its start
                self._split(landing, 0, nbytes, frames, in_place=True)
                return frames
            self._filled += nbytes
            size = len(frame)
            if self._filled < size:
                self._landing = landing
                return frames
            frames.append(frame)
            self._frame = None
            self._expect(size)
            if self._filled > size:  # the start of what follows, read in place
                self._split(landing, size, self._filled, frames, in_place=True)
            return frames
        self._staged += nbytes
        self._split(self._stage_view, 0, self._staged, frames, in_place=False)
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

    def _expect(self, size: int) -> None:
        """Size the next landing buffers after a frame of ``size`` bytes."""
        want = size + 4
        expected = self.expected_size
        if want > expected:  # (capped so that the buffer, with its spare room, is pooled)
            self.expected_size = min(want, POOL_MAX_BUFFER - ALLOC_QUANTUM)
        elif expected > len(self._stage):
            self.expected_size = max(want, expected - expected // 8, len(self._stage))

    def _pooled(self, size: int) -> bytearray:
        """A buffer of more than ``size`` bytes that nothing else refers to."""
        buf = self._reusable(size)
        if buf is None:
            self.allocations += 1
            buf = bytearray((size // ALLOC_QUANTUM + 1) * ALLOC_QUANTUM)
            if self._pool_size and len(buf) <= POOL_MAX_BUFFER:
                if len(self._pool) >= self._pool_size:
                    self._pool.pop(0)  # its holders keep it alive; it is just not reused
                self._pool.append(buf)
        return buf

    def _reusable(self, size: int) -> bytearray | None:
        for buf in self._pool:
            if len(buf) > size and sys.getrefcount(buf) == _UNSHARED_REFS:
                return buf
        return None

    def _split(
        self, buf: memoryview, pos: int, end: int, frames: list[memoryview], *, in_place: bool
    ) -> None:
        """Take the whole frames of ``buf[pos:end]`` (slices of ``buf`` when
        ``in_place`` and not small, else copies); open the frame whose size is known but
        whose bytes are not all here; keep a partial size prefix in the stage."""
        if in_place:
            copy_below = max(self._copy_below, self.expected_size // 4)
        else:
            copy_below = self.max_frame_size + 1
        while end - pos >= 4:
            size = check_frame_size(_SIZE.unpack_from(buf, pos)[0], self.max_frame_size)
            body = pos + 4
            if end - body >= size:
                if size >= copy_below:
                    frames.append(buf[body : body + size])
                else:
                    frames.append(memoryview(bytearray(buf[body : body + size])))
                self._expect(size)
                pos = body + size
                continue
            have = end - body
            room = len(buf) - body - size
            if in_place and room > 0:  # the rest fits where the frame started
                landing = buf[body : body + size + min(room, len(self._stage))]
            else:
                landing = self._frame_buffer(size)
                landing[:have] = buf[body:end]
            self._frame, self._landing, self._filled = landing[:size], landing, have
            self._staged = 0
            return
        # fewer than 4 bytes left: to the front of the stage for the next read
        left = end - pos
        if left and (pos or in_place):
            self._stage_view[:left] = buf[pos:end]
        self._staged = left

    def _frame_buffer(self, size: int) -> memoryview:
        """A writable view of ``size`` bytes and then at least one, at most
        ``stage_size``, spare bytes, from a buffer that nothing else refers to."""
        buf = self._pooled(size)
        return memoryview(buf)[: size + min(len(buf) - size, len(self._stage))]
