"""FrameReceiver: frames read in place into pooled buffers, reads, reuse, bad sizes."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.receiver import POOL_MAX_BUFFER, FrameReceiver
from protocol.errors import ProtocolError


def framed(*frames: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(f)) + f for f in frames)


def read(receiver: FrameReceiver, data: bytes, chunk: int) -> list[bytes]:
    """Deliver ``data`` as a transport would: at most ``chunk`` bytes per read, each
    written into the buffer the receiver offers."""
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        buf = receiver.get_buffer()
        assert len(buf) > 0
        n = min(len(buf), chunk, len(data) - pos)
        buf[:n] = data[pos : pos + n]
        buf.release()
        out += [bytes(f) for f in receiver.buffer_updated(n)]
        pos += n
    return out


#: a frame of ``n`` bytes, from 1 to 150 KiB: larger than a landing buffer, sometimes
_LARGE = st.integers(1, 150 * 1024).map(lambda n: bytes(range(256)) * (n // 256) + b"e" * (n % 256))


@settings(max_examples=100, deadline=None)
@given(
    frames=st.lists(st.binary(max_size=300) | _LARGE, max_size=8),
    chunk=st.integers(1, 200 * 1024),
    stage=st.integers(4, 64),
    copy_below=st.sampled_from([0, 100, 4096]),
    pool=st.sampled_from([0, 1, 4]),
)
def test_any_split_of_the_stream_yields_the_frames_in_order(
    frames: list[bytes], chunk: int, stage: int, copy_below: int, pool: int
) -> None:
    receiver = FrameReceiver(1 << 20, stage_size=stage, pool_size=pool, copy_below=copy_below)
    assert read(receiver, framed(*frames), chunk) == frames
    assert receiver.buffered == 0


def test_a_response_read_whole_is_handed_out_where_it_landed() -> None:
    receiver = FrameReceiver(1 << 20)
    payload = bytes(range(256)) * 200
    landing = receiver.get_buffer()
    assert len(landing) >= 64 * 1024  # nothing pending: a pooled buffer, not the stage
    landing[: len(payload) + 4] = framed(payload)
    [frame] = receiver.buffer_updated(len(payload) + 4)
    assert frame == payload and not frame.readonly
    landing[4] = 0xAB  # the frame is that buffer, not a copy of it
    assert frame[0] == 0xAB
    landing.release()
    del frame
    again = receiver.get_buffer()  # the same buffer once nobody refers to it
    again[:8] = framed(b"abcd")
    assert receiver.buffer_updated(8) == [b"abcd"]
    assert receiver.allocations == 1


def test_a_frame_larger_than_its_landing_buffer_gets_its_own() -> None:
    receiver = FrameReceiver(1 << 20, stage_size=16)
    payload = bytes(range(256)) * 400  # 100 KiB: more than the first landing buffer
    data = framed(payload)
    first = receiver.get_buffer()
    n = len(first)
    first[:] = data[:n]
    first.release()
    assert receiver.buffer_updated(n) == []
    # the part read is copied into a buffer of the frame's size; the next read is
    # offered the missing tail and room past it (at most a stage's worth), so that the
    # read ending the frame comes back short
    tail = receiver.get_buffer()
    missing = len(data) - n
    assert missing < len(tail) <= missing + 16
    tail[:missing] = data[n:]
    tail.release()
    [frame] = receiver.buffer_updated(missing)
    assert frame == payload
    assert receiver.buffered == 0 and receiver.allocations == 2
    # the landing buffers that follow are sized for such a frame: it lands whole
    assert receiver.expected_size == len(data)
    del frame
    assert len(receiver.get_buffer()) > len(data)


def test_a_frame_cut_short_is_read_on_where_it_started() -> None:
    receiver = FrameReceiver(1 << 20, stage_size=16)
    payload = bytes(range(256)) * 40
    data = framed(payload)
    first = receiver.get_buffer()
    first[:16] = data[:16]
    first.release()
    assert receiver.buffer_updated(16) == []
    tail = receiver.get_buffer()
    missing = len(payload) - 12
    assert missing < len(tail) <= missing + 16
    tail[:missing] = data[16:]
    tail.release()
    [frame] = receiver.buffer_updated(missing)
    assert frame == payload
    assert receiver.buffered == 0 and receiver.allocations == 1


def test_bytes_read_past_a_large_frame_start_the_next_one() -> None:
    receiver = FrameReceiver(1 << 20, stage_size=16)
    big, small, third = b"x" * 5000, b"abc", b"y" * 3000
    data = framed(big, small, third)
    first = receiver.get_buffer()
    first[:16] = data[:16]
    first.release()
    assert receiver.buffer_updated(16) == []
    # one read ends the large frame and brings the whole next one, and the next
    # one's size prefix and a byte: all of it within the room past the frame
    tail = receiver.get_buffer()
    n = 4 + 5000 - 16 + 4 + 3 + 4 + 1
    assert len(tail) >= n
    tail[:n] = data[16 : 16 + n]
    tail.release()
    assert [bytes(f) for f in receiver.buffer_updated(n)] == [big, small]
    assert receiver.buffered == 1
    assert read(receiver, data[16 + n :], 10_000) == [third]
    assert receiver.buffered == 0


def test_small_frames_arriving_together_come_out_of_one_read() -> None:
    receiver = FrameReceiver(100)
    frames = [b"a", b"", b"bcd"]
    assert read(receiver, framed(*frames) + b"\x00\x00", 10_000) == frames
    assert receiver.buffered == 2  # half a size prefix waits for the rest
    assert read(receiver, b"\x00\x01z", 10_000) == [b"z"]


def test_a_frame_buffer_is_reused_only_once_nobody_refers_to_it() -> None:
    receiver = FrameReceiver(1 << 20, stage_size=8)
    [first] = _frames(receiver, framed(b"x" * 5000))
    [second] = _frames(receiver, framed(b"y" * 5000))
    assert receiver.allocations == 2  # ``first`` still refers to its buffer
    piece = first[10:20]  # a slice refers to the buffer as well
    del first, second
    [third] = _frames(receiver, framed(b"z" * 4500))
    assert receiver.allocations == 2  # the buffer ``second`` had
    [fourth] = _frames(receiver, framed(b"w" * 5000))
    assert receiver.allocations == 3  # ``piece`` keeps the first buffer out of reuse
    assert bytes(piece) == b"x" * 10 and bytes(third) == b"z" * 4500
    assert bytes(fourth) == b"w" * 5000


def test_landing_buffers_stay_pooled_after_a_frame_too_large_for_the_pool() -> None:
    receiver = FrameReceiver(64 << 20)
    del receiver.feed(framed(b"h" * (POOL_MAX_BUFFER + 1)))[0]
    allocated = receiver.allocations
    for _ in range(3):
        [frame] = receiver.feed(framed(b"m" * 5000))
        assert bytes(frame) == b"m" * 5000
        del frame
    assert receiver.allocations == allocated + 1  # one landing buffer, reused


def test_a_frame_far_smaller_than_its_landing_buffer_is_copied_out() -> None:
    receiver = FrameReceiver(64 << 20)
    del receiver.feed(framed(b"h" * (1 << 20)))[0]  # landing buffers of 1 MiB from now
    kept = [receiver.feed(framed(b"q" * 20_000))[0] for _ in range(3)]
    allocated = receiver.allocations
    kept += [receiver.feed(framed(b"q" * 20_000))[0] for _ in range(3)]
    assert receiver.allocations == allocated  # held frames keep no landing buffer
    assert all(bytes(f) == b"q" * 20_000 for f in kept)
    # the landing size follows the frames down, a step at a time
    assert receiver.expected_size < (1 << 20) * 7 // 8


def test_small_frames_are_copied_out_and_leave_their_buffer_free() -> None:
    receiver = FrameReceiver(1 << 20)
    kept = [_frames(receiver, framed(b"s" * 100))[0] for _ in range(10)]
    assert receiver.allocations == 1
    assert all(bytes(f) == b"s" * 100 for f in kept)


def test_frames_from_a_reused_buffer_have_their_own_size() -> None:
    receiver = FrameReceiver(1 << 20, stage_size=8)
    del _frames(receiver, framed(b"a" * 5000))[0]
    [frame] = _frames(receiver, framed(b"b" * 100))
    assert len(frame) == 100 and bytes(frame) == b"b" * 100
    assert receiver.allocations == 1


def test_without_a_pool_every_large_frame_gets_a_fresh_buffer() -> None:
    receiver = FrameReceiver(1 << 20, stage_size=8, pool_size=0)
    for _ in range(3):
        del _frames(receiver, framed(b"z" * 100))[0]
    assert receiver.allocations == 3


def _frames(receiver: FrameReceiver, data: bytes) -> list[memoryview]:
    """Like ``read`` but keeps the frames as the receiver returned them."""
    out: list[memoryview] = []
    pos = 0
    while pos < len(data):
        buf = receiver.get_buffer()
        n = min(len(buf), len(data) - pos)
        buf[:n] = data[pos : pos + n]
        buf.release()
        out += receiver.buffer_updated(n)
        pos += n
    return out


@pytest.mark.parametrize(
    ("size", "message"), [(-1, "negative frame size"), (101, "exceeds the limit of 100")]
)
def test_a_bad_size_raises_before_anything_is_allocated(size: int, message: str) -> None:
    # without a pool the reads go to the stage: a buffer would only come from a size
    receiver = FrameReceiver(100, stage_size=8, pool_size=0)
    with pytest.raises(ProtocolError, match=message):
        read(receiver, struct.pack(">i", size) + b"abcd", 8)
    assert receiver.allocations == 0
    # with one, the landing buffer taken before the size was read is the only one
    pooled = FrameReceiver(100, stage_size=8)
    with pytest.raises(ProtocolError, match=message):
        read(pooled, struct.pack(">i", size) + b"abcd", 8)
    assert pooled.allocations == 1


def test_feed_copies_handed_bytes_in_through_the_same_buffers() -> None:
    receiver = FrameReceiver(1 << 20, stage_size=8)
    frames = [b"p" * 50, b"q", b"r" * 20]
    data = framed(*frames)
    assert [bytes(f) for f in receiver.feed(data[:30])] == []
    assert [bytes(f) for f in receiver.feed(data[30:])] == frames


def test_a_stage_too_small_for_a_prefix_is_refused() -> None:
    with pytest.raises(ValueError, match="size prefix"):
        FrameReceiver(100, stage_size=3)
