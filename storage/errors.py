"""Errors raised by the storage engine.

Two families, because the broker answers them differently:

* :class:`StorageError` -- the disk failed us (full, read-only, I/O error, a write that
  could not be completed). The broker answers KAFKA_STORAGE_ERROR for the partition.
  Whatever a failed append had written is truncated away before this is raised.
* :class:`RecordError` subclasses -- the input is wrong (a corrupt or invalid batch, a
  sequence gap, a fenced producer epoch, an offset out of range). Each carries the Kafka
  error code (a ``protocol.errors.ErrorCode``) the broker should answer with. The log is
  unchanged when one is raised.
"""

from __future__ import annotations

from protocol.errors import ErrorCode


class StorageError(OSError):
    """A disk operation failed; the partition answers KAFKA_STORAGE_ERROR."""

    error_code: int = ErrorCode.KAFKA_STORAGE_ERROR


class InconsistentMetadataError(StorageError):
    """meta.properties files (or the configuration) disagree: the broker must not start."""


class RecordError(ValueError):
    """Refused input. ``error_code`` is the Kafka error code to answer with."""

    error_code: int = ErrorCode.INVALID_RECORD

    def __init__(self, message: str, error_code: int | None = None) -> None:
        super().__init__(message)
        if error_code is not None:
            self.error_code = error_code


class CorruptRecordError(RecordError):
    error_code = ErrorCode.CORRUPT_MESSAGE


class InvalidRecordError(RecordError):
    error_code = ErrorCode.INVALID_RECORD


class RecordValidationError(InvalidRecordError):
    """Some records of a batch are invalid (KIP-467): the batch is refused whole, and
    ``record_errors`` names exactly the invalid ones as (index of the record in its
    batch, why), so that a Produce v8+ answer can tell them from the others."""

    def __init__(self, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(message)
        self.record_errors = record_errors


class RecordTooLargeError(RecordError):
    error_code = ErrorCode.MESSAGE_TOO_LARGE


class OutOfOrderSequenceError(RecordError):
    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(RecordError):
    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(RecordError):
    """A producer with a transaction open wrote outside it."""

    error_code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(RecordError):
    """A transaction marker from a coordinator older than one the producer has seen."""

    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class OffsetOutOfRangeError(RecordError):
    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class InvalidTopicError(RecordError):
    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class InconsistentTopicIdError(RecordError):
    """The log on disk belongs to another incarnation of the topic (another topic id)."""

    error_code = ErrorCode.INCONSISTENT_TOPIC_ID
