"""Records inside a RecordBatch v2: the type, and the codec of the records section.

The records section follows the 61-byte batch header (compressed as a whole when the
batch's codec is not NONE). It holds ``records_count`` records back to back, each::

    length           varint    bytes of the record after this field
    attributes       int8      unused, 0
    timestamp_delta  varlong   record timestamp - batch base_timestamp
    offset_delta     varint    record offset - batch base_offset
    key_length       varint    -1 for a null key
    key              bytes
    value_length     varint    -1 for a null value
    value            bytes
    header_count     varint
    headers          header_count times:
        key_length   varint    header keys are never null
        key          UTF-8
        value_length varint    -1 for a null value
        value        bytes

(varint/varlong: zigzag, see :mod:`protocol.records.varint`.) The smallest record is 7
bytes (length, attributes, timestamp, offset, key, value, header count: one byte each),
which bounds how many records a section of a given size can hold: a count above that is
refused before anything is allocated for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from protocol.records.batch import (
    NO_TIMESTAMP,
    BatchHeader,
    InvalidBatch,
)
from protocol.records.varint import (
    read_varint,
    read_varlong,
    write_varint,
    write_varlong,
)

Header = tuple[str, bytes | None]

#: length + attributes + timestamp + offset + key + value + header count, one byte each.
MIN_RECORD_SIZE = 7
#: key length + value length, one byte each (an empty key, a null value).
MIN_HEADER_SIZE = 2


class Record(NamedTuple):
    """One record as stored in a batch: offset and timestamp relative to the batch."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]
    #: The record's own attribute byte; no bit is defined yet, always 0 when written.
    attributes: int = 0

    def offset(self, header: BatchHeader) -> int:
        """Absolute offset of this record in the batch described by ``header``."""
        return header.base_offset + self.offset_delta

    def timestamp(self, header: BatchHeader) -> int:
        """The record's timestamp as readers see it: with LogAppendTime every record of
        the batch carries the batch's max_timestamp (set by the broker)."""
        if header.is_log_append_time:
            return header.max_timestamp
        return header.base_timestamp + self.timestamp_delta


class SimpleRecord(NamedTuple):
    """A record to be written: absolute timestamp, offsets assigned by the builder."""

    key: bytes | None
    value: bytes | None
    headers: Sequence[Header] = ()
    timestamp: int = NO_TIMESTAMP


def encode_record(out: bytearray, record: Record) -> None:
    """Append one record, length-prefixed, to ``out``."""
    body = bytearray()
    body.append(record.attributes & 0xFF)
    write_varlong(body, record.timestamp_delta)
    write_varint(body, record.offset_delta)
    _write_bytes(body, record.key)
    _write_bytes(body, record.value)
    write_varint(body, len(record.headers))
    for name, value in record.headers:
        _write_bytes(body, name.encode("utf-8"))
        _write_bytes(body, value)
    write_varint(out, len(body))
    out += body


def encode_records(records: Iterable[Record]) -> bytearray:
    """The (uncompressed) records section for ``records``."""
    out = bytearray()
    for record in records:
        encode_record(out, record)
    return out


def _write_bytes(out: bytearray, data: bytes | bytearray | memoryview | None) -> None:
    if data is None:
        out.append(1)  # zigzag(-1)
        return
    write_varint(out, len(data))
    out += data


def decode_records(section: bytes, count: int) -> list[Record]:
    """Parse exactly ``count`` records that fill ``section`` exactly.

    Raises :class:`InvalidBatch` (corrupt) on any truncation, overlong varint, a record
    whose fields do not fill its declared length, or bytes left after the last record.
    """
    end = len(section)
    if count < 0 or count > end // MIN_RECORD_SIZE:
        raise InvalidBatch(
            f"{count} records cannot fit in a records section of {end} bytes", corrupt=True
        )
    records: list[Record] = []
    append = records.append
    pos = 0
    for _ in range(count):
        length, pos = read_varint(section, pos)
        record_end = pos + length
        if length < MIN_RECORD_SIZE - 1 or record_end > end:
            raise InvalidBatch(f"record length {length} is impossible here", corrupt=True)
        record, pos = _decode_record_body(section, pos, record_end)
        if pos != record_end:
            raise InvalidBatch(
                f"record fields end at {pos}, its length says {record_end}", corrupt=True
            )
        append(record)
    if pos != end:
        raise InvalidBatch(
            f"{end - pos} bytes left after the batch's {count} records", corrupt=True
        )
    return records


def _decode_record_body(buf: bytes, pos: int, end: int) -> tuple[Record, int]:
    """Fields of one record from ``pos``; ``end`` is where its declared length ends."""
    attributes = buf[pos]
    timestamp_delta, pos = read_varlong(buf, pos + 1)
    offset_delta, pos = read_varint(buf, pos)
    key, pos = _read_bytes(buf, pos, end)
    value, pos = _read_bytes(buf, pos, end)
    header_count, pos = read_varint(buf, pos)
    if header_count < 0 or header_count > (end - pos) // MIN_HEADER_SIZE:
        raise InvalidBatch(f"header count {header_count} is impossible here", corrupt=True)
    headers: list[Header] = []
    for _ in range(header_count):
        name, pos = _read_bytes(buf, pos, end)
        if name is None:
            raise InvalidBatch("record header with a null key", corrupt=True)
        try:
            text = name.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidBatch(f"record header key is not UTF-8: {exc}") from None
        header_value, pos = _read_bytes(buf, pos, end)
        headers.append((text, header_value))
    return Record(offset_delta, timestamp_delta, key, value, headers, attributes), pos


def _read_bytes(buf: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length < 0:
        if length != -1:
            raise InvalidBatch(f"negative length {length}", corrupt=True)
        return None, pos
    stop = pos + length
    if stop > end:
        raise InvalidBatch(f"field of {length} bytes runs past its record", corrupt=True)
    return buf[pos:stop], stop
