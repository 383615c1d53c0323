"""RecordBatch v2 (headers, records, compression) and the legacy formats (magic 0/1).

Modules, one concept each:

- :mod:`.batch`       the 61-byte header: read, validate, scan, rewrite in place
- :mod:`.crc`         CRC-32C
- :mod:`.varint`      zigzag varint / varlong
- :mod:`.record`      Record, SimpleRecord and the records section codec
- :mod:`.compression` gzip, snappy, lz4, zstd with a decompression cap
- :mod:`.builder`     BatchBuilder / build_batch, read_batch / read_records
- :mod:`.control`     transaction markers in control batches
- :mod:`.legacy`      magic 0/1 messages: codec, message sets, compressed wrappers
- :mod:`.legacy_compression` wrapper codecs, and magic 0's lz4 header checksum
- :mod:`.conversion`  up-conversion of message sets to v2, down-conversion of v2 batches
- :mod:`.validation`  validate_records: received batches checked once (ValidatedRecords)

Errors are :class:`InvalidBatch` and its subclasses; ``exc.error_code`` is the Kafka
error code to answer with.
"""

from protocol.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    Compression,
    InvalidBatch,
    TimestampType,
    iter_batches,
    peek_magic,
    peek_offset_and_length,
    read_header,
    set_base_offset,
    set_crc,
    set_max_timestamp,
    set_partition_leader_epoch,
    validate,
)
from protocol.records.builder import BatchBuilder, build_batch, read_batch, read_records
from protocol.records.compression import (
    DEFAULT_MAX_UNCOMPRESSED,
    DecompressionBomb,
    UnsupportedCompression,
    compress,
    decompress,
)
from protocol.records.control import (
    ControlMarker,
    ControlType,
    control_record,
    parse_control_record,
)
from protocol.records.crc import crc32c
from protocol.records.legacy import is_legacy, message_format, read_legacy_header
from protocol.records.record import Record, SimpleRecord, decode_records, encode_records
from protocol.records.validation import ValidatedRecords, check_batch, validate_records

__all__ = [
    "DEFAULT_MAX_UNCOMPRESSED",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "BatchBuilder",
    "BatchHeader",
    "Compression",
    "ControlMarker",
    "ControlType",
    "DecompressionBomb",
    "InvalidBatch",
    "Record",
    "SimpleRecord",
    "TimestampType",
    "UnsupportedCompression",
    "ValidatedRecords",
    "build_batch",
    "check_batch",
    "compress",
    "control_record",
    "crc32c",
    "decode_records",
    "decompress",
    "encode_records",
    "is_legacy",
    "iter_batches",
    "message_format",
    "parse_control_record",
    "peek_magic",
    "peek_offset_and_length",
    "read_batch",
    "read_header",
    "read_legacy_header",
    "read_records",
    "set_base_offset",
    "set_crc",
    "set_max_timestamp",
    "set_partition_leader_epoch",
    "validate",
    "validate_records",
]
