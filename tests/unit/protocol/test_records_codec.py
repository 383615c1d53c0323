"""Zigzag varints and the records-section codec (protocol.records.varint / .record)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.records.batch import InvalidBatch
from protocol.records.record import Record, decode_records, encode_record, encode_records
from protocol.records.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    read_unsigned_varint,
    read_varint,
    read_varlong,
    size_of_varint,
    write_varint,
    write_varlong,
)

int32s = st.integers(INT32_MIN, INT32_MAX)
int64s = st.integers(INT64_MIN, INT64_MAX)
blobs = st.none() | st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=20), blobs), max_size=4)
records = st.builds(
    Record,
    offset_delta=int32s,
    timestamp_delta=int64s,
    key=blobs,
    value=blobs,
    headers=headers,
    attributes=st.integers(0, 255),
)


# Known encodings: zigzag maps 0, -1, 1, -2, ... to 0, 1, 2, 3, ...
@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (300, b"\xd8\x04"),
        (INT32_MAX, b"\xfe\xff\xff\xff\x0f"),
        (INT32_MIN, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_varint_known_encodings(value: int, encoded: bytes) -> None:
    out = bytearray()
    write_varint(out, value)
    assert bytes(out) == encoded
    assert read_varint(encoded, 0) == (value, len(encoded))
    assert size_of_varint(value) == len(encoded)


def test_varlong_extremes_take_ten_bytes() -> None:
    for value in (INT64_MAX, INT64_MIN):
        out = bytearray()
        write_varlong(out, value)
        assert len(out) == 10
        assert read_varlong(bytes(out), 0) == (value, 10)


@settings(max_examples=200, deadline=None)
@given(int32s, int64s)
def test_varint_and_varlong_round_trip(small: int, big: int) -> None:
    out = bytearray(b"\xaa")  # reading starts mid-buffer
    write_varint(out, small)
    write_varlong(out, big)
    value, pos = read_varint(out, 1)
    assert value == small
    value, pos = read_varlong(out, pos)
    assert (value, pos) == (big, len(out))


def test_writers_refuse_values_outside_their_width() -> None:
    with pytest.raises(ValueError):
        write_varint(bytearray(), INT32_MAX + 1)
    with pytest.raises(ValueError):
        write_varlong(bytearray(), INT64_MIN - 1)


@pytest.mark.parametrize(
    ("reader", "data"),
    [
        (read_varint, b""),
        (read_varint, b"\x80\x80"),  # continuation bit on the last byte
        (read_varint, b"\xff\xff\xff\xff\xff\x01"),  # 6 bytes: never-ending varint
        (read_varint, b"\xff\xff\xff\xff\x7f"),  # 5 bytes but 35 bits
        (read_varlong, b"\xff" * 10 + b"\x01"),
        (read_varlong, b"\xff" * 9 + b"\x7f"),  # 10 bytes but 70 bits
        (read_unsigned_varint, b"\x80"),
    ],
)
def test_bad_varints_are_corrupt_never_index_error(reader: object, data: bytes) -> None:
    with pytest.raises(InvalidBatch) as info:
        reader(data, 0)  # type: ignore[operator]
    assert info.value.corrupt


@settings(max_examples=150, deadline=None)
@given(st.lists(records, max_size=8))
def test_records_section_round_trip(items: list[Record]) -> None:
    section = bytes(encode_records(items))
    assert decode_records(section, len(items)) == items


def test_null_key_value_and_null_header_value_survive() -> None:
    record = Record(0, 0, None, None, [("trace", None), ("", b"")])
    assert decode_records(bytes(encode_records([record])), 1) == [record]


def test_record_byte_layout() -> None:
    out = bytearray()
    encode_record(out, Record(1, -2, b"k", None, [("h", b"v")]))
    # length 11 | attrs 0 | ts -2 | offset 1 | key len 1 "k" | value -1 | 1 header
    # | key len 1 "h" | value len 1 "v"
    assert bytes(out) == bytes([22, 0, 3, 2, 2]) + b"k" + bytes([1, 2, 2]) + b"h\x02v"


def _one_record() -> bytes:
    return bytes(encode_records([Record(0, 0, b"key", b"value", [("a", b"b")])]))


def test_truncated_section_is_corrupt() -> None:
    section = _one_record()
    for cut in range(len(section)):
        with pytest.raises(InvalidBatch) as info:
            decode_records(section[:cut], 1)
        assert info.value.corrupt


def test_bytes_left_after_the_records_are_corrupt() -> None:
    with pytest.raises(InvalidBatch, match="left after"):
        decode_records(_one_record() + b"\x00", 1)


def test_record_count_beyond_what_the_bytes_can_hold_is_refused_up_front() -> None:
    with pytest.raises(InvalidBatch, match="cannot fit"):
        decode_records(_one_record(), 2**31 - 1)


def test_field_running_past_its_record_is_corrupt() -> None:
    section = bytearray(_one_record())
    section[4] = 40  # key length 20, more than the record holds
    with pytest.raises(InvalidBatch, match="runs past"):
        decode_records(bytes(section), 1)


def test_header_key_must_be_utf8_and_not_corrupt() -> None:
    section = bytes(encode_records([Record(0, 0, None, None, [("x", None)])]))
    bad = section.replace(b"x", b"\xff")
    with pytest.raises(InvalidBatch) as info:
        decode_records(bad, 1)
    assert not info.value.corrupt


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 8))
def test_random_bytes_raise_only_invalid_batch(data: bytes, count: int) -> None:
    with contextlib.suppress(InvalidBatch):
        decode_records(data, count)
