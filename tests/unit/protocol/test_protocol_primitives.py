"""Primitive readers and writers: round trips and every kind of malformed input."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import primitives as p
from protocol.errors import ErrorCode, ProtocolError


def _rejects(read: Callable[[Any, int], Any], data: bytes) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        read(memoryview(data), 0)
    assert info.value.error_code == ErrorCode.INVALID_REQUEST
    return info.value


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_unsigned_varint_round_trip(value: int) -> None:
    out = bytearray()
    p.write_uvarint(out, value)
    assert len(out) == p.uvarint_size(value)
    assert p.read_uvarint(bytes(out), 0) == (value, len(out))


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1))
def test_zigzag_varint_and_varlong_round_trip(v32: int, v64: int) -> None:
    out = bytearray()
    p.write_varint(out, v32)
    n = len(out)
    p.write_varlong(out, v64)
    assert p.read_varint(bytes(out), 0) == (v32, n)
    assert p.read_varlong(bytes(out), n) == (v64, len(out))


def test_zigzag_mapping_matches_the_wire_format() -> None:
    cases = [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01")]
    for value, wire in cases:
        out = bytearray()
        p.write_varint(out, value)
        assert bytes(out) == wire


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=50), st.booleans())
def test_strings_round_trip(text: str, compact: bool) -> None:
    out = bytearray()
    (p.write_compact_string if compact else p.write_string)(out, text)
    read = p.read_compact_string if compact else p.read_string
    assert read(bytes(out), 0) == (text, len(out))


def test_null_strings_and_bytes() -> None:
    assert p.read_nullable_string(b"\xff\xff", 0) == (None, 2)
    assert p.read_compact_nullable_string(b"\x00", 0) == (None, 1)
    assert p.read_nullable_bytes(b"\xff\xff\xff\xff", 0) == (None, 4)
    assert p.read_compact_nullable_bytes(b"\x00", 0) == (None, 1)
    _rejects(p.read_string, b"\xff\xff")  # null in a non-nullable string
    _rejects(p.read_compact_string, b"\x00")
    _rejects(p.read_bytes, b"\xff\xff\xff\xff")
    _rejects(p.read_compact_bytes, b"\x00")


@pytest.mark.parametrize(
    ("read", "data"),
    [
        (p.read_int8, b""),
        (p.read_int16, b"\x00"),
        (p.read_int32, b"\x00\x00\x00"),
        (p.read_int64, b"\x00" * 7),
        (p.read_uint16, b"\x00"),
        (p.read_uint32, b"\x00" * 3),
        (p.read_float64, b"\x00" * 7),
        (p.read_bool, b""),
        (p.read_uuid, b"\x00" * 15),
        (p.read_uvarint, b""),
        (p.read_uvarint, b"\x80\x80"),
        (p.read_string, b"\x00"),
        (p.read_string, b"\x00\x05abc"),
        (p.read_compact_string, b"\x06abc"),
        (p.read_bytes, b"\x00\x00\x00\x05abc"),
        (p.read_compact_bytes, b"\x06ab"),
        (p.read_array_length, b"\x00\x00"),
    ],
)
def test_truncated_input_is_a_protocol_error(read: Callable[[Any, int], Any], data: bytes) -> None:
    _rejects(read, data)


def test_negative_lengths_are_refused() -> None:
    _rejects(p.read_string, struct.pack(">h", -2) + b"ab")
    _rejects(p.read_nullable_string, struct.pack(">h", -5) + b"ab")
    _rejects(p.read_nullable_bytes, struct.pack(">i", -2) + b"ab")
    _rejects(p.read_array_length, struct.pack(">i", -7))


def test_huge_lengths_are_refused_without_allocating() -> None:
    # Declared sizes far beyond the input: refused by comparing with the bytes left,
    # so nothing of the declared size is ever allocated.
    _rejects(p.read_bytes, struct.pack(">i", 2**31 - 1) + b"x")
    _rejects(p.read_string, struct.pack(">h", 32767) + b"x")
    out = bytearray()
    p.write_uvarint(out, 2**32 - 1)
    _rejects(p.read_compact_bytes, bytes(out) + b"x")
    _rejects(p.read_records, struct.pack(">i", 2**31 - 1))


def test_array_count_larger_than_bytes_left_is_refused() -> None:
    _rejects(p.read_array_length, struct.pack(">i", 5) + b"\x00" * 4)
    assert p.read_array_length(struct.pack(">i", 4) + b"\x00" * 4, 0) == (4, 4)
    _rejects(p.read_compact_array_length, b"\x06" + b"\x00" * 4)


def test_varints_that_never_end_are_refused() -> None:
    _rejects(p.read_uvarint, b"\xff" * 6)
    _rejects(p.read_uvarint, b"\xff\xff\xff\xff\x7f")  # 35 bits do not fit 32
    _rejects(p.read_uvarlong, b"\xff" * 11)
    _rejects(p.read_varint, b"\x80" * 100)
    assert p.read_uvarint(b"\xff\xff\xff\xff\x0f", 0) == (2**32 - 1, 5)


def test_invalid_utf8_is_refused() -> None:
    error = _rejects(p.read_string, b"\x00\x02\xc3\x28")
    assert "UTF-8" in str(error)
    _rejects(p.read_compact_nullable_string, b"\x03\xff\xfe")


def test_records_are_zero_copy_slices() -> None:
    frame = memoryview(b"\x00\x00\x00\x03abcdef")
    value, end = p.read_records(frame, 0)
    assert value is not None and bytes(value) == b"abc" and end == 7
    assert value.obj is frame.obj


def test_tag_header_size_is_checked() -> None:
    assert p.read_tag_header(b"\x05\x02ab", 0) == (5, 2, 2)
    _rejects(p.read_tag_header, b"\x05\x09ab")
