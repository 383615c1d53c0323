"""Errors raised by the storage engine.

Two families, because the broker answers them differently:

* :class:`StorageError` -- the disk failed us (full, read-only, I/O error, a write that
  could not be completed). The broker answers KAFKA_STORAGE_ERROR for the partition.
  Whatever a failed append had written is truncated away before this is raised.
* :class:`RecordError` subclasses -- the input is wrong (a corrupt or invalid batch, a
  sequence gap, a fenced producer epoch, an offset out of range). Each carries the Kafka
  error code the broker should answer with, so ``storage`` needs nothing from
  ``protocol.errors``. The log is unchanged when one is raised.
"""

from __future__ import annotations

# Kafka error codes used by storage (values from the Kafka protocol's error table).
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
RECORD_LIST_TOO_LARGE = 18
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
KAFKA_STORAGE_ERROR = 56
INVALID_RECORD = 87
INCONSISTENT_TOPIC_ID = 103


class StorageError(OSError):
    """A disk operation failed; the partition answers KAFKA_STORAGE_ERROR."""

    error_code = KAFKA_STORAGE_ERROR


class InconsistentMetadataError(StorageError):
    """meta.properties files (or the configuration) disagree: the broker must not start."""


class RecordError(ValueError):
    """Refused input. ``error_code`` is the Kafka error code to answer with."""

    error_code = INVALID_RECORD

    def __init__(self, message: str, error_code: int | None = None) -> None:
        super().__init__(message)
        if error_code is not None:
            self.error_code = error_code


class CorruptRecordError(RecordError):
    error_code = CORRUPT_MESSAGE


class InvalidRecordError(RecordError):
    error_code = INVALID_RECORD


class RecordTooLargeError(RecordError):
    error_code = MESSAGE_TOO_LARGE


class OutOfOrderSequenceError(RecordError):
    error_code = OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(RecordError):
    error_code = INVALID_PRODUCER_EPOCH


class OffsetOutOfRangeError(RecordError):
    error_code = OFFSET_OUT_OF_RANGE


class InvalidTopicError(RecordError):
    error_code = INVALID_TOPIC_EXCEPTION


class InconsistentTopicIdError(RecordError):
    """The log on disk belongs to another incarnation of the topic (another topic id)."""

    error_code = INCONSISTENT_TOPIC_ID
