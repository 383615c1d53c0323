"""check_produce_records: the Produce handler's check of one partition's records."""

from __future__ import annotations

import struct
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder

import protocol.records.compression
from broker.produce_records import RefusedRecords, check_produce_records
from protocol.records import (
    BatchHeader,
    Compression,
    InvalidBatch,
    UnsupportedCompression,
    set_crc,
)
from protocol.records.validation import ValidatedRecords
from tests.records import record_batch

T0 = 1_700_000_000_000
CORRUPT_MESSAGE, INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE = 2, 87, 76


def validate_produce_records(
    records: bytes | bytearray | memoryview | None, version: int
) -> ValidatedRecords:
    """check_produce_records at ``version``, its refusal raised (as the Partition raises
    it once the partition's role checks passed)."""
    checked = check_produce_records(records, version)
    if isinstance(checked, RefusedRecords):
        raise checked.error
    return checked


def batch(n: int = 3, **kwargs: Any) -> bytearray:
    return bytearray(record_batch(n, value=b"v" * 100, timestamps=range(T0, T0 + n), **kwargs))


def header_of(records: bytes | bytearray | memoryview, version: int) -> BatchHeader:
    """The header of the one batch check_produce_records accepted."""
    [(_, header)] = validate_produce_records(records, version).batches
    return header


def error_code(records: bytes | bytearray | None, version: int = 9) -> int:
    with pytest.raises(InvalidBatch) as info:
        validate_produce_records(records, version)
    return info.value.error_code


def test_a_good_batch_returns_its_header() -> None:
    header = header_of(batch(3, producer_id=5, producer_epoch=0, base_sequence=0), 9)
    assert (header.records_count, header.producer_id, header.base_sequence) == (3, 5, 0)


def test_producer_id_minus_one_with_sequence_zero_is_accepted() -> None:
    assert header_of(batch(1, base_sequence=0), 3).base_sequence == 0


@pytest.mark.parametrize("records", [None, b"", b"\x00" * 11, b"\x00" * 30])
def test_no_batch_at_all_is_invalid_record(records: bytes | None) -> None:
    assert error_code(records) == INVALID_RECORD


def test_two_batches_are_invalid_record() -> None:
    assert error_code(batch() + batch()) == INVALID_RECORD


def test_trailing_bytes_after_the_batch_are_invalid_record() -> None:
    assert error_code(batch() + b"\x00\x01") == INVALID_RECORD


def test_batch_longer_than_the_bytes_sent_is_invalid_record() -> None:
    assert error_code(batch()[:-1]) == INVALID_RECORD


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets_are_invalid_record(magic: int) -> None:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=T0 if magic else None, key=b"k", value=b"v" * 100)
    with pytest.raises(InvalidBatch, match="magic 2") as info:
        validate_produce_records(bytes(builder.build()), 3)
    assert info.value.error_code == INVALID_RECORD


def test_crc_mismatch_is_corrupt_message() -> None:
    damaged = batch()
    damaged[-5] ^= 0x40
    assert error_code(damaged) == CORRUPT_MESSAGE


def test_batch_length_below_the_header_is_corrupt_message() -> None:
    short = batch()
    struct.pack_into(">i", short, 8, 30)
    assert error_code(short[: 30 + 12]) == CORRUPT_MESSAGE


@pytest.mark.parametrize("version", [3, 6])
def test_zstd_below_v7_is_unsupported_compression(version: int) -> None:
    with pytest.raises(UnsupportedCompression) as info:
        validate_produce_records(batch(compression=Compression.ZSTD), version)
    assert info.value.error_code == UNSUPPORTED_COMPRESSION_TYPE


def test_zstd_from_v7_is_accepted() -> None:
    assert header_of(batch(compression=Compression.ZSTD), 7).compression == 4


def test_unknown_codec_is_unsupported_compression() -> None:
    data = batch()
    data[22] |= 0x07  # attributes low byte: codec 7
    set_crc(data, 0, len(data))
    assert error_code(data) == UNSUPPORTED_COMPRESSION_TYPE


def _rewrite(data: bytearray, fmt: str, offset: int, value: int) -> bytearray:
    struct.pack_into(fmt, data, offset, value)
    set_crc(data, 0, len(data))
    return data


def test_header_rules_from_kafkas_log_validator() -> None:
    assert error_code(_rewrite(batch(3), ">i", 57, 2)) == INVALID_RECORD  # count != delta+1
    assert error_code(_rewrite(batch(3), ">i", 57, 0)) == INVALID_RECORD  # no records
    assert error_code(batch(1, is_control=True)) == INVALID_RECORD
    assert error_code(batch(1, producer_id=3, producer_epoch=0)) == INVALID_RECORD  # seq -1
    assert error_code(batch(1, is_transactional=True)) == INVALID_RECORD  # no producer id
    assert error_code(batch(1, base_offset=10)) == INVALID_RECORD


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name)
def test_never_decompresses(codec: Compression) -> None:
    with (
        mock.patch.object(
            protocol.records.compression, "decompress", side_effect=AssertionError("decompressed")
        ),
        mock.patch.dict(protocol.records.compression._DECODERS, clear=True),
    ):
        assert header_of(batch(5, compression=codec), 9).compression == codec


def test_accepts_a_memoryview_into_a_larger_request() -> None:
    data = batch(2)
    frame = b"header" + bytes(data) + b"next partition"
    view = memoryview(frame)[6 : 6 + len(data)]
    assert header_of(view, 9).records_count == 2


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120), st.integers(0, 200), st.integers(3, 9))
def test_random_and_mutated_records_raise_only_invalid_batch(
    noise: bytes, where: int, version: int
) -> None:
    for candidate in (noise, _mutated(batch(2), noise, where)):
        try:
            validate_produce_records(candidate, version)
        except InvalidBatch as exc:
            assert exc.error_code in (CORRUPT_MESSAGE, INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE)


def _mutated(data: bytearray, noise: bytes, where: int) -> bytes:
    where %= len(data)
    data[where : where + len(noise)] = noise
    return bytes(data)


def test_a_refusal_carries_its_size_and_the_transactional_bit_of_a_readable_header() -> None:
    whole = batch(2, producer_id=4, producer_epoch=0, base_sequence=0, is_transactional=True)
    trailing = whole + b"\x00\x01"
    refused = check_produce_records(trailing, 9)
    assert isinstance(refused, RefusedRecords)
    assert refused.error.error_code == INVALID_RECORD
    assert (refused.size, refused.transactional) == (len(trailing), True)
    short = check_produce_records(whole[:40], 9)  # no header to read
    assert isinstance(short, RefusedRecords)
    assert (short.size, short.transactional) == (40, False)
    nothing = check_produce_records(None, 9)
    assert isinstance(nothing, RefusedRecords) and nothing.size == 0


def test_the_accepted_header_is_the_one_handed_on() -> None:
    data = batch(2, producer_id=4, producer_epoch=0, base_sequence=0, is_transactional=True)
    checked = check_produce_records(data, 9)
    assert isinstance(checked, ValidatedRecords)
    [(position, header)] = checked.batches
    assert position == 0 and header.is_transactional and checked.buffer is data
