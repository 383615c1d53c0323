"""Recognition of the legacy message formats (magic 0 and 1), which minikafka refuses.

Before RecordBatch v2, a message set was a sequence of messages, each::

     0  offset        int64
     8  message_size  int32    bytes after this field
    12  crc           uint32   CRC-32 (zlib's, not Castagnoli) of bytes 16 .. end
    16  magic         int8     0 or 1
    17  attributes    int8     bits 0-2 codec, bit 3 timestamp type (magic 1)
    18  timestamp     int64    magic 1 only
        key           int32 length (-1 null) + bytes
        value         int32 length (-1 null) + bytes; a compressed message's value
                      is itself a compressed message set

The first 12 bytes have the same shape as a v2 batch's, and the magic sits at byte 16
in every format, so 17 bytes are enough to tell the formats apart. Only enough is parsed
here to recognise and describe such messages (for error messages and dump tools).
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from protocol.records.batch import LOG_OVERHEAD, MAGIC_OFFSET, InvalidBatch

MAGIC_V0 = 0
MAGIC_V1 = 1
#: crc + magic + attributes + key length + value length.
MESSAGE_OVERHEAD_V0 = 14
#: ... + timestamp.
MESSAGE_OVERHEAD_V1 = 22

_V0 = struct.Struct(">qiIbb")
_TIMESTAMP = struct.Struct(">q")


class LegacyMessageHeader(NamedTuple):
    offset: int
    message_size: int
    crc: int
    magic: int
    attributes: int
    #: None for magic 0, which has no timestamp.
    timestamp: int | None

    @property
    def size(self) -> int:
        return self.message_size + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & 0x07


def message_format(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """The magic (0, 1 or 2) of the message or batch at ``pos``; needs 17 bytes."""
    if len(buf) - pos <= MAGIC_OFFSET:
        raise InvalidBatch(
            f"{len(buf) - pos} bytes are too few to hold a message's magic", corrupt=True
        )
    return int(buf[pos + MAGIC_OFFSET])


def is_legacy(buf: bytes | bytearray | memoryview, pos: int = 0) -> bool:
    """True when the bytes at ``pos`` start a magic 0 or 1 message."""
    return message_format(buf, pos) in (MAGIC_V0, MAGIC_V1)


def read_legacy_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> LegacyMessageHeader:
    """Parse and check a legacy message's fixed fields and its CRC-32."""
    if len(buf) - pos < LOG_OVERHEAD + MESSAGE_OVERHEAD_V0:
        raise InvalidBatch("legacy message truncated", corrupt=True)
    offset, size, crc, magic, attributes = _V0.unpack_from(buf, pos)
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise InvalidBatch(f"magic {magic} is not a legacy message format")
    overhead = MESSAGE_OVERHEAD_V0 if magic == MAGIC_V0 else MESSAGE_OVERHEAD_V1
    if size < overhead or pos + LOG_OVERHEAD + size > len(buf):
        raise InvalidBatch(f"legacy message size {size} is impossible here", corrupt=True)
    timestamp = None
    if magic == MAGIC_V1:
        (timestamp,) = _TIMESTAMP.unpack_from(buf, pos + _V0.size)
    body = memoryview(buf)[pos + MAGIC_OFFSET : pos + LOG_OVERHEAD + size]
    if zlib.crc32(body) != crc:
        raise InvalidBatch("legacy message CRC mismatch", corrupt=True)
    return LegacyMessageHeader(offset, size, crc, magic, attributes, timestamp)
