"""The one check of received record batches: each v2 header parsed once, CRC-32C once.

:func:`validate_records` checks every batch of a buffer and returns
:class:`ValidatedRecords`: the bytes with each batch's position and parsed header. That
value is what the layers after it take (the log assigns offsets and checks producer
sequences from the headers), so nothing downstream parses or checksums a batch again.
It never decompresses or parses records: the cost is one CRC pass over the bytes.

The rules, in the order they are checked for each batch (``exc.error_code`` answers):

============================================================  =========================
fewer than 61 header bytes left                               CORRUPT_MESSAGE (2)
magic other than 2 (legacy message sets)                      INVALID_RECORD (87)
batch_length below the header, or running past the buffer    CORRUPT_MESSAGE (2)
last_offset_delta or records_count negative                   INVALID_RECORD (87)
CRC-32C mismatch                                              CORRUPT_MESSAGE (2)
from a client: records_count < 1 or != last_offset_delta + 1  INVALID_RECORD (87)
from a client: a control batch (only brokers write markers)   INVALID_RECORD (87)
from a client: producer id without a sequence, or             INVALID_RECORD (87)
transactional without a producer id
============================================================  =========================

A replica's batches (``from_client=False``: a follower appending what its leader sent)
get the checks Kafka's follower makes, framing and CRC: the count rule is a client's,
since compaction leaves batches with fewer records than their offset range (even none,
to keep a producer's last sequence), and a follower copies them as they are. A
follower's fetched records go through :func:`validate_fetched_records`, which also
leaves out a batch the leader cut short at the end.

A request's own framing rules (how many batches, which base offset, which codec for
which API version) belong to the request's handler, which parses the header itself and
hands it to :func:`check_batch` for the rest.
"""

from __future__ import annotations

from typing import NamedTuple

from protocol.records.batch import (
    LOG_OVERHEAD,
    BatchHeader,
    InvalidBatch,
    check_crc32c,
    peek_offset_and_length,
    read_whole_header,
)

Buffer = bytes | bytearray | memoryview


class ValidatedRecords(NamedTuple):
    """Record bytes every batch of which passed :func:`validate_records` (or a request
    handler's equivalent ending in :func:`check_batch`), with ``(position, header)`` of
    each batch in order: the proof the log appends from without checking again."""

    buffer: Buffer
    batches: list[tuple[int, BatchHeader]]


def validate_records(records: Buffer, *, from_client: bool) -> ValidatedRecords:
    """Check every batch of ``records`` (see the module's table); the first bad one
    raises :class:`InvalidBatch`. ``from_client`` adds the rules for what only a client
    sends (a replica's batches may be control batches). No batch at all is invalid."""
    batches: list[tuple[int, BatchHeader]] = []
    pos, end = 0, len(records)
    while pos < end:
        header = read_whole_header(records, pos, end)
        check_batch(records, pos, header, from_client=from_client)
        batches.append((pos, header))
        pos += header.size
    if not batches:
        raise InvalidBatch("no record batch")
    return ValidatedRecords(records, batches)


def validate_fetched_records(records: Buffer) -> ValidatedRecords | None:
    """A follower's fetched records: the whole batches at the front, each checked as
    :func:`validate_records` checks a replica's; None when not one batch is whole.

    A leader may end a partition's records with part of a batch that did not fit the
    response (Kafka's leaders do; the rest comes with the next fetch), so a batch that
    runs past the end is left out here rather than refused, as Kafka's follower reads
    them. The returned buffer is the whole batches only."""
    batches: list[tuple[int, BatchHeader]] = []
    pos, end = 0, len(records)
    while end - pos >= LOG_OVERHEAD:
        _, length = peek_offset_and_length(records, pos)
        if length < 0 or end - pos - LOG_OVERHEAD < length:
            break
        header = read_whole_header(records, pos, end)
        check_crc32c(records, pos, header)
        batches.append((pos, header))
        pos += LOG_OVERHEAD + length
    if not batches:
        return None
    return ValidatedRecords(records if pos == end else records[:pos], batches)


def check_batch(buf: Buffer, pos: int, header: BatchHeader, *, from_client: bool) -> None:
    """The checks after the header's framing: CRC-32C, and for a client's batch the
    record count, control and producer rules. ``header`` is the one read at ``pos``."""
    check_crc32c(buf, pos, header)
    if from_client:
        _check_client_batch(header)


def _check_client_batch(header: BatchHeader) -> None:
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
