"""Writing RecordBatch v2 (BatchBuilder, build_batch) and reading its records back.

The broker never needs either on its produce and fetch paths (batches stay opaque bytes
there); they serve the group coordinator's own log writes, dump tools, tests and
benchmarks.

Writing follows what Kafka's producers do: offset deltas count up from 0, base_timestamp
is the first record's timestamp (deltas may be negative), max_timestamp the largest, and
the records section is compressed whole with the batch's codec, even when that does not
make it smaller (so the codec asked for is the codec written).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from protocol.records.batch import (
    CONTROL_MASK,
    CURRENT_MAGIC,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    Compression,
    TimestampType,
    set_crc,
    validate,
)
from protocol.records.compression import (
    DEFAULT_MAX_UNCOMPRESSED,
    codec_of,
    compress,
    decompress,
)
from protocol.records.record import Header, Record, SimpleRecord, decode_records, encode_record
from protocol.records.varint import INT32_MAX

Buffer = bytes | bytearray | memoryview


class BatchBuilder:
    """Accumulates records and writes them as one RecordBatch v2.

    Not safe across tasks: one builder belongs to one writer. ``build`` may be called
    more than once; each call writes the batch afresh.
    """

    def __init__(
        self,
        *,
        compression: Compression = Compression.NONE,
        base_offset: int = 0,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        is_transactional: bool = False,
        is_control: bool = False,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        log_append_time: int | None = None,
        compression_level: int | None = None,
    ) -> None:
        if timestamp_type is TimestampType.LOG_APPEND_TIME and log_append_time is None:
            raise ValueError("LogAppendTime batches need log_append_time")
        self._compression = codec_of(compression)
        self._compression_level = compression_level
        self._base_offset = base_offset
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._partition_leader_epoch = partition_leader_epoch
        self._is_transactional = is_transactional
        self._is_control = is_control
        self._timestamp_type = timestamp_type
        self._log_append_time = log_append_time
        self._section = bytearray()
        self._count = 0
        self._last_offset_delta = -1
        self._base_timestamp = NO_TIMESTAMP
        self._max_timestamp = NO_TIMESTAMP

    def __len__(self) -> int:
        return self._count

    @property
    def uncompressed_size(self) -> int:
        """Bytes of the batch so far, before compression (header included)."""
        return HEADER_SIZE + len(self._section)

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
        *,
        offset_delta: int | None = None,
    ) -> int:
        """Add a record; return its offset delta (the next one unless given, and then it
        must exceed the previous one: offsets only grow within a batch)."""
        if offset_delta is None:
            offset_delta = self._last_offset_delta + 1
        elif offset_delta <= self._last_offset_delta:
            raise ValueError(
                f"offset delta {offset_delta} does not follow {self._last_offset_delta}"
            )
        if offset_delta > INT32_MAX:
            raise ValueError(f"offset delta {offset_delta} does not fit an int32")
        if self._log_append_time is not None:
            timestamp = self._log_append_time
        if self._count == 0:
            self._base_timestamp = timestamp
            self._max_timestamp = timestamp
        elif timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        record = Record(offset_delta, timestamp - self._base_timestamp, key, value, list(headers))
        encode_record(self._section, record)
        self._count += 1
        self._last_offset_delta = offset_delta
        return offset_delta

    def append_record(self, record: SimpleRecord) -> int:
        return self.append(record.timestamp, record.key, record.value, record.headers)

    def build(self) -> bytearray:
        """The whole batch, CRC included. An empty builder writes an empty batch
        (records_count 0, timestamps -1), as compaction leaves behind."""
        attributes = int(self._compression)
        if self._timestamp_type is TimestampType.LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_MASK
        if self._is_transactional:
            attributes |= TRANSACTIONAL_MASK
        if self._is_control:
            attributes |= CONTROL_MASK
        if self._compression is Compression.NONE:
            section: Buffer = self._section
        else:
            section = compress(self._compression, self._section, self._compression_level)
        return pack_batch(
            BatchHeader(
                self._base_offset,
                0,  # batch_length: pack_batch measures it
                self._partition_leader_epoch,
                CURRENT_MAGIC,
                0,  # the CRC: pack_batch computes it
                attributes,
                max(self._last_offset_delta, 0),
                self._base_timestamp,
                self._max_timestamp,
                self._producer_id,
                self._producer_epoch,
                self._base_sequence,
                self._count,
            ),
            section,
        )


def pack_batch(header: BatchHeader, section: Buffer) -> bytearray:
    """A whole batch from ``header`` and a records section already compressed with the
    header's codec: batch_length and the CRC are computed, the other fields written as
    given (the log cleaner rewrites batches this way, keeping base offset, last offset
    delta, timestamps and producer fields of the original)."""
    out = bytearray(HEADER_SIZE)
    out += section
    HEADER_STRUCT.pack_into(out, 0, *header._replace(batch_length=len(out) - LOG_OVERHEAD, crc=0))
    set_crc(out, 0, len(out))
    return out


def build_batch(
    records: Iterable[SimpleRecord],
    *,
    compression: Compression = Compression.NONE,
    base_offset: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
    is_control: bool = False,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
    compression_level: int | None = None,
) -> bytearray:
    """One complete RecordBatch v2 holding ``records`` (offset deltas 0, 1, ...;
    base/max timestamps from the records, or ``log_append_time`` for LogAppendTime)."""
    builder = BatchBuilder(
        compression=compression,
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=is_transactional,
        is_control=is_control,
        timestamp_type=timestamp_type,
        log_append_time=log_append_time,
        compression_level=compression_level,
    )
    for record in records:
        builder.append(record.timestamp, record.key, record.value, record.headers)
    return builder.build()


def read_batch(
    buf: Buffer,
    pos: int = 0,
    *,
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
    check_crc: bool = True,
) -> tuple[BatchHeader, list[Record]]:
    """Validate the batch at ``pos`` (CRC included unless ``check_crc`` is false),
    decompress its records section (at most ``max_uncompressed`` bytes) and parse its
    records. Raises :class:`~protocol.records.batch.InvalidBatch` or a subclass."""
    header = validate(buf, pos, check_crc=check_crc)
    view = memoryview(buf)[pos + HEADER_SIZE : pos + header.size]
    section = decompress(header.compression, view, max_uncompressed)
    return header, decode_records(section, header.records_count)


def read_records(batch: Buffer, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> list[Record]:
    """The records of the one batch at the start of ``batch``."""
    return read_batch(batch, max_uncompressed=max_uncompressed)[1]
