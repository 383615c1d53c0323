"""Primitive types of the Kafka wire format: readers and writers.

All integers are big-endian and signed unless named otherwise. Layouts:

- ``int8 int16 int32 int64 uint16 uint32 float64``: fixed width (1/2/4/8/2/4/8 bytes).
- ``bool``: one byte, 0 is false, anything else true.
- ``uuid``: 16 raw bytes.
- unsigned varint: 7 bits per byte, least significant group first, high bit set on every
  byte but the last; at most 5 bytes for 32-bit values, 10 for 64-bit.
- varint / varlong: zigzag-mapped (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...) then unsigned varint.
- ``string``: int16 length then UTF-8; nullable strings use length -1 for null.
  compact string (flexible versions): unsigned varint of length + 1, 0 for null.
- ``bytes``/``records``: int32 length then raw bytes (-1 null); compact: uvarint length + 1.
- arrays: int32 count (-1 null) then the elements; compact: uvarint count + 1 (0 null).
- tagged fields (flexible versions, at the end of every struct): uvarint count, then per
  field uvarint tag, uvarint size and ``size`` bytes of data, in increasing tag order.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``. Every malformed input raises
ProtocolError(INVALID_REQUEST): a length is checked against the bytes left in ``buf``
before anything is sliced or allocated, so no reader allocates more than the input's size.
"""

from __future__ import annotations

import struct
import uuid
from typing import Final

from protocol.errors import ErrorCode, ProtocolError

Buffer = bytes | bytearray | memoryview

INT8: Final = struct.Struct(">b")
INT16: Final = struct.Struct(">h")
INT32: Final = struct.Struct(">i")
INT64: Final = struct.Struct(">q")
UINT16: Final = struct.Struct(">H")
UINT32: Final = struct.Struct(">I")
FLOAT64: Final = struct.Struct(">d")

ZERO_UUID: Final = uuid.UUID(int=0)

_MALFORMED: Final = ErrorCode.INVALID_REQUEST


def malformed(message: str) -> ProtocolError:
    return ProtocolError(_MALFORMED, message)


def _fixed(fmt: struct.Struct, buf: Buffer, pos: int) -> tuple[int, int]:
    if pos < 0 or pos + fmt.size > len(buf):
        raise malformed(f"truncated: need {fmt.size} bytes at offset {pos}")
    value: int = fmt.unpack_from(buf, pos)[0]
    return value, pos + fmt.size


def read_int8(buf: Buffer, pos: int) -> tuple[int, int]:
    return _fixed(INT8, buf, pos)


def read_int16(buf: Buffer, pos: int) -> tuple[int, int]:
    return _fixed(INT16, buf, pos)


def read_int32(buf: Buffer, pos: int) -> tuple[int, int]:
    return _fixed(INT32, buf, pos)


def read_int64(buf: Buffer, pos: int) -> tuple[int, int]:
    return _fixed(INT64, buf, pos)


def read_uint16(buf: Buffer, pos: int) -> tuple[int, int]:
    return _fixed(UINT16, buf, pos)


def read_uint32(buf: Buffer, pos: int) -> tuple[int, int]:
    return _fixed(UINT32, buf, pos)


def read_float64(buf: Buffer, pos: int) -> tuple[float, int]:
    if pos < 0 or pos + 8 > len(buf):
        raise malformed(f"truncated: need 8 bytes at offset {pos}")
    value: float = FLOAT64.unpack_from(buf, pos)[0]
    return value, pos + 8


def read_bool(buf: Buffer, pos: int) -> tuple[bool, int]:
    if pos < 0 or pos >= len(buf):
        raise malformed(f"truncated: need 1 byte at offset {pos}")
    return buf[pos] != 0, pos + 1


def read_uuid(buf: Buffer, pos: int) -> tuple[uuid.UUID, int]:
    if pos < 0 or pos + 16 > len(buf):
        raise malformed(f"truncated: need 16 bytes at offset {pos}")
    return uuid.UUID(bytes=bytes(buf[pos : pos + 16])), pos + 16


def _read_uvarint(buf: Buffer, pos: int, max_bytes: int) -> tuple[int, int]:
    n = len(buf)
    if pos >= n:
        raise malformed(f"truncated varint at offset {pos}")
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    start = pos
    pos += 1
    while True:
        if pos >= n:
            raise malformed(f"truncated varint at offset {start}")
        if pos - start >= max_bytes:
            raise malformed(f"varint longer than {max_bytes} bytes at offset {start}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def read_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Unsigned 32-bit varint (lengths, counts and tags of flexible versions)."""
    if pos < len(buf) and buf[pos] < 0x80:  # the common one-byte case
        return buf[pos], pos + 1
    value, end = _read_uvarint(buf, pos, 5)
    if value > 0xFFFFFFFF:
        raise malformed(f"unsigned varint out of range at offset {pos}")
    return value, end


def read_uvarlong(buf: Buffer, pos: int) -> tuple[int, int]:
    value, end = _read_uvarint(buf, pos, 10)
    if value > 0xFFFFFFFFFFFFFFFF:
        raise malformed(f"unsigned varlong out of range at offset {pos}")
    return value, end


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zigzag-encoded signed 32-bit varint (record fields)."""
    value, end = read_uvarint(buf, pos)
    return (value >> 1) ^ -(value & 1), end


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zigzag-encoded signed 64-bit varint (record fields)."""
    value, end = read_uvarlong(buf, pos)
    return (value >> 1) ^ -(value & 1), end


# --- lengths ---------------------------------------------------------------------------


def _checked_length(buf: Buffer, pos: int, length: int, what: str) -> None:
    if length > len(buf) - pos:
        raise malformed(f"{what} of {length} bytes at offset {pos} exceeds the frame")


def read_array_length(buf: Buffer, pos: int) -> tuple[int, int]:
    """int32 element count; -1 is null. Each element takes at least one byte on the wire
    or, for empty structs, none; either way a count above the bytes left cannot be valid
    for non-empty elements and is refused for all, which bounds allocation by frame size."""
    if pos + 4 > len(buf):
        raise malformed(f"truncated array length at offset {pos}")
    (count,) = INT32.unpack_from(buf, pos)
    pos += 4
    if count < -1:
        raise malformed(f"negative array length {count} at offset {pos - 4}")
    if count > len(buf) - pos:
        raise malformed(f"array of {count} elements at offset {pos - 4} exceeds the frame")
    return count, pos


def read_compact_array_length(buf: Buffer, pos: int) -> tuple[int, int]:
    """uvarint count + 1; 0 is null (returned as -1)."""
    if pos < len(buf) and buf[pos] < 0x80:
        count, end = buf[pos] - 1, pos + 1
    else:
        count, end = read_uvarint(buf, pos)
        count -= 1
    if count > len(buf) - end:
        raise malformed(f"array of {count} elements at offset {pos} exceeds the frame")
    return count, end


# --- strings ---------------------------------------------------------------------------


def _utf8(buf: Buffer, start: int, length: int) -> str:
    try:
        return str(buf[start : start + length], "utf-8")
    except UnicodeDecodeError as e:
        raise malformed(f"invalid UTF-8 in string at offset {start}: {e.reason}") from None


def read_string(buf: Buffer, pos: int) -> tuple[str, int]:
    if pos + 2 > len(buf):
        raise malformed(f"truncated string length at offset {pos}")
    (length,) = INT16.unpack_from(buf, pos)
    pos += 2
    if length < 0:
        raise malformed(f"negative length {length} of a non-nullable string at {pos - 2}")
    _checked_length(buf, pos, length, "string")
    return _utf8(buf, pos, length), pos + length


def read_nullable_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    if pos + 2 > len(buf):
        raise malformed(f"truncated string length at offset {pos}")
    (length,) = INT16.unpack_from(buf, pos)
    pos += 2
    if length == -1:
        return None, pos
    if length < 0:
        raise malformed(f"negative string length {length} at offset {pos - 2}")
    _checked_length(buf, pos, length, "string")
    return _utf8(buf, pos, length), pos + length


def read_compact_string(buf: Buffer, pos: int) -> tuple[str, int]:
    length, end = read_uvarint(buf, pos)
    if length == 0:
        raise malformed(f"null value of a non-nullable compact string at offset {pos}")
    length -= 1
    _checked_length(buf, end, length, "string")
    return _utf8(buf, end, length), end + length


def read_compact_nullable_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    length, end = read_uvarint(buf, pos)
    if length == 0:
        return None, end
    length -= 1
    _checked_length(buf, end, length, "string")
    return _utf8(buf, end, length), end + length


# --- bytes -----------------------------------------------------------------------------


def _bytes_length(buf: Buffer, pos: int, nullable: bool) -> tuple[int, int]:
    if pos + 4 > len(buf):
        raise malformed(f"truncated bytes length at offset {pos}")
    (length,) = INT32.unpack_from(buf, pos)
    if length < 0 and not (nullable and length == -1):
        raise malformed(f"invalid bytes length {length} at offset {pos}")
    _checked_length(buf, pos + 4, length, "bytes")
    return length, pos + 4


def _compact_bytes_length(buf: Buffer, pos: int, nullable: bool) -> tuple[int, int]:
    length, end = read_uvarint(buf, pos)
    if length == 0 and not nullable:
        raise malformed(f"null value of non-nullable compact bytes at offset {pos}")
    length -= 1
    _checked_length(buf, end, length, "bytes")
    return length, end


def read_bytes(buf: Buffer, pos: int) -> tuple[bytes, int]:
    length, pos = _bytes_length(buf, pos, False)
    return bytes(buf[pos : pos + length]), pos + length


def read_nullable_bytes(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    length, pos = _bytes_length(buf, pos, True)
    if length < 0:
        return None, pos
    return bytes(buf[pos : pos + length]), pos + length


def read_compact_bytes(buf: Buffer, pos: int) -> tuple[bytes, int]:
    length, pos = _compact_bytes_length(buf, pos, False)
    return bytes(buf[pos : pos + length]), pos + length


def read_compact_nullable_bytes(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    length, pos = _compact_bytes_length(buf, pos, True)
    if length < 0:
        return None, pos
    return bytes(buf[pos : pos + length]), pos + length


def read_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    """Nullable records: a zero-copy slice of ``buf`` (never parsed here)."""
    length, pos = _bytes_length(buf, pos, True)
    if length < 0:
        return None, pos
    return buf[pos : pos + length], pos + length


def read_compact_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    length, pos = _compact_bytes_length(buf, pos, True)
    if length < 0:
        return None, pos
    return buf[pos : pos + length], pos + length


# --- tagged fields ---------------------------------------------------------------------


def read_tag_header(buf: Buffer, pos: int) -> tuple[int, int, int]:
    """One tagged field's ``(tag, size, data_pos)``; size is checked against the buffer."""
    tag, pos = read_uvarint(buf, pos)
    size, pos = read_uvarint(buf, pos)
    _checked_length(buf, pos, size, "tagged field")
    return tag, size, pos


# --- writers ---------------------------------------------------------------------------


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint_size(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def write_varint(out: bytearray, value: int) -> None:
    if not -(1 << 31) <= value < 1 << 31:
        raise ValueError(f"varint out of range: {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"varlong out of range: {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def write_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    data = value.encode()
    if len(data) > 0x7FFF:
        raise ValueError(f"string of {len(data)} bytes is too long for an int16 length")
    out += INT16.pack(len(data))
    out += data


def write_compact_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    data = value.encode()
    write_uvarint(out, len(data) + 1)
    out += data


def write_bytes(out: bytearray, value: Buffer | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT32.pack(len(value))
    out += value


def write_compact_bytes(out: bytearray, value: Buffer | None) -> None:
    if value is None:
        out.append(0)
        return
    write_uvarint(out, len(value) + 1)
    out += value


def write_uuid(out: bytearray, value: uuid.UUID) -> None:
    out += value.bytes
