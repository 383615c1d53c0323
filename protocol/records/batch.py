"""RecordBatch v2 headers: read, validate and rewrite them without touching the records.

On the broker's hot path a batch is opaque bytes. Only its 61-byte header is parsed; the
broker assigns offsets by rewriting ``base_offset`` and stamps ``partition_leader_epoch``
in place. Both fields lie before the CRC range, so the CRC stays valid.

Layout (big-endian), offsets in bytes from the start of the batch::

     0  base_offset             int64
     8  batch_length            int32   bytes after this field (total size - 12)
    12  partition_leader_epoch  int32
    16  magic                   int8    2
    17  crc                     uint32  CRC-32C of bytes 21 .. end
    21  attributes              int16   bits 0-2 codec, 3 timestamp type, 4 transactional,
                                        5 control
    23  last_offset_delta       int32
    27  base_timestamp          int64
    35  max_timestamp           int64
    43  producer_id             int64
    51  producer_epoch          int16
    53  base_sequence           int32
    57  records_count           int32
    61  records ...

Magic 0 and 1 message sets share the first 17 bytes' shape (offset int64, size int32,
then crc uint32 at 12 and magic int8 at 16), so the magic byte at position 16 tells the
formats apart before anything else is read.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator
from typing import NamedTuple, NoReturn

from protocol.records.crc import crc32c

HEADER_SIZE = 61
#: base_offset + batch_length: the bytes not counted by batch_length.
LOG_OVERHEAD = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
PARTITION_LEADER_EPOCH_OFFSET = 12
CURRENT_MAGIC = 2

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
#: The layout above as a struct (fields in BatchHeader order), for writers.
HEADER_STRUCT = _HEADER
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


class Compression(enum.IntEnum):
    """The codec in attribute bits 0-2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # 0: CreateTime, 1: LogAppendTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40


class BatchHeader(NamedTuple):
    """The parsed 61-byte header of one RecordBatch v2."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record, wrapping at 2**31 as Kafka's producers do."""
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)


class TimestampType(enum.IntEnum):
    """Attribute bit 3: who set the timestamps."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


#: Kafka error codes the exceptions below map to (facts of the protocol; the full table
#: lives in protocol.errors, which this package does not import).
CORRUPT_MESSAGE = 2
INVALID_RECORD = 87


class InvalidBatch(ValueError):
    """A batch whose structure or checksum is wrong. ``corrupt`` means a CRC mismatch or
    a size that cannot be, answered with CORRUPT_MESSAGE; otherwise INVALID_RECORD.
    ``error_code`` gives that code (subclasses may answer another one)."""

    def __init__(self, message: str, *, corrupt: bool = False) -> None:
        super().__init__(message)
        self.corrupt = corrupt

    @property
    def error_code(self) -> int:
        return CORRUPT_MESSAGE if self.corrupt else INVALID_RECORD


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the v2 header at ``pos``. The caller ensures 61 bytes are there and that
    the magic is 2 (see :func:`peek_magic`)."""
    return BatchHeader._make(_HEADER.unpack_from(buf, pos))


def peek_offset_and_length(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """(base_offset, batch_length) of the batch or legacy message at ``pos``: the 12
    bytes every message format starts with. Needs only 12 bytes."""
    base_offset, length = _OFFSET_AND_LENGTH.unpack_from(buf, pos)
    return int(base_offset), int(length)


def peek_magic(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """The magic byte of the batch or legacy message at ``pos`` (needs 17 bytes)."""
    return int(buf[pos + MAGIC_OFFSET])


def compute_crc(buf: bytes | bytearray | memoryview, pos: int, size: int) -> int:
    """CRC-32C over the batch's CRC range: bytes 21 .. size of the batch at ``pos``."""
    view = memoryview(buf)[pos + ATTRIBUTES_OFFSET : pos + size]
    return crc32c(view)


def validate(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    end: int | None = None,
    *,
    check_crc: bool = True,
) -> BatchHeader:
    """Check one v2 batch at ``pos`` by its framing (:func:`read_whole_header`) and CRC
    (skipped when ``check_crc`` is false); return its header. Raises
    :class:`InvalidBatch`. Never decompresses or parses the records. (For a batch
    received from a client or a replica, :mod:`protocol.records.validation` has the
    full rules.)"""
    header = read_whole_header(buf, pos, end)
    if check_crc:
        check_crc32c(buf, pos, header)
    return header


def read_whole_header(
    buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None
) -> BatchHeader:
    """The header of the v2 batch at ``pos``, checked to lie whole before ``end``: 61
    header bytes present, magic 2, batch_length covering the header and not running
    past ``end``, last_offset_delta and records_count non-negative."""
    limit = len(buf) if end is None else end
    if limit - pos < HEADER_SIZE:
        raise InvalidBatch(f"batch header truncated: {limit - pos} bytes", corrupt=True)
    magic = peek_magic(buf, pos)
    if magic != CURRENT_MAGIC:
        raise InvalidBatch(f"magic {magic} is not supported, only magic 2")
    header = read_header(buf, pos)
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise InvalidBatch(
            f"batch length {header.batch_length} is below the header size", corrupt=True
        )
    if pos + header.size > limit:
        raise InvalidBatch(
            f"batch of {header.size} bytes runs past the end ({limit - pos} bytes left)",
            corrupt=True,
        )
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise InvalidBatch("negative last offset delta or record count")
    return header


def check_crc32c(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> None:
    """The stored CRC-32C of the batch at ``pos`` against one computed over its range."""
    actual = compute_crc(buf, pos, header.size)
    if actual != header.crc:
        raise InvalidBatch(
            f"CRC mismatch: stored {header.crc:#010x}, computed {actual:#010x}", corrupt=True
        )


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Rewrite base_offset in place (outside the CRC range)."""
    _INT64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Rewrite partition_leader_epoch in place (outside the CRC range)."""
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_crc(buf: bytearray | memoryview, pos: int, size: int) -> None:
    """Recompute and store the CRC, after a change inside the CRC range (for example
    stamping LogAppendTime into max_timestamp)."""
    _UINT32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos, size))


def set_max_timestamp(
    buf: bytearray | memoryview, pos: int, timestamp_type: TimestampType, timestamp: int
) -> None:
    """Set the timestamp type bit and max_timestamp, then recompute the CRC (both lie
    inside its range). The broker does this to stamp LogAppendTime: readers then take
    max_timestamp as every record's timestamp, so the records stay untouched."""
    (attributes,) = _INT16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    else:
        attributes &= ~TIMESTAMP_TYPE_MASK
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp)
    (batch_length,) = _INT32.unpack_from(buf, pos + 8)
    set_crc(buf, pos, batch_length + LOG_OVERHEAD)


def iter_batches(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    end: int | None = None,
    *,
    allow_partial: bool = True,
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each v2 batch in ``buf[pos:end]``.

    Headers only: neither the CRC nor the records are looked at (use :func:`validate`
    for that), so the cost per batch is one struct unpack whatever the batch's size.

    A trailing batch cut short (fewer bytes left than its header or its length claims,
    as at the end of a fetch response or of a torn segment) ends the iteration quietly,
    or raises a corrupt :class:`InvalidBatch` when ``allow_partial`` is false; the caller
    can tell where the whole batches end from the last position and size yielded.
    Raises :class:`InvalidBatch` for a magic other than 2 (legacy message sets) and a
    corrupt one for a batch_length too small to hold a v2 header.
    """
    limit = len(buf) if end is None else end
    unpack = _HEADER.unpack_from
    make = BatchHeader._make
    min_length = HEADER_SIZE - LOG_OVERHEAD
    while pos < limit:
        left = limit - pos
        if left < HEADER_SIZE:
            if left > MAGIC_OFFSET and buf[pos + MAGIC_OFFSET] != CURRENT_MAGIC:
                _refuse_magic(buf[pos + MAGIC_OFFSET], pos)
            break
        fields = unpack(buf, pos)
        if fields[3] != CURRENT_MAGIC:  # a legacy message unpacks too: its magic is at 16
            _refuse_magic(fields[3], pos)
        batch_length = fields[1]
        if batch_length < min_length:
            raise InvalidBatch(
                f"batch length {batch_length} at position {pos} is below the header size",
                corrupt=True,
            )
        size = batch_length + LOG_OVERHEAD
        if size > left:
            break
        yield pos, make(fields)
        pos += size
    if pos < limit and not allow_partial:
        raise InvalidBatch(
            f"{limit - pos} bytes at position {pos} are not a whole batch", corrupt=True
        )


def _refuse_magic(magic: int, pos: int) -> NoReturn:
    raise InvalidBatch(f"magic {magic} at position {pos}: only magic 2 is supported")
