"""Zigzag varints, the integer encoding inside RecordBatch v2 records.

Kafka's record fields use Protocol Buffers' encoding: the signed value is zigzag-mapped to
an unsigned one (0, -1, 1, -2, ... become 0, 1, 2, 3, ...) so that small negative numbers
stay short, then written little-endian in groups of 7 bits, the high bit of each byte
set while more bytes follow.

Two widths exist: *varint* carries an int32 (at most 5 bytes) and *varlong* an int64 (at
most 10 bytes). A decoder that meets a longer run, or a value that does not fit its
width, refuses it: a varint that never ends must not make the reader walk off the buffer.

Decoders take ``(buf, pos)`` and return ``(value, new_pos)``; they raise
:class:`~protocol.records.batch.InvalidBatch` (corrupt) on a truncated or overlong
encoding, never IndexError.
"""

from __future__ import annotations

from protocol.records.batch import InvalidBatch

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_VARINT_MAX_BYTES = 5
_VARLONG_MAX_BYTES = 10

Buffer = bytes | bytearray | memoryview


def zigzag_encode(value: int) -> int:
    """Map a signed int64 to the unsigned zigzag form (``(n << 1) ^ (n >> 63)``)."""
    return (value << 1) ^ (value >> 63)


def _write_unsigned(out: bytearray, raw: int) -> None:
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def write_varint(out: bytearray, value: int) -> None:
    """Append ``value`` (an int32) as a zigzag varint."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"varint out of int32 range: {value}")
    if 0 <= value < 64:  # the common case: one byte, zigzag is a plain doubling
        out.append(value << 1)
        return
    _write_unsigned(out, zigzag_encode(value))


def write_varlong(out: bytearray, value: int) -> None:
    """Append ``value`` (an int64) as a zigzag varlong."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varlong out of int64 range: {value}")
    _write_unsigned(out, zigzag_encode(value))


def size_of_varint(value: int) -> int:
    """Bytes :func:`write_varint` / :func:`write_varlong` would use for ``value``."""
    raw = zigzag_encode(value)
    size = 1
    while raw >= 0x80:
        raw >>= 7
        size += 1
    return size


def _read_unsigned(buf: Buffer, pos: int, max_bytes: int) -> tuple[int, int]:
    end = len(buf)
    result = 0
    shift = 0
    for _ in range(max_bytes):
        if pos >= end:
            raise InvalidBatch("varint truncated", corrupt=True)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    raise InvalidBatch(f"varint longer than {max_bytes} bytes", corrupt=True)


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read a zigzag varint (int32) at ``pos``; return ``(value, next_pos)``."""
    # Fast paths for one and two bytes (values up to +-8191): record lengths, key and
    # value lengths and deltas nearly always fit.
    if pos + 1 < len(buf):
        byte = buf[pos]
        if byte < 0x80:
            return (byte >> 1) ^ -(byte & 1), pos + 1
        second = buf[pos + 1]
        if second < 0x80:
            raw = (byte & 0x7F) | (second << 7)
            return (raw >> 1) ^ -(raw & 1), pos + 2
    elif pos < len(buf) and buf[pos] < 0x80:
        byte = buf[pos]
        return (byte >> 1) ^ -(byte & 1), pos + 1
    raw, pos = _read_unsigned(buf, pos, _VARINT_MAX_BYTES)
    if raw >> 32:
        raise InvalidBatch("varint does not fit 32 bits", corrupt=True)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read a zigzag varlong (int64) at ``pos``; return ``(value, next_pos)``."""
    if pos < len(buf):
        byte = buf[pos]
        if byte < 0x80:
            return (byte >> 1) ^ -(byte & 1), pos + 1
    raw, pos = _read_unsigned(buf, pos, _VARLONG_MAX_BYTES)
    if raw >> 64:
        raise InvalidBatch("varlong does not fit 64 bits", corrupt=True)
    return (raw >> 1) ^ -(raw & 1), pos


def read_unsigned_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read a plain (not zigzag) unsigned 32-bit varint, as snappy's length preamble is."""
    raw, pos = _read_unsigned(buf, pos, _VARINT_MAX_BYTES)
    if raw >> 32:
        raise InvalidBatch("unsigned varint does not fit 32 bits", corrupt=True)
    return raw, pos
