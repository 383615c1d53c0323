"""Idempotent producers: the pure sequence check, duplicates through Log.append,
snapshots on roll and close, and state rebuilt from a snapshot plus the log."""

from __future__ import annotations

import dataclasses
import os

import pytest
from storage_helpers import SMALL, make_batch, open_log

from protocol.errors import ErrorCode
from protocol.records.batch import read_header
from storage.clock import MockClock
from storage.errors import (
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
)
from storage.producer_state import (
    MAX_BATCHES,
    ProducerStateEntry,
    ProducerStateManager,
    check_batch,
    decode_snapshot,
    encode_snapshot,
)


def header(seq: int, n: int = 1, epoch: int = 0, pid: int = 7, base_offset: int = 0):  # type: ignore[no-untyped-def]
    return read_header(
        make_batch(
            n, producer_id=pid, producer_epoch=epoch, base_sequence=seq, base_offset=base_offset
        )
    )


def entry_after(*seqs: tuple[int, int], epoch: int = 0) -> ProducerStateEntry:
    e = ProducerStateEntry(7, epoch)
    offset = 0
    for seq, n in seqs:
        e.add(header(seq, n, epoch, base_offset=offset))
        offset += n
    return e


def test_unknown_producer_may_start_at_any_sequence() -> None:
    assert check_batch(None, header(42)).error_code == 0


def test_no_producer_id_skips_the_check() -> None:
    h = read_header(make_batch(1, producer_id=-1, base_sequence=0))
    assert check_batch(entry_after((0, 1)), h).error_code == 0


def test_next_sequence_is_accepted_and_a_gap_refused() -> None:
    e = entry_after((0, 3))
    assert check_batch(e, header(3)).error_code == 0
    gap = check_batch(e, header(5))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and "expected 3" in gap.message


def test_retry_of_one_of_the_last_five_batches_is_a_duplicate() -> None:
    e = entry_after(*[(2 * i, 2) for i in range(7)])  # 7 batches, the last 5 remembered
    assert len(e.batches) == MAX_BATCHES
    dup = check_batch(e, header(10, 2))
    assert dup.error_code == 0 and dup.duplicate is not None
    assert (dup.duplicate.first_offset, dup.duplicate.last_offset) == (10, 11)
    # The first batches were forgotten: a retry of them is now out of order.
    assert check_batch(e, header(0, 2)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_epochs() -> None:
    e = entry_after((0, 3), epoch=2)
    assert check_batch(e, header(3, epoch=1)).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert check_batch(e, header(0, epoch=3)).error_code == 0  # new epoch starts at 0
    assert check_batch(e, header(3, epoch=3)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_sequence_wraps_at_int32_max() -> None:
    e = ProducerStateEntry(7, 0)
    e.add(header(2**31 - 1))
    assert check_batch(e, header(0)).error_code == 0


def test_log_append_answers_duplicates_with_the_original_offsets(
    tmp_path: os.PathLike[str],
) -> None:
    lg = open_log(str(tmp_path))
    lg.append(make_batch(1), leader_epoch=0)  # a non-idempotent record first
    first = lg.append(make_batch(3, producer_id=9, producer_epoch=0, base_sequence=0), 0)
    again = lg.append(make_batch(3, producer_id=9, producer_epoch=0, base_sequence=0), 0)
    assert again.duplicate and (again.first_offset, again.last_offset) == (1, 3) == (
        first.first_offset,
        first.last_offset,
    )
    assert lg.log_end_offset == 4  # nothing written twice
    with pytest.raises(OutOfOrderSequenceError):
        lg.append(make_batch(1, producer_id=9, producer_epoch=0, base_sequence=7), 0)
    with pytest.raises(InvalidProducerEpochError):
        lg.append(make_batch(1, producer_id=9, producer_epoch=-1, base_sequence=3), 0)
    assert lg.log_end_offset == 4
    lg.close()


def test_a_retry_of_any_of_the_last_five_batches_gets_that_batchs_answer(
    tmp_path: os.PathLike[str],
) -> None:
    lg = open_log(str(tmp_path))
    originals = [
        lg.append(make_batch(2, producer_id=9, producer_epoch=0, base_sequence=2 * i), 0)
        for i in range(5)
    ]
    lg.append(make_batch(1), leader_epoch=0)  # others write meanwhile
    for i, original in enumerate(originals):
        retry = lg.append(make_batch(2, producer_id=9, producer_epoch=0, base_sequence=2 * i), 0)
        assert retry.duplicate
        assert (retry.first_offset, retry.last_offset) == (2 * i, 2 * i + 1)
        assert (retry.first_offset, retry.last_offset) == (
            original.first_offset,
            original.last_offset,
        )
        assert retry.log_start_offset == lg.log_start_offset
        assert retry.log_append_time == -1  # CreateTime: no append time to report
    assert lg.log_end_offset == 11
    lg.close()


def test_a_duplicate_under_log_append_time_reports_the_original_append_time(
    tmp_path: os.PathLike[str],
) -> None:
    clock = MockClock(time_ms=1_000_000)
    config = dataclasses.replace(SMALL, message_timestamp_type="LogAppendTime")
    lg = open_log(str(tmp_path), config, clock)
    first = lg.append(make_batch(2, producer_id=9, producer_epoch=0, base_sequence=0), 0)
    clock.advance(5_000)
    retry = lg.append(make_batch(2, producer_id=9, producer_epoch=0, base_sequence=0), 0)
    assert retry.duplicate and retry.first_offset == first.first_offset == 0
    assert retry.log_append_time == first.log_append_time == 1_000_000
    lg.close()


def test_a_retry_after_a_restart_gets_the_original_offsets(tmp_path: os.PathLike[str]) -> None:
    """The producer state is rebuilt from the log (no clean-shutdown snapshot here), so a
    retry still finds its batch."""
    lg = open_log(str(tmp_path))
    lg.append(make_batch(1), leader_epoch=0)
    first = lg.append(make_batch(3, producer_id=9, producer_epoch=0, base_sequence=0), 0)
    lg.flush()
    lg.close_without_snapshot()  # as after a crash: no snapshot at the log end
    lg = open_log(str(tmp_path), clean_shutdown=False)
    retry = lg.append(make_batch(3, producer_id=9, producer_epoch=0, base_sequence=0), 0)
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (1, 3)
    assert (first.first_offset, first.last_offset) == (1, 3)
    lg.close()


def test_two_batches_of_one_producer_in_one_append(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    data = make_batch(2, producer_id=9, producer_epoch=0, base_sequence=0) + make_batch(
        2, producer_id=9, producer_epoch=0, base_sequence=2
    )
    lg.append(data, 0)
    assert lg.producer_state.producers[9].last_seq == 3
    lg.close()


def test_snapshot_round_trip_and_corruption() -> None:
    producers = {7: entry_after((0, 2), (2, 3)), 8: entry_after((5, 1), epoch=4)}
    producers[8].producer_id = 8
    data = encode_snapshot(producers)
    assert decode_snapshot(data) == producers
    damaged = bytearray(data)
    damaged[-1] ^= 1
    with pytest.raises(ValueError):
        decode_snapshot(bytes(damaged))
    with pytest.raises(ValueError):
        decode_snapshot(data[:-3])


def test_state_is_rebuilt_from_the_last_snapshot_plus_the_log(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for i in range(40):
        lg.append(make_batch(3, producer_id=5, producer_epoch=1, base_sequence=3 * i), 0)
    snapshots = sorted(n for n in os.listdir(tmp_path) if n.endswith(".snapshot"))
    assert snapshots  # written on every roll
    expected = lg.producer_state.producers[5]
    lg.close()
    # Drop the clean-shutdown snapshot: the state comes from the last roll's snapshot
    # plus a replay of the batch headers after it.
    last = sorted(n for n in os.listdir(tmp_path) if n.endswith(".snapshot"))[-1]
    os.unlink(os.path.join(tmp_path, last))
    lg = open_log(str(tmp_path), clean_shutdown=True)
    assert lg.producer_state.producers[5] == expected
    lg.close()


def test_corrupt_snapshot_falls_back_to_an_older_one(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for i in range(40):
        lg.append(make_batch(3, producer_id=5, producer_epoch=1, base_sequence=3 * i), 0)
    expected = lg.producer_state.producers[5]
    lg.close()
    for name in os.listdir(tmp_path):
        if name.endswith(".snapshot"):
            with open(os.path.join(tmp_path, name), "r+b") as f:
                f.write(b"\x00\x09")
            break
    newest = max(n for n in os.listdir(tmp_path) if n.endswith(".snapshot"))
    with open(os.path.join(tmp_path, newest), "wb") as f:
        f.write(b"garbage")
    lg = open_log(str(tmp_path), clean_shutdown=True)
    assert lg.producer_state.producers[5] == expected
    lg.close()


def test_truncation_drops_later_snapshots_and_state(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for i in range(40):
        lg.append(make_batch(3, producer_id=5, producer_epoch=1, base_sequence=3 * i), 0)
    lg.truncate_to(30)
    assert lg.producer_state.producers[5].last_seq == 29
    assert all(int(n[:20]) <= 30 for n in os.listdir(tmp_path) if n.endswith(".snapshot"))
    assert (
        lg.append(make_batch(1, producer_id=5, producer_epoch=1, base_sequence=30), 0).first_offset
        == 30
    )
    lg.close()


def test_manager_expires_silent_producers(tmp_path: os.PathLike[str]) -> None:
    m = ProducerStateManager(str(tmp_path))
    m.update(header(0))  # record timestamp 1000
    assert m.remove_expired(now_ms=2_000, expiration_ms=5_000) == 0
    assert m.remove_expired(now_ms=10_000, expiration_ms=5_000) == 1
    assert m.producers == {}
