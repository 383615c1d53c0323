"""The records of ``__transaction_state``: TransactionLogKey and TransactionLogValue.

Each record is keyed by the transactional id; the last record of a key wins, a null
value (a tombstone) removes the id (it expired: Dead). Both are versioned data records
(an int16 version, then the struct: protocol.data):

- key, version 0: ``transactional_id`` (string);
- value, written at version 0 as Kafka 3.x writes it: ``producer_id`` int64,
  ``producer_epoch`` int16, ``transaction_timeout_ms`` int32, ``transaction_status`` int8
  (broker.txn.states.TxnState), ``transaction_partitions`` (nullable array of
  ``topic`` string + ``partition_ids`` [int32]: null in Empty, the partitions grouped by
  topic otherwise), ``transaction_last_update_timestamp_ms`` int64,
  ``transaction_start_timestamp_ms`` int64. Version 1 (flexible: compact strings and
  arrays, tagged fields with the previous/next producer ids and the client's
  transaction version) is read too; its tags are not used here.

PrepareEpochFence is never written (it exists in memory only), nor Dead (a tombstone
stands for it). Everything here is pure.
"""

from __future__ import annotations

from collections import defaultdict

from broker.txn.model import TxnMetadata, TxnTransit
from broker.txn.states import TxnState
from protocol.data import decode_data, encode_data
from protocol.messages import TransactionLogKey, TransactionLogValue
from protocol.values import TopicPartition

KEY_VERSION = 0
VALUE_VERSION = 0


def txn_key(transactional_id: str) -> bytes:
    return encode_data(
        "TransactionLogKey", KEY_VERSION, TransactionLogKey(transactional_id=transactional_id)
    )


def txn_value(transit: TxnTransit) -> bytes:
    """TransactionLogValue v0 of ``transit`` (never PrepareEpochFence nor Dead)."""
    if transit.state in (TxnState.PREPARE_EPOCH_FENCE, TxnState.DEAD):
        raise ValueError(f"{transit.state.display} is not written to the log")
    partitions: list[TransactionLogValue.PartitionsSchema] | None = None
    if transit.state is not TxnState.EMPTY:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in sorted(transit.partitions):
            by_topic[tp.topic].append(tp.partition)
        partitions = [
            TransactionLogValue.PartitionsSchema(topic=topic, partition_ids=ids)
            for topic, ids in by_topic.items()
        ]
    value = TransactionLogValue(
        producer_id=transit.producer_id,
        producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.timeout_ms,
        transaction_status=int(transit.state),
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=transit.last_update_ms,
        transaction_start_timestamp_ms=transit.start_ms,
    )
    return encode_data("TransactionLogValue", VALUE_VERSION, value)


def read_key(buf: bytes | bytearray | memoryview) -> str:
    """The transactional id of a key. Raises ProtocolError (or ValueError) for bytes
    that do not parse."""
    return str(decode_data("TransactionLogKey", buf).transactional_id)


def read_value(transactional_id: str, buf: bytes | bytearray | memoryview) -> TxnMetadata:
    """A TransactionLogValue of any version, as the metadata it describes. Raises
    ValueError for a status that is no state."""
    v = decode_data("TransactionLogValue", buf)
    state = TxnState(v.transaction_status)
    partitions = {
        TopicPartition(p.topic, pid)
        for p in (v.transaction_partitions or ())
        for pid in p.partition_ids
    }
    return TxnMetadata(
        transactional_id=transactional_id,
        producer_id=v.producer_id,
        producer_epoch=v.producer_epoch,
        timeout_ms=v.transaction_timeout_ms,
        state=state,
        partitions=partitions,
        start_ms=v.transaction_start_timestamp_ms,
        last_update_ms=v.transaction_last_update_timestamp_ms,
    )
