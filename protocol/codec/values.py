"""Readers and writers of one field's value, chosen once per (field, version).

A reader is ``read(buf, pos) -> (value, new_pos)``; a writer is
``write(out, parts, value)``, appending to the bytearray ``out``. ``parts`` collects
pieces that are not copied into ``out``: records values of LARGE_RECORDS bytes or more,
and records given as non-bytes objects (file regions the broker sends with sendfile).
Before such a piece is appended, ``out`` is flushed into ``parts`` as bytes, so
``parts + [out]`` is always the encoding in order.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final, Protocol, TypeAlias

from protocol import primitives as p
from protocol.codec.structs import FIXED, FieldInfo
from protocol.errors import ErrorCode, ProtocolError


class RecordsRegion(Protocol):
    """Record data that is not copied into the encoding: a file region the broker sends
    with sendfile. The codec needs only its length; the sender knows how to send it."""

    def __len__(self) -> int: ...


#: The value of a ``records`` field. Decoding gives a ``memoryview`` of the frame (never
#: parsed here); a message to encode may hold any bytes-like value or a region.
Records: TypeAlias = bytes | bytearray | memoryview | RecordsRegion


def received_records(value: Records | None) -> bytes | bytearray | memoryview | None:
    """The ``records`` of a decoded message: bytes-like (regions are only ever put into
    messages to encode); TypeError for a region, which no decoder makes."""
    if value is None or isinstance(value, bytes | bytearray | memoryview):
        return value
    raise TypeError(f"records of type {type(value).__name__} were not decoded")


Parts = list[Any]
Reader = Callable[[Any, int], tuple[Any, int]]
Writer = Callable[[bytearray, Parts, Any], None]

#: records values at least this large are not copied into ``out`` but kept as their own
#: piece (joined once at the end, or handed to the caller as is).
LARGE_RECORDS: Final = 4096


def malformed(message: str) -> ProtocolError:
    return ProtocolError(ErrorCode.INVALID_REQUEST, message)


def _is_compact(fi: FieldInfo, version: int, flexible: bool) -> bool:
    if fi.flexible_override is not None:
        return fi.flexible_override.has(version)
    return flexible


def _scalar_reader(fi: FieldInfo, version: int, flexible: bool) -> Reader:
    """Reader of one value of the field's element type."""
    t = fi.element
    compact = _is_compact(fi, version, flexible)
    nullable = fi.nullable.has(version)
    if fi.struct is not None:
        return fi.struct.decoder(version)
    if t in FIXED:
        s = struct.Struct(">" + FIXED[t][0])
        unpack, size = s.unpack_from, s.size

        def read_fixed(buf: Any, pos: int) -> tuple[Any, int]:
            return unpack(buf, pos)[0], pos + size

        return read_fixed
    if t == "uuid":
        return p.read_uuid
    table: dict[str, tuple[Reader, Reader, Reader, Reader]] = {
        # (plain, nullable, compact, compact nullable)
        "string": (
            p.read_string,
            p.read_nullable_string,
            p.read_compact_string,
            p.read_compact_nullable_string,
        ),
        "bytes": (
            p.read_bytes,
            p.read_nullable_bytes,
            p.read_compact_bytes,
            p.read_compact_nullable_bytes,
        ),
        "records": (p.read_records, p.read_records, p.read_compact_records, p.read_compact_records),
    }
    return table[t][2 * compact + nullable]


def value_reader(fi: FieldInfo, version: int, flexible: bool) -> Reader:
    """Reader of the field's whole value (an array reads its count then its elements)."""
    if not fi.spec.is_array:
        return _scalar_reader(fi, version, flexible)
    compact = _is_compact(fi, version, flexible)
    nullable = fi.nullable.has(version)
    name = fi.spec.name
    unpack_count = p.INT32.unpack_from

    # The count is read inline in each reader (arrays are the codec's hot spot): a
    # compact count is uvarint(n + 1), 0 for null; a classic one int32 n, -1 for null.
    # A count above the bytes left is refused before anything is allocated.
    if fi.element in FIXED:
        code = FIXED[fi.element][0]
        size = struct.calcsize(">" + code)

        def read_fixed_array(buf: Any, pos: int) -> tuple[Any, int]:
            if not compact:
                (n,) = unpack_count(buf, pos)
                pos += 4
            elif buf[pos] < 0x80:
                n = buf[pos] - 1
                pos += 1
            else:
                n, pos = p.read_uvarint(buf, pos)
                n -= 1
            if n < 0:
                if n < -1 or not nullable:
                    raise malformed(f"invalid count {n} of array {name}")
                return None, pos
            if n * size > len(buf) - pos:
                raise malformed(f"array {name} of {n} elements exceeds the frame")
            return list(struct.unpack_from(f">{n}{code}", buf, pos)), pos + n * size

        return read_fixed_array
    element = _scalar_reader(fi, version, flexible)

    def read_array(buf: Any, pos: int) -> tuple[Any, int]:
        if not compact:
            (n,) = unpack_count(buf, pos)
            pos += 4
        elif buf[pos] < 0x80:
            n = buf[pos] - 1
            pos += 1
        else:
            n, pos = p.read_uvarint(buf, pos)
            n -= 1
        if n < 0:
            if n < -1 or not nullable:
                raise malformed(f"invalid count {n} of array {name}")
            return None, pos
        if n > len(buf) - pos:
            raise malformed(f"array {name} of {n} elements exceeds the frame")
        items: list[Any] = []
        append = items.append
        for _ in range(n):
            item, pos = element(buf, pos)
            append(item)
        return items, pos

    return read_array


def not_nullable(name: str) -> ValueError:
    return ValueError(f"field {name} is not nullable in this version")


def _scalar_writer(fi: FieldInfo, version: int, flexible: bool) -> Writer:
    t = fi.element
    compact = _is_compact(fi, version, flexible)
    nullable = fi.nullable.has(version)
    name = fi.spec.name
    if fi.struct is not None:
        encode = fi.struct.encoder(version)

        def write_struct(out: bytearray, parts: Parts, value: Any) -> None:
            if value is None:
                raise not_nullable(name)
            encode(value, out, parts)

        return write_struct
    if t in FIXED:
        pack = struct.Struct(">" + FIXED[t][0]).pack

        def write_fixed(out: bytearray, parts: Parts, value: Any) -> None:
            out += pack(value)

        return write_fixed
    if t == "uuid":

        def write_uuid(out: bytearray, parts: Parts, value: Any) -> None:
            out += value.bytes

        return write_uuid
    if t == "records":
        return _records_writer(compact)
    raw = p.write_compact_string if compact else p.write_string
    if t == "bytes":
        raw = p.write_compact_bytes if compact else p.write_bytes  # type: ignore[assignment]

    def write_var(out: bytearray, parts: Parts, value: Any) -> None:
        if value is None and not nullable:
            raise not_nullable(name)
        raw(out, value)

    return write_var


def _records_writer(compact: bool) -> Writer:
    """records: length then the data; large or external values become their own piece."""

    def write_records(out: bytearray, parts: Parts, value: Any) -> None:
        if value is None:
            if compact:
                out.append(0)
            else:
                out += b"\xff\xff\xff\xff"
            return
        size = len(value)
        if compact:
            p.write_uvarint(out, size + 1)
        else:
            out += p.INT32.pack(size)
        if size < LARGE_RECORDS and isinstance(value, bytes | bytearray | memoryview):
            out += value
        else:
            parts.append(bytes(out))
            out.clear()
            parts.append(value)

    return write_records


def value_writer(fi: FieldInfo, version: int, flexible: bool) -> Writer:
    """Writer of the field's whole value (an array writes its count then its elements)."""
    if not fi.spec.is_array:
        return _scalar_writer(fi, version, flexible)
    compact = _is_compact(fi, version, flexible)
    nullable = fi.nullable.has(version)
    name = fi.spec.name
    null = b"\x00" if compact else b"\xff\xff\xff\xff"
    pack_count = p.INT32.pack

    # The count is written inline in each writer: arrays are the codec's hot spot.
    if fi.element in FIXED:
        code = FIXED[fi.element][0]

        def write_fixed_array(out: bytearray, parts: Parts, value: Any) -> None:
            if value is None:
                if not nullable:
                    raise not_nullable(name)
                out += null
                return
            n = len(value)
            if not compact:
                out += pack_count(n)
            elif n < 0x7F:
                out.append(n + 1)
            else:
                p.write_uvarint(out, n + 1)
            out += struct.pack(f">{n}{code}", *value)

        return write_fixed_array
    if fi.struct is not None:
        element: Any = fi.struct.encoder(version)  # (item, out, parts)
    else:
        scalar = _scalar_writer(fi, version, flexible)

        def element(item: Any, out: bytearray, parts: Parts) -> None:
            scalar(out, parts, item)

    def write_array(out: bytearray, parts: Parts, value: Any) -> None:
        if value is None:
            if not nullable:
                raise not_nullable(name)
            out += null
            return
        n = len(value)
        if not compact:
            out += pack_count(n)
        elif n < 0x7F:
            out.append(n + 1)
        else:
            p.write_uvarint(out, n + 1)
        for item in value:
            element(item, out, parts)

    return write_array
