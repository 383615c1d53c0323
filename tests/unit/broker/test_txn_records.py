"""TransactionLogKey/Value: the bytes Kafka 3.x writes (golden, built by hand from the
schema), and version 1 (flexible, with tagged fields) read too."""

from __future__ import annotations

import struct

import pytest

from broker.txn.model import TxnTransit
from broker.txn.records import read_key, read_value, txn_key, txn_value
from broker.txn.states import TxnState
from protocol.values import TopicPartition


def transit(state: TxnState, partitions: frozenset[TopicPartition]) -> TxnTransit:
    return TxnTransit(
        producer_id=1000,
        last_producer_id=-1,
        producer_epoch=2,
        last_producer_epoch=1,
        timeout_ms=60_000,
        state=state,
        partitions=partitions,
        start_ms=4,
        last_update_ms=5,
    )


def test_key_version_0_golden() -> None:
    assert txn_key("tx") == bytes.fromhex("000000027478")
    assert read_key(txn_key("tx")) == "tx"


def test_value_version_0_golden_ongoing() -> None:
    tps = frozenset({TopicPartition("t", 1), TopicPartition("t", 0)})
    expected = bytes.fromhex(
        "0000"  # version 0
        "00000000000003e8"  # producer id 1000
        "0002"  # epoch
        "0000ea60"  # timeout 60000
        "01"  # Ongoing
        "00000001" "0001" "74" "00000002" "00000000" "00000001"  # [t: [0, 1]]
        "0000000000000005"  # last update
        "0000000000000004"  # start
    )  # fmt: skip
    assert txn_value(transit(TxnState.ONGOING, tps)) == expected
    meta = read_value("tx", expected)
    assert (meta.producer_id, meta.producer_epoch, meta.timeout_ms, meta.state) == (
        1000, 2, 60_000, TxnState.ONGOING,
    )  # fmt: skip
    assert meta.partitions == set(tps)
    assert (meta.last_update_ms, meta.start_ms) == (5, 4)


def test_empty_writes_null_partitions() -> None:
    value = txn_value(transit(TxnState.EMPTY, frozenset()))
    assert value[2 + 8 + 2 + 4 + 1 :][:4] == b"\xff\xff\xff\xff"
    assert read_value("tx", value).partitions == set()


@pytest.mark.parametrize("state", [TxnState.PREPARE_EPOCH_FENCE, TxnState.DEAD])
def test_states_never_written(state: TxnState) -> None:
    with pytest.raises(ValueError):
        txn_value(transit(state, frozenset()))


def test_value_version_1_with_tagged_fields_is_read() -> None:
    v1 = (
        bytes.fromhex("0001" "00000000000007d0" "0005" "00002710" "02")
        + bytes([2]) + bytes([2]) + b"a" + bytes([2]) + struct.pack(">i", 3) + b"\x00"
        + struct.pack(">q", 9) + struct.pack(">q", 8)
        + b"\x01" + b"\x00" + b"\x08" + struct.pack(">q", 1999)  # PreviousProducerId
    )  # fmt: skip
    meta = read_value("tx", v1)
    assert (meta.producer_id, meta.producer_epoch, meta.timeout_ms) == (2000, 5, 10_000)
    assert meta.state is TxnState.PREPARE_COMMIT
    assert meta.partitions == {TopicPartition("a", 3)}
    assert (meta.last_update_ms, meta.start_ms) == (9, 8)
