"""What a Produce request may carry for one partition: a pure check, made once.

The Produce handler checks each partition's records here as it reads the request
(:func:`check_produce_records`), with the request's API version: the one rule that
depends on it (zstd only from Produce v7, KIP-110) is a rule of the wire request, so it
is checked where the request is, and the layers below never see a version. The header
read here serves the handler's request-wide transactional gate and every check after
it, and travels on with the records, so each batch header is parsed once and each batch
checksummed once on its way to the log.

The Produce-specific rules -- exactly one whole batch of magic 2, base offset 0, a codec
the request's version allows -- are checked here; the rules of any received batch (CRC,
record count, the client rules) follow in :func:`protocol.records.validation.check_batch`
on the same header. Accepted records come back as :class:`ValidatedRecords`, which the
log appends from; the topic's max.message.bytes is the log's own check. Refused records
come back as :class:`RefusedRecords`, carrying the error: the partition raises it only
after its role and ISR checks, so a partition led elsewhere still answers
NOT_LEADER_OR_FOLLOWER whatever its bytes are.

What is refused, in order, and the error code each answers with (``error.error_code``):

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
flight, and CORRUPT_MESSAGE would invite endless retries).

Produce v0-2 carry message sets of magic 0 or 1 (:func:`check_old_produce_records`):
Kafka checks no framing rule there, converts the set to one v2 batch (the rules and
their answers are :func:`protocol.records.conversion.up_convert`'s) and appends that. A
v2 batch in such a request (Kafka accepts one there too) gets the rules above.

Refused records still say whether their header, when one could be read (61 bytes or
more, magic 2), has the transactional bit: the handler refuses a request with any
transactional batch whole, before anything else, whatever else is wrong with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.records.batch import (
    CURRENT_MAGIC,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    BatchHeader,
    Compression,
    InvalidBatch,
    peek_offset_and_length,
    read_header,
)
from protocol.records.compression import UnsupportedCompression, codec_of
from protocol.records.conversion import up_convert
from protocol.records.validation import ValidatedRecords, check_batch

#: The first Produce version whose clients may send zstd (KIP-110).
ZSTD_MIN_PRODUCE_VERSION = 7
#: The first Produce version that carries only RecordBatch v2 (below: magic 0/1 sets).
V2_ONLY_PRODUCE_VERSION = 3


@dataclass(frozen=True, slots=True)
class RefusedRecords:
    """One partition's records the Produce rules refused: ``error`` (its ``error_code``
    is the partition's answer), ``size`` the bytes sent (counted as rejected), and
    whether a readable header had the transactional bit."""

    error: InvalidBatch
    size: int
    transactional: bool


#: One partition's records as the handler checked them.
ProducedRecords = ValidatedRecords | RefusedRecords


def check_produce_records(
    records: bytes | bytearray | memoryview | None, api_version: int
) -> ProducedRecords:
    """Check one partition's ``records`` of a Produce request at ``api_version``; see
    the module's table for which refusal answers what."""
    header: BatchHeader | None = None
    try:
        if records is None or len(records) == 0:
            raise InvalidBatch("Produce v3+ needs exactly one record batch per partition, got none")
        available = len(records)
        if available > MAGIC_OFFSET:
            magic = records[MAGIC_OFFSET]
            if magic != CURRENT_MAGIC:
                raise InvalidBatch(
                    f"Produce v3+ needs record batches of magic 2, got magic {magic}"
                )
            if available >= HEADER_SIZE:
                header = read_header(records)
        if available < LOG_OVERHEAD:
            raise InvalidBatch(f"{available} bytes of records are not a whole record batch")
        _, batch_length = peek_offset_and_length(records)
        if batch_length < HEADER_SIZE - LOG_OVERHEAD:
            raise InvalidBatch(
                f"batch length {batch_length} is below the header size", corrupt=True
            )
        size = batch_length + LOG_OVERHEAD
        if size > available:
            raise InvalidBatch(f"record batch of {size} bytes but only {available} bytes were sent")
        if size < available:
            raise InvalidBatch(
                f"Produce v3+ needs exactly one record batch per partition: "
                f"{available - size} bytes follow the first batch"
            )
        assert header is not None  # a whole batch is at least a header (checked above)
        codec = codec_of(header.compression)
        if codec is Compression.ZSTD and api_version < ZSTD_MIN_PRODUCE_VERSION:
            raise UnsupportedCompression(
                f"zstd needs Produce v{ZSTD_MIN_PRODUCE_VERSION}+, request is v{api_version}"
            )
        if header.base_offset != 0:
            raise InvalidBatch(
                f"a produced batch must have base offset 0, not {header.base_offset}"
            )
        check_batch(records, 0, header, from_client=True)
    except InvalidBatch as exc:
        transactional = header is not None and header.is_transactional
        return RefusedRecords(exc, len(records) if records is not None else 0, transactional)
    return ValidatedRecords(records, [(0, header)])


@dataclass(frozen=True, slots=True)
class ConvertedRecords:
    """A Produce v0-2 partition's records as the log takes them: ``records`` (refused,
    or one v2 batch), with how many messages were converted from magic 0/1 (0 when the
    request carried a v2 batch or was refused)."""

    records: ProducedRecords
    converted: int


def check_old_produce_records(
    records: bytes | bytearray | memoryview | None, api_version: int
) -> ConvertedRecords:
    """One partition of a Produce v0-2: a magic 0/1 message set up-converted to one v2
    batch, or a v2 batch checked as :func:`check_produce_records` checks it."""
    if records is None or len(records) <= MAGIC_OFFSET or records[MAGIC_OFFSET] > 1:
        return ConvertedRecords(check_produce_records(records, api_version), 0)
    try:
        converted = up_convert(records)
    except InvalidBatch as exc:
        return ConvertedRecords(RefusedRecords(exc, len(records), False), 0)
    batch = ValidatedRecords(converted.batch, [(0, converted.header)])
    return ConvertedRecords(batch, converted.records)
