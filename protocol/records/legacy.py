"""The legacy message formats (magic 0 and 1): one message's codec, message sets, wrappers.

Before RecordBatch v2, a log and a Produce or Fetch ``records`` field held a message set:
messages back to back, each::

     0  offset        int64
     8  message_size  int32    bytes after this field
    12  crc           uint32   CRC-32 (zlib's polynomial, not Castagnoli) of bytes 16 .. end
    16  magic         int8     0 or 1
    17  attributes    int8     bits 0-2 codec, bit 3 timestamp type (magic 1 only)
    18  timestamp     int64    magic 1 only; -1 when unknown
        key           int32 length (-1 null) + bytes
        value         int32 length (-1 null) + bytes

The first 12 bytes have the shape of a v2 batch's, and the magic sits at byte 16 in every
format, so 17 bytes tell the formats apart.

Compression wraps messages: a *wrapper* message has a codec in its attributes, a null key,
and as value the compressed bytes of an inner message set (each inner message
uncompressed, of the wrapper's magic). Offsets of inner messages:

- magic 0: absolute offsets, the wrapper's offset being its last inner message's;
- magic 1: relative offsets 0 .. n-1 as a producer writes them, the wrapper carrying the
  absolute offset of the last one, so inner ``i`` is at ``wrapper - last_relative + i``
  (this let a broker assign offsets by rewriting the wrapper only).

A magic 1 wrapper's timestamp is the largest inner timestamp (CreateTime) or the time the
broker appended it (LogAppendTime, attribute bit 3): with LogAppendTime every inner
message takes the wrapper's timestamp, whatever it carries itself.

Each message carries its own CRC: a wrapper's covers the compressed bytes, and each inner
message's is checked again once decompressed. Codecs: :mod:`.legacy_compression`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from protocol.records.batch import (
    COMPRESSION_MASK,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    Compression,
    InvalidBatch,
    TimestampType,
)
from protocol.records.compression import DEFAULT_MAX_UNCOMPRESSED
from protocol.records.legacy_compression import legacy_compress, legacy_decompress

MAGIC_V0 = 0
MAGIC_V1 = 1
#: crc + magic + attributes + key length + value length.
MESSAGE_OVERHEAD_V0 = 14
#: ... + timestamp.
MESSAGE_OVERHEAD_V1 = 22

_PREFIX = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_OFFSET_SIZE = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_MAGIC_ATTRS = struct.Struct(">bb")
_MAGIC_ATTRS_TS = struct.Struct(">bbq")
#: offset, message_size, crc: what precedes the bytes the CRC covers
_PREFIX_OUT = struct.Struct(">qiI")
_NULL = b"\xff\xff\xff\xff"

Buffer = bytes | bytearray | memoryview


def message_overhead(magic: int) -> int:
    """Bytes of a message of ``magic`` after its size field, key and value excluded."""
    return MESSAGE_OVERHEAD_V0 if magic == MAGIC_V0 else MESSAGE_OVERHEAD_V1


class LegacyMessage(NamedTuple):
    """One message of magic 0 or 1, as stored (a wrapper's value is compressed bytes)."""

    offset: int
    magic: int
    attributes: int
    #: NO_TIMESTAMP (-1) for magic 0, which has none
    timestamp: int
    key: bytes | None
    value: bytes | None
    crc: int
    #: bytes of the whole message, its 12-byte log overhead included
    size: int

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_compressed(self) -> bool:
        return self.attributes & COMPRESSION_MASK != Compression.NONE

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic > MAGIC_V0 and self.attributes & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME


# ------------------------------------------------------------------------- recognition


def message_format(buf: Buffer, pos: int = 0) -> int:
    """The magic (0, 1 or 2) of the message or batch at ``pos``; needs 17 bytes."""
    if len(buf) - pos <= MAGIC_OFFSET:
        raise InvalidBatch(
            f"{len(buf) - pos} bytes are too few to hold a message's magic", corrupt=True
        )
    return int(buf[pos + MAGIC_OFFSET])


def is_legacy(buf: Buffer, pos: int = 0) -> bool:
    """True when the bytes at ``pos`` start a magic 0 or 1 message."""
    return message_format(buf, pos) in (MAGIC_V0, MAGIC_V1)


# ------------------------------------------------------------------------------ decode


def read_message(buf: Buffer, pos: int = 0, end: int | None = None) -> LegacyMessage:
    """The whole message at ``pos`` (ending before ``end``), its CRC-32 checked. Raises
    :class:`InvalidBatch`: corrupt for a bad CRC or an impossible size."""
    limit = len(buf) if end is None else end
    if limit - pos < LOG_OVERHEAD + MESSAGE_OVERHEAD_V0:
        raise InvalidBatch("legacy message truncated", corrupt=True)
    offset, size, crc, magic, attributes = _PREFIX.unpack_from(buf, pos)
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise InvalidBatch(f"magic {magic} is not a legacy message format")
    message_end = pos + LOG_OVERHEAD + size
    if size < message_overhead(magic) or message_end > limit:
        raise InvalidBatch(f"legacy message size {size} is impossible here", corrupt=True)
    view = memoryview(buf)
    computed = zlib.crc32(view[pos + MAGIC_OFFSET : message_end])
    if computed != crc:
        raise InvalidBatch(
            f"legacy message at offset {offset}: CRC mismatch (stored {crc:#010x}, "
            f"computed {computed:#010x})",
            corrupt=True,
        )
    at = pos + MAGIC_OFFSET + 2
    timestamp = NO_TIMESTAMP
    if magic == MAGIC_V1:
        (timestamp,) = _INT64.unpack_from(buf, at)
        at += 8
    key, at = _read_bytes(view, at, message_end)
    value, at = _read_bytes(view, at, message_end)
    if at != message_end:
        raise InvalidBatch(
            f"legacy message at offset {offset}: {message_end - at} bytes after its value",
            corrupt=True,
        )
    return LegacyMessage(offset, magic, attributes, timestamp, key, value, crc, size + LOG_OVERHEAD)


def _read_bytes(view: memoryview, at: int, end: int) -> tuple[bytes | None, int]:
    if end - at < 4:
        raise InvalidBatch("legacy message: key or value length truncated", corrupt=True)
    (length,) = _INT32.unpack_from(view, at)
    at += 4
    if length < 0:
        return None, at
    if at + length > end:
        raise InvalidBatch("legacy message: key or value runs past the message", corrupt=True)
    return bytes(view[at : at + length]), at + length


def read_legacy_header(buf: Buffer, pos: int = 0) -> LegacyMessage:
    """The message at ``pos``, checked (kept for readers that only describe it)."""
    return read_message(buf, pos)


def iter_messages(
    buf: Buffer, pos: int = 0, end: int | None = None
) -> Iterator[tuple[int, LegacyMessage]]:
    """``(position, message)`` for each whole message of the set in ``buf[pos:end]``
    (shallow: wrappers are not opened). A message cut short at the end ends the
    iteration quietly, as a fetch's or a segment's tail may be; a message whose size is
    below its format's minimum raises a corrupt :class:`InvalidBatch`."""
    limit = len(buf) if end is None else end
    while limit - pos >= LOG_OVERHEAD:
        _, size = _OFFSET_SIZE.unpack_from(buf, pos)
        if size < MESSAGE_OVERHEAD_V0:
            raise InvalidBatch(f"legacy message size {size} at position {pos}", corrupt=True)
        if pos + LOG_OVERHEAD + size > limit:
            return
        yield pos, read_message(buf, pos, limit)
        pos += LOG_OVERHEAD + size


def deep_messages(
    wrapper: LegacyMessage, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED
) -> list[LegacyMessage]:
    """The messages a message stands for: itself when uncompressed, else the inner
    messages of the wrapper with absolute offsets (and, under a LogAppendTime magic 1
    wrapper, the wrapper's timestamp). Inner CRCs are checked; an inner message of another
    magic or compressed itself is INVALID_RECORD."""
    if not wrapper.is_compressed:
        return [wrapper]
    if wrapper.value is None:
        raise InvalidBatch(f"compressed message at offset {wrapper.offset} has a null value")
    data = legacy_decompress(wrapper.compression, wrapper.value, wrapper.magic, max_uncompressed)
    inner = [message for _, message in iter_messages(data)]
    consumed = sum(message.size for message in inner)
    if consumed != len(data):
        raise InvalidBatch(
            f"compressed message at offset {wrapper.offset}: {len(data) - consumed} bytes "
            f"after its last inner message",
            corrupt=True,
        )
    if not inner:
        raise InvalidBatch(f"compressed message at offset {wrapper.offset} holds no message")
    for message in inner:
        if message.magic != wrapper.magic:
            raise InvalidBatch(
                f"inner message of magic {message.magic} in a wrapper of magic {wrapper.magic}"
            )
        if message.is_compressed:
            raise InvalidBatch("a compressed message may not hold compressed messages")
    if wrapper.magic == MAGIC_V0:
        return inner
    shift = wrapper.offset - inner[-1].offset
    log_append = wrapper.timestamp_type is TimestampType.LOG_APPEND_TIME
    return [
        m._replace(
            offset=m.offset + shift, timestamp=wrapper.timestamp if log_append else m.timestamp
        )
        for m in inner
    ]


# ------------------------------------------------------------------------------ encode


def write_message(
    out: bytearray,
    offset: int,
    magic: int,
    attributes: int,
    timestamp: int,
    key: Buffer | None,
    value: Buffer | None,
) -> None:
    """Append one message of ``magic`` to ``out``, its size and CRC-32 computed."""
    # the bytes the CRC covers are put together first (one join), then prefixed
    if magic == MAGIC_V0:
        head = _MAGIC_ATTRS.pack(magic, attributes)
    else:
        head = _MAGIC_ATTRS_TS.pack(magic, attributes, timestamp)
    body = b"".join(
        (
            head,
            _NULL if key is None else _INT32.pack(len(key)),
            b"" if key is None else key,
            _NULL if value is None else _INT32.pack(len(value)),
            b"" if value is None else value,
        )
    )
    out += _PREFIX_OUT.pack(offset, len(body) + 4, zlib.crc32(body))
    out += body


class LegacyRecord(NamedTuple):
    """What a message set is written from: an absolute offset, a timestamp (ignored by
    magic 0), key and value."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def write_message_set(
    out: bytearray,
    records: Sequence[LegacyRecord],
    *,
    magic: int,
    compression: int = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int = NO_TIMESTAMP,
) -> None:
    """Append ``records`` to ``out`` as Kafka writes them in ``magic``: one message each
    when uncompressed, else one wrapper holding them all (inner offsets relative for
    magic 1, the wrapper at the last offset). LogAppendTime gives every message
    ``log_append_time``; magic 0 has no timestamps."""
    if not records:
        return
    type_bit = (
        TIMESTAMP_TYPE_MASK
        if magic > MAGIC_V0 and timestamp_type is TimestampType.LOG_APPEND_TIME
        else 0
    )
    log_append = type_bit != 0

    def stamp(record: LegacyRecord) -> int:
        if magic == MAGIC_V0:
            return NO_TIMESTAMP
        return log_append_time if log_append else record.timestamp

    if compression == Compression.NONE:
        for r in records:
            write_message(out, r.offset, magic, type_bit, stamp(r), r.key, r.value)
        return
    base = records[0].offset
    inner = bytearray()
    max_timestamp = NO_TIMESTAMP
    for r in records:
        offset = r.offset - base if magic > MAGIC_V0 else r.offset
        timestamp = stamp(r)
        max_timestamp = max(max_timestamp, timestamp)
        write_message(inner, offset, magic, type_bit, timestamp, r.key, r.value)
    wrapper_timestamp = log_append_time if log_append else max_timestamp
    compressed = legacy_compress(compression, inner, magic)
    write_message(
        out,
        records[-1].offset,
        magic,
        type_bit | compression,
        wrapper_timestamp,
        None,
        compressed,
    )
