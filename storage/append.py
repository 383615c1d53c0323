"""The leader's and follower's append checks, before any byte reaches a segment.

A produce request's records arrive as one or more RecordBatch v2 (bytes the broker
received). The leader:

1. takes the batches validated once where they arrived (structure, CRC-32C, counts,
   client rules: :mod:`protocol.records.validation`), validating them only when given
   bare bytes, and checks each against the topic's max.message.bytes;
2. assigns offsets from the log end by rewriting each batch's base_offset in place and
   stamps the partition leader epoch (both outside the CRC range), and LogAppendTime
   (inside it, so the CRC is recomputed) when the topic asks for it;
3. checks idempotent producers' sequences (:func:`storage.producer_state.check_batch`),
   batch after batch, so two batches of one producer in a request follow each other.

Any failure raises a :class:`RecordError` subclass and nothing is written. A follower
keeps the leader's offsets; it only needs them to continue its log.
"""

from __future__ import annotations

from typing import NamedTuple

from protocol.errors import ErrorCode
from protocol.records.batch import (
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    InvalidBatch,
    TimestampType,
    set_base_offset,
    set_max_timestamp,
    set_partition_leader_epoch,
)
from protocol.records.builder import read_batch
from protocol.records.validation import ValidatedRecords, validate_records
from storage.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    RecordValidationError,
)
from storage.producer_state import BatchMetadata, ProducerStateEntry, check_batch

#: (position in the request's buffer, header) of each batch.
Batches = list[tuple[int, BatchHeader]]
Records = bytes | bytearray | memoryview


class AppendInfo(NamedTuple):
    """What an append did. For a duplicate (an idempotent producer's retry) nothing was
    written and the offsets are the original ones. (A NamedTuple: built on every
    append, and much cheaper to make than a frozen dataclass.)"""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    records_count: int
    valid_bytes: int
    duplicate: bool = False


def byte_view(records: Records) -> memoryview:
    """A flat byte view of ``records``, never a copy: what a follower writes, as the
    leader sent it (its offsets and epochs are already the log's)."""
    view = memoryview(records)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def writable(records: Records) -> memoryview:
    """A writable byte view: offsets are assigned in place (one copy for bytes)."""
    view = memoryview(records)
    if view.readonly:
        view = memoryview(bytearray(view))
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def validated(
    records: Records | ValidatedRecords, where: str, from_client: bool
) -> ValidatedRecords:
    """``records`` as :class:`ValidatedRecords`: taken as they are when a layer above
    validated them (the broker's produce path), else checked here (a follower's fetched
    batches, tools and tests appending bytes). The first bad batch refuses them all."""
    if isinstance(records, ValidatedRecords):
        return records
    try:
        return validate_records(records, from_client=from_client)
    except InvalidBatch as exc:
        cls = CorruptRecordError if exc.corrupt else InvalidRecordError
        raise cls(f"{where}: {exc}") from None


def check_batch_sizes(batches: Batches, max_message_bytes: int, where: str) -> None:
    """The topic's max.message.bytes, batch by batch: the one record rule that is the
    log's own (it is a topic setting), so it is checked here, not where bytes arrive."""
    for _, header in batches:
        if header.size > max_message_bytes:
            raise RecordTooLargeError(
                f"{where}: batch of {header.size} bytes exceeds max.message.bytes "
                f"{max_message_bytes}"
            )


def check_keys(buf: memoryview, batches: Batches, where: str) -> None:
    """A compacted topic keeps the latest value per key, so every record needs a key
    (Kafka's rule for cleanup.policy=compact). Reads the records: runs only for such
    topics. Control batches carry their own keys and are not client input.

    Every keyless record is named (RecordValidationError, KIP-467) by its index in its
    batch, with Kafka's wording, and the message sums them up as Kafka's does: their
    count and the first three."""
    errors: list[tuple[int, str]] = []
    for pos, header in batches:
        if header.is_control:
            continue
        try:
            records = read_batch(buf, pos, check_crc=False)[1]
        except InvalidBatch as exc:
            raise InvalidRecordError(f"{where}: {exc}") from None
        why = f"Compacted topic cannot accept message without key in topic partition {where}."
        errors.extend((index, why) for index, r in enumerate(records) if r.key is None)
    if errors:
        raise RecordValidationError(record_errors_message(errors), errors)


def record_errors_message(errors: list[tuple[int, str]]) -> str:
    """The message of a batch refused for ``errors`` (index, why), in Kafka's words."""
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{why}')" for i, why in errors[:3])
    return (
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]"
    )


def assign_offsets(
    buf: memoryview, batches: Batches, next_offset: int, leader_epoch: int, log_append_time: int
) -> Batches:
    """Rewrite base offsets from ``next_offset`` and the leader epoch in place (and the
    LogAppendTime when it is >= 0); return the headers as they now are."""
    assigned: Batches = []
    for pos, header in batches:
        set_base_offset(buf, pos, next_offset)
        set_partition_leader_epoch(buf, pos, leader_epoch)
        if log_append_time < 0:
            # BatchHeader fields: base_offset, batch_length, partition_leader_epoch, ...
            header = BatchHeader(next_offset, header[1], leader_epoch, *header[3:])
            assigned.append((pos, header))
            next_offset += header.last_offset_delta + 1
            continue
        set_max_timestamp(buf, pos, TimestampType.LOG_APPEND_TIME, log_append_time)
        header = header._replace(
            base_offset=next_offset,
            partition_leader_epoch=leader_epoch,
            max_timestamp=log_append_time,
            attributes=header.attributes | TIMESTAMP_TYPE_MASK,
        )
        assigned.append((pos, header))
        next_offset = header.next_offset
    return assigned


def check_producers(
    assigned: Batches, producers: dict[int, ProducerStateEntry], where: str
) -> BatchMetadata | None:
    """Sequence checks of every idempotent batch; the original batch if the request is
    a retry (a duplicate), else None. Raises OutOfOrderSequenceError or
    InvalidProducerEpochError. ``producers`` is not changed."""
    pending: dict[int, ProducerStateEntry] = {}
    for _, header in assigned:
        if header.producer_id < 0:
            continue
        entry = pending.get(header.producer_id) or producers.get(header.producer_id)
        verdict = check_batch(entry, header)
        if verdict.duplicate is not None:
            return verdict.duplicate
        if verdict.error_code == ErrorCode.INVALID_PRODUCER_EPOCH:
            raise InvalidProducerEpochError(f"{where}: {verdict.message}")
        if verdict.error_code == ErrorCode.INVALID_TXN_STATE:
            raise InvalidTxnStateError(f"{where}: {verdict.message}")
        if verdict.error_code:
            raise OutOfOrderSequenceError(f"{where}: {verdict.message}")
        updated = (
            entry.copy() if entry else ProducerStateEntry(header.producer_id, header.producer_epoch)
        )
        updated.add(header)
        if header.attributes & TRANSACTIONAL_MASK and updated.current_txn_first_offset < 0:
            updated.current_txn_first_offset = header.base_offset
        pending[header.producer_id] = updated
    return None


def check_follower_offsets(batches: Batches, log_end_offset: int, where: str) -> None:
    """A follower's batches must start at or after its log end and go forward."""
    expected = log_end_offset
    for _, header in batches:
        if header.base_offset < expected:
            raise InvalidRecordError(
                f"{where}: follower batch at offset {header.base_offset} is below {expected}"
            )
        expected = header.next_offset
