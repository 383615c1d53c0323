"""validate_records: every received batch checked once, headers handed on."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.records import (
    InvalidBatch,
    SimpleRecord,
    ValidatedRecords,
    build_batch,
    read_header,
    validate_records,
)
from protocol.records.builder import pack_batch
from protocol.records.validation import validate_fetched_records
from tests.records import record_batch

CORRUPT_MESSAGE, INVALID_RECORD = 2, 87


def batch(n: int = 2, **kwargs: Any) -> bytes:
    return record_batch(n, value=b"v" * 50, **kwargs)


def test_every_batch_with_its_position_and_header() -> None:
    first, second = batch(2), batch(3)
    checked = validate_records(first + second, from_client=True)
    assert isinstance(checked, ValidatedRecords)
    assert [(pos, h.records_count) for pos, h in checked.batches] == [(0, 2), (len(first), 3)]
    assert checked.batches[1][1] == read_header(second)


def test_control_batches_only_from_replicas() -> None:
    marker = batch(1, is_control=True, producer_id=1, producer_epoch=0, base_sequence=0)
    with pytest.raises(InvalidBatch) as info:
        validate_records(marker, from_client=True)
    assert info.value.error_code == INVALID_RECORD
    assert validate_records(marker, from_client=False).batches[0][1].is_control


@pytest.mark.parametrize(
    ("records", "code"),
    [
        (b"", INVALID_RECORD),
        (batch()[:-1], CORRUPT_MESSAGE),
        (batch() + b"\x00" * 5, CORRUPT_MESSAGE),
    ],
    ids=["none", "truncated", "trailing-bytes"],
)
def test_refused_whole(records: bytes, code: int) -> None:
    with pytest.raises(InvalidBatch) as info:
        validate_records(records, from_client=True)
    assert info.value.error_code == code


def test_a_damaged_second_batch_refuses_both() -> None:
    damaged = bytearray(batch())
    damaged[-3] ^= 0x10
    with pytest.raises(InvalidBatch) as info:
        validate_records(batch() + bytes(damaged), from_client=True)
    assert info.value.error_code == CORRUPT_MESSAGE


def test_the_record_count_rule_is_a_clients() -> None:
    # compaction leaves batches with fewer records than their offset range, or none
    header = read_header(batch(3))
    for count in (1, 0):
        compacted = bytes(pack_batch(header._replace(records_count=count), b""))
        with pytest.raises(InvalidBatch) as info:
            validate_records(compacted, from_client=True)
        assert info.value.error_code == INVALID_RECORD
        assert validate_records(compacted, from_client=False).batches[0][1].records_count == count


def test_fetched_records_keep_their_whole_batches() -> None:
    one, two = batch(2), bytes(build_batch([SimpleRecord(None, b"b" * 50, (), 2)], base_offset=2))
    whole = validate_fetched_records(memoryview(one + two))
    assert whole is not None and bytes(whole.buffer) == one + two
    assert [pos for pos, _ in whole.batches] == [0, len(one)]
    for cut in (two[:-1], two[:5], two[:20]):  # the leader cut the last batch short
        first = validate_fetched_records(memoryview(one + cut))
        assert first is not None and bytes(first.buffer) == one and len(first.batches) == 1
    assert validate_fetched_records(memoryview(one[:-1])) is None
    assert validate_fetched_records(memoryview(b"")) is None


def test_fetched_records_are_checked_as_a_replicas() -> None:
    marker = batch(1, is_control=True, producer_id=1, producer_epoch=0, base_sequence=0)
    checked = validate_fetched_records(marker)
    assert checked is not None and checked.batches[0][1].is_control
    damaged = bytearray(batch())
    damaged[-3] ^= 0x10
    with pytest.raises(InvalidBatch) as info:
        validate_fetched_records(batch() + bytes(damaged))
    assert info.value.error_code == CORRUPT_MESSAGE
