"""A batch without a sequence from a fenced producer epoch is refused.

The group coordinator writes a TxnOffsetCommit as a transactional batch of the producer's
id and epoch with no sequence. One from an epoch older than the producer's known epoch
(a zombie whose client wedged, sending its commit long after it was fenced) must be
refused INVALID_PRODUCER_EPOCH, nothing appended, as Kafka refuses it: accepted, its
offsets would sit pending (OffsetFetch with require_stable answering
UNSTABLE_OFFSET_COMMIT) until whatever marker of that producer id came next."""

from __future__ import annotations

import pytest
from storage_helpers import make_batch, open_log

from protocol.errors import ErrorCode
from protocol.records.batch import TRANSACTIONAL_MASK, read_header
from protocol.records.validation import validate_records
from storage.errors import InvalidProducerEpochError
from storage.producer_state import ProducerStateEntry, check_batch

PID = 7


def txn_batch(epoch: int, sequence: int = -1) -> bytes:
    return bytes(
        make_batch(
            1, producer_id=PID, producer_epoch=epoch, base_sequence=sequence,
            attributes=TRANSACTIONAL_MASK,
        )
    )  # fmt: skip


def test_an_unsequenced_batch_of_an_older_epoch_is_refused() -> None:
    known = ProducerStateEntry(PID, 2)
    older = check_batch(known, read_header(txn_batch(1)))
    assert older.error_code == ErrorCode.INVALID_PRODUCER_EPOCH and "older than 2" in older.message
    assert check_batch(known, read_header(txn_batch(2))).error_code == ErrorCode.NONE
    assert check_batch(known, read_header(txn_batch(3))).error_code == ErrorCode.NONE
    assert check_batch(None, read_header(txn_batch(0))).error_code == ErrorCode.NONE


def test_the_log_refuses_a_fenced_transactional_offset_commit(tmp_path: object) -> None:
    lg = open_log(str(tmp_path))
    try:
        lg.append(validate_records(txn_batch(2), from_client=False), leader_epoch=0)
        end = lg.log_end_offset
        with pytest.raises(InvalidProducerEpochError):
            lg.append(validate_records(txn_batch(0), from_client=False), leader_epoch=0)
        assert lg.log_end_offset == end
        lg.append(validate_records(txn_batch(2), from_client=False), leader_epoch=0)
        assert lg.log_end_offset == end + 1
    finally:
        lg.close()
