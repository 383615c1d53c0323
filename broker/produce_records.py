"""What a Produce request (v3+) may carry for one partition: a pure check.

The Produce-specific rules -- exactly one whole batch of magic 2, base offset 0, a codec
the request's version allows -- are checked here; the rules of any received batch (CRC,
record count, the client rules) follow in :func:`protocol.records.validation.check_batch`
on the header read here, so each batch is parsed once and checksummed once. The result,
:class:`ValidatedRecords`, is what the log appends from; the topic's max.message.bytes
is the log's own check.

What is refused, in order, and the error code each answers with (``exc.error_code``):

===================================================  ==================================
records null or empty                                INVALID_RECORD (87)
magic 0 or 1 (legacy message sets), or another       INVALID_RECORD (87)
batch_length below the v2 header                     CORRUPT_MESSAGE (2)
not exactly one whole batch                          INVALID_RECORD (87)
unknown codec id, or zstd below Produce v7           UNSUPPORTED_COMPRESSION_TYPE (76)
base_offset not 0 (clients always write 0)           INVALID_RECORD (87)
then every rule of ``check_batch`` (CRC first)       CORRUPT_MESSAGE / INVALID_RECORD
===================================================  ==================================

A declared length that runs past the bytes sent means there is no whole batch: Kafka
answers that with INVALID_RECORD too, so does this (it is a client's bug, not damage in
flight, and CORRUPT_MESSAGE would invite endless retries). Produce v0-2 are refused by
version before records are looked at; this function applies the v3+ rules to every
version it is given.
"""

from __future__ import annotations

from protocol.records.batch import (
    CURRENT_MAGIC,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    Compression,
    InvalidBatch,
    peek_offset_and_length,
    read_header,
)
from protocol.records.compression import UnsupportedCompression, codec_of
from protocol.records.validation import ValidatedRecords, check_batch

#: The first Produce version whose clients may send zstd (KIP-110).
ZSTD_MIN_PRODUCE_VERSION = 7


def validate_produce_records(
    records: bytes | bytearray | memoryview | None, api_version: int
) -> ValidatedRecords:
    """Check one partition's ``records`` of a Produce request; return them validated.

    Raises :class:`InvalidBatch` (``corrupt`` for damage) or
    :class:`UnsupportedCompression`; see the module's table for which answers what.
    """
    if records is None or len(records) == 0:
        raise InvalidBatch("Produce v3+ needs exactly one record batch per partition, got none")
    available = len(records)
    if available > MAGIC_OFFSET:
        magic = records[MAGIC_OFFSET]
        if magic != CURRENT_MAGIC:
            raise InvalidBatch(f"Produce v3+ needs record batches of magic 2, got magic {magic}")
    if available < LOG_OVERHEAD:
        raise InvalidBatch(f"{available} bytes of records are not a whole record batch")
    _, batch_length = peek_offset_and_length(records)
    if batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise InvalidBatch(f"batch length {batch_length} is below the header size", corrupt=True)
    size = batch_length + LOG_OVERHEAD
    if size > available:
        raise InvalidBatch(f"record batch of {size} bytes but only {available} bytes were sent")
    if size < available:
        raise InvalidBatch(
            f"Produce v3+ needs exactly one record batch per partition: "
            f"{available - size} bytes follow the first batch"
        )
    header = read_header(records)
    codec = codec_of(header.compression)
    if codec is Compression.ZSTD and api_version < ZSTD_MIN_PRODUCE_VERSION:
        raise UnsupportedCompression(
            f"zstd needs Produce v{ZSTD_MIN_PRODUCE_VERSION}+, request is v{api_version}"
        )
    if header.base_offset != 0:
        raise InvalidBatch(f"a produced batch must have base offset 0, not {header.base_offset}")
    check_batch(records, 0, header, from_client=True)
    return ValidatedRecords(records, [(0, header)])
