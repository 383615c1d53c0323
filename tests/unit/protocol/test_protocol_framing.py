"""FrameDecoder: whole frames out of a byte stream, limits checked before buffering."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import ErrorCode, ProtocolError
from protocol.framing import FrameDecoder


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def test_many_small_frames_in_one_read() -> None:
    bodies = [bytes([i]) * (i % 7) for i in range(200)]
    data = b"".join(_frame(b) for b in bodies)
    frames = FrameDecoder(1024).feed(data)
    assert [bytes(f) for f in frames] == bodies


@pytest.mark.parametrize("split", [False, True])
def test_frames_are_writable_and_independent_of_the_input(split: bool) -> None:
    data = bytearray(_frame(b"abcdef") + _frame(b"xyz"))
    decoder = FrameDecoder(1024)
    if split:
        frames = decoder.feed(data[:5]) + decoder.feed(data[5:])
    else:
        frames = decoder.feed(data)
    data[4:10] = b"------"  # the caller reuses its read buffer
    assert [bytes(f) for f in frames] == [b"abcdef", b"xyz"]
    for frame in frames:
        assert isinstance(frame, memoryview) and not frame.readonly
    first = frames[0]
    assert isinstance(first, memoryview)
    first[0:1] = b"A"  # batch headers are rewritten in place
    assert bytes(first) == b"Abcdef"


def test_a_frame_arriving_byte_by_byte() -> None:
    decoder = FrameDecoder(1024)
    data = _frame(b"hello") + _frame(b"")
    out = []
    for i in range(len(data)):
        out += decoder.feed(data[i : i + 1])
    assert [bytes(f) for f in out] == [b"hello", b""]
    assert decoder.buffered == 0


def test_a_large_frame_in_chunks() -> None:
    body = bytes(range(256)) * 4096  # 1 MiB
    data = _frame(body) + _frame(b"next")
    decoder = FrameDecoder(2 * len(body))
    out = []
    for i in range(0, len(data), 1000):
        out += decoder.feed(data[i : i + 1000])
    assert [bytes(f) for f in out] == [body, b"next"]


def test_size_above_the_limit_is_refused_before_buffering() -> None:
    decoder = FrameDecoder(100)
    with pytest.raises(ProtocolError) as info:
        decoder.feed(struct.pack(">i", 101))
    assert info.value.error_code == ErrorCode.INVALID_REQUEST
    assert decoder.buffered == 0


def test_size_prefix_split_across_reads_is_checked_when_complete() -> None:
    decoder = FrameDecoder(100)
    assert decoder.feed(b"\x7f\xff") == []
    with pytest.raises(ProtocolError):
        decoder.feed(b"\xff\xff" + b"x" * 10)
    assert decoder.buffered == 0


def test_negative_size_is_refused() -> None:
    with pytest.raises(ProtocolError):
        FrameDecoder(100).feed(struct.pack(">i", -1) + b"abc")


def test_frames_before_a_bad_size_are_returned_then_the_error_raised() -> None:
    decoder = FrameDecoder(10)
    frames = decoder.feed(_frame(b"ok") + struct.pack(">i", 11) + b"x" * 11)
    assert [bytes(f) for f in frames] == [b"ok"]
    with pytest.raises(ProtocolError):
        decoder.feed(b"")
    with pytest.raises(ProtocolError):  # and it stays failed: the stream is out of sync
        decoder.feed(_frame(b"ok"))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.binary(max_size=50), max_size=10),
    st.lists(st.integers(0, 600), max_size=8),
)
def test_any_split_of_the_stream_gives_the_same_frames(
    bodies: list[bytes], cuts: list[int]
) -> None:
    data = b"".join(_frame(b) for b in bodies)
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    decoder = FrameDecoder(64)
    out = []
    for a, b in itertools.pairwise(points):
        out += decoder.feed(bytearray(data[a:b]))
    assert [bytes(f) for f in out] == bodies
