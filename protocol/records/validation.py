"""The broker's check of one partition's records in a Produce request: a pure function.

It reads the batch header and checks the CRC; it never decompresses or parses records,
so its cost does not depend on the codec and stays one CRC pass over the bytes.

What is refused, in the order Kafka checks it, and the error code each answers with
(``exc.error_code``):

===================================================  ==================================
records null or empty                                INVALID_RECORD (87)
magic 0 or 1 (legacy message sets), or another       INVALID_RECORD (87)
batch_length below the v2 header                     CORRUPT_MESSAGE (2)
not exactly one whole batch                          INVALID_RECORD (87)
unknown codec id, or zstd below Produce v7           UNSUPPORTED_COMPRESSION_TYPE (76)
base_offset not 0 (clients always write 0)           INVALID_RECORD (87)
batch larger than ``max_batch_size``                 MESSAGE_TOO_LARGE (10)
CRC-32C mismatch                                     CORRUPT_MESSAGE (2)
records_count < 1 or != last_offset_delta + 1        INVALID_RECORD (87)
control batch (only brokers write markers)           INVALID_RECORD (87)
producer id without a sequence, or transactional     INVALID_RECORD (87)
without a producer id
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
    BatchHeader,
    Compression,
    InvalidBatch,
    compute_crc,
    peek_offset_and_length,
    read_header,
)
from protocol.records.compression import UnsupportedCompression, codec_of

#: The first Produce version whose clients may send zstd (KIP-110).
ZSTD_MIN_PRODUCE_VERSION = 7
MESSAGE_TOO_LARGE = 10


class RecordTooLarge(InvalidBatch):
    """A batch above the broker's message.max.bytes: MESSAGE_TOO_LARGE (10)."""

    error_code = MESSAGE_TOO_LARGE


def validate_produce_records(
    records: bytes | bytearray | memoryview | None,
    api_version: int,
    *,
    max_batch_size: int | None = None,
) -> BatchHeader:
    """Check one partition's ``records`` of a Produce request; return the batch header.

    Raises :class:`InvalidBatch` (``corrupt`` for damage), :class:`UnsupportedCompression`
    or :class:`RecordTooLarge`; see the module's table for which answers what.
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
    _check_header(header, max_batch_size)
    actual = compute_crc(records, 0, size)
    if actual != header.crc:
        raise InvalidBatch(
            f"CRC mismatch: stored {header.crc:#010x}, computed {actual:#010x}", corrupt=True
        )
    _check_counts_and_producer(header)
    return header


def _check_header(header: BatchHeader, max_batch_size: int | None) -> None:
    if header.base_offset != 0:
        raise InvalidBatch(f"a produced batch must have base offset 0, not {header.base_offset}")
    if max_batch_size is not None and header.size > max_batch_size:
        raise RecordTooLarge(f"batch of {header.size} bytes exceeds the limit of {max_batch_size}")


def _check_counts_and_producer(header: BatchHeader) -> None:
    if header.records_count < 1:
        raise InvalidBatch(f"invalid record count {header.records_count}")
    if header.records_count != header.last_offset_delta + 1:
        raise InvalidBatch(
            f"record count {header.records_count} disagrees with the offset range "
            f"(last offset delta {header.last_offset_delta})"
        )
    if header.is_control:
        raise InvalidBatch("clients may not write control batches")
    if header.has_producer_id and header.base_sequence < 0:
        raise InvalidBatch(f"producer id {header.producer_id} with invalid sequence")
    if header.is_transactional and not header.has_producer_id:
        raise InvalidBatch("a transactional batch needs a producer id")
