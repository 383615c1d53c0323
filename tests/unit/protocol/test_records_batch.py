"""Writing and reading whole RecordBatch v2: header fields, in-place rewrites, scanning,
damage, control markers and legacy formats."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from protocol.records import (
    HEADER_SIZE,
    BatchBuilder,
    Compression,
    ControlType,
    DecompressionBomb,
    InvalidBatch,
    Record,
    SimpleRecord,
    TimestampType,
    build_batch,
    control_record,
    is_legacy,
    iter_batches,
    message_format,
    parse_control_record,
    read_batch,
    read_header,
    read_legacy_header,
    read_records,
    set_base_offset,
    set_max_timestamp,
    set_partition_leader_epoch,
    validate,
)
from protocol.records.varint import INT64_MAX, INT64_MIN

T0 = 1_700_000_000_000


def sample(n: int = 5, *, ts: int = T0) -> list[SimpleRecord]:
    return [
        SimpleRecord(b"key-%d" % i, b"value-%d " % i * 20, [("h", b"%d" % i)], ts + i)
        for i in range(n)
    ]


def test_header_fields_as_written() -> None:
    batch = build_batch(
        sample(3),
        base_offset=42,
        compression=Compression.GZIP,
        producer_id=7,
        producer_epoch=2,
        base_sequence=10,
        partition_leader_epoch=5,
        is_transactional=True,
    )
    header = validate(batch)
    assert header.size == len(batch)
    assert (header.base_offset, header.last_offset, header.next_offset) == (42, 44, 45)
    assert (header.magic, header.records_count, header.last_offset_delta) == (2, 3, 2)
    assert (header.base_timestamp, header.max_timestamp) == (T0, T0 + 2)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 10)
    assert header.last_sequence == 12
    assert header.partition_leader_epoch == 5
    assert header.compression == Compression.GZIP
    assert header.is_transactional and not header.is_control
    assert not header.is_log_append_time


def test_defaults_are_a_plain_producer_batch() -> None:
    header = validate(build_batch(sample(1)))
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
    assert header.partition_leader_epoch == -1
    assert header.attributes == 0


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name)
def test_records_round_trip_every_codec(codec: Compression) -> None:
    records = [*sample(50), SimpleRecord(None, None, [("n", None)], T0 + 3)]
    header, decoded = read_batch(build_batch(records, compression=codec, base_offset=100))
    assert header.compression == codec
    assert [(r.key, r.value, r.headers) for r in decoded] == [
        (s.key, s.value, list(s.headers)) for s in records
    ]
    assert [r.offset(header) for r in decoded] == list(range(100, 151))
    assert [r.timestamp(header) for r in decoded] == [s.timestamp for s in records]


def test_base_timestamp_is_the_first_record_and_deltas_may_be_negative() -> None:
    records = [SimpleRecord(None, b"a", (), T0), SimpleRecord(None, b"b", (), T0 - 5)]
    header, decoded = read_batch(build_batch(records))
    assert (header.base_timestamp, header.max_timestamp) == (T0, T0)
    assert [r.timestamp_delta for r in decoded] == [0, -5]


def test_log_append_time_applies_to_every_record() -> None:
    batch = build_batch(
        sample(3), timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 999
    )
    header, decoded = read_batch(batch)
    assert header.is_log_append_time and header.max_timestamp == T0 + 999
    assert {r.timestamp(header) for r in decoded} == {T0 + 999}
    with pytest.raises(ValueError):
        BatchBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME)


def test_builder_offset_deltas_with_gaps_must_grow() -> None:
    builder = BatchBuilder()
    assert builder.append(T0, b"a", b"1") == 0
    assert builder.append(T0, b"b", b"2", offset_delta=5) == 5
    with pytest.raises(ValueError):
        builder.append(T0, b"c", b"3", offset_delta=5)
    header, decoded = read_batch(builder.build())
    assert (header.records_count, header.last_offset_delta) == (2, 5)
    assert [r.offset_delta for r in decoded] == [0, 5]


def test_empty_batch() -> None:
    header, decoded = read_batch(BatchBuilder().build())
    assert decoded == [] and header.records_count == 0 and header.size == HEADER_SIZE
    assert header.base_timestamp == header.max_timestamp == -1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.none() | st.binary(max_size=40),
            st.none() | st.binary(max_size=40),
            st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3),
            st.integers(INT64_MIN // 2, INT64_MAX // 2),
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(list(Compression)),
)
def test_build_read_round_trip(
    items: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]],
    codec: Compression,
) -> None:
    records = [SimpleRecord(k, v, h, ts) for k, v, h, ts in items]
    header, decoded = read_batch(build_batch(records, compression=codec))
    assert [(r.key, r.value, r.headers, r.timestamp(header)) for r in decoded] == items
    assert header.max_timestamp == max(ts for *_, ts in items)


def test_in_place_rewrite_of_base_offset_and_leader_epoch_keeps_crc_valid() -> None:
    batch = build_batch(sample(4), compression=Compression.LZ4)
    crc_before = read_header(batch).crc
    set_base_offset(batch, 0, 123_456_789_000)
    set_partition_leader_epoch(batch, 0, 17)
    header = validate(batch)  # raises on a CRC mismatch
    assert (header.base_offset, header.partition_leader_epoch, header.crc) == (
        123_456_789_000,
        17,
        crc_before,
    )
    assert [r.offset(header) for r in read_records(batch)] == [
        123_456_789_000 + i for i in range(4)
    ]


def test_rewrite_inside_a_larger_buffer() -> None:
    first, second = build_batch(sample(2)), build_batch(sample(3))
    buf = bytearray(first + second)
    set_base_offset(buf, len(first), 2)
    assert validate(buf, len(first)).base_offset == 2
    assert validate(buf, 0, len(first)).base_offset == 0


def test_set_max_timestamp_stamps_log_append_time_and_recomputes_crc() -> None:
    batch = build_batch(sample(3))
    set_max_timestamp(batch, 0, TimestampType.LOG_APPEND_TIME, T0 + 5000)
    header, decoded = read_batch(batch)
    assert header.is_log_append_time and header.max_timestamp == T0 + 5000
    assert decoded[0].timestamp(header) == T0 + 5000
    set_max_timestamp(batch, 0, TimestampType.CREATE_TIME, T0 + 2)
    assert not validate(batch).is_log_append_time


def test_crc_mismatch_is_corrupt() -> None:
    batch = build_batch(sample(2))
    batch[-1] ^= 0x01
    with pytest.raises(InvalidBatch, match="CRC") as info:
        read_records(batch)
    assert info.value.corrupt and info.value.error_code == 2
    # without the CRC check the flipped bit (in the last header value) goes unnoticed
    _, decoded = read_batch(batch, check_crc=False)
    assert decoded[-1].headers == [("h", b"0")]


def test_truncated_batch_is_corrupt() -> None:
    batch = bytes(build_batch(sample(2)))
    for cut in (0, 11, 20, HEADER_SIZE - 1, HEADER_SIZE, len(batch) - 1):
        with pytest.raises(InvalidBatch) as info:
            read_records(batch[:cut])
        assert info.value.corrupt


def test_bad_magic_is_invalid_not_corrupt() -> None:
    batch = build_batch(sample(1))
    batch[16] = 3
    with pytest.raises(InvalidBatch, match="magic") as info:
        validate(batch)
    assert not info.value.corrupt and info.value.error_code == 87


def test_records_count_lying_about_the_section_is_corrupt() -> None:
    batch = build_batch(sample(3))
    struct.pack_into(">i", batch, 57, 4)
    with pytest.raises(InvalidBatch) as info:
        read_records(batch)  # CRC first
    assert info.value.corrupt
    with pytest.raises(InvalidBatch, match=r"truncated|cannot fit") as info:
        read_batch(batch, check_crc=False)


def test_compressed_bomb_inside_a_batch() -> None:
    records = [SimpleRecord(None, bytes(1 << 20), (), T0)]
    batch = build_batch(records, compression=Compression.ZSTD)
    assert len(batch) < 1000
    with pytest.raises(DecompressionBomb):
        read_records(batch, max_uncompressed=64 * 1024)
    assert read_records(batch)[0].value == bytes(1 << 20)


def test_iter_batches_scans_headers_without_reading_records() -> None:
    batches = [build_batch(sample(n), base_offset=10 * n) for n in (1, 2, 3)]
    batches[1][-1] ^= 0xFF  # a bad CRC is not the scanner's business
    buf = b"".join(batches)
    found = list(iter_batches(buf))
    assert [pos for pos, _ in found] == [0, len(batches[0]), len(batches[0]) + len(batches[1])]
    assert [h.base_offset for _, h in found] == [10, 20, 30]


def test_iter_batches_stops_at_a_partial_tail_or_refuses_it() -> None:
    whole = build_batch(sample(2))
    for tail in (b"\x00" * 5, bytes(build_batch(sample(1)))[:-3], bytes(whole)[:40]):
        buf = bytes(whole) + tail
        assert [pos for pos, _ in iter_batches(buf)] == [0]
        with pytest.raises(InvalidBatch) as info:
            list(iter_batches(buf, allow_partial=False))
        assert info.value.corrupt


def test_iter_batches_refuses_legacy_and_impossible_lengths() -> None:
    with pytest.raises(InvalidBatch, match="magic 1"):
        list(iter_batches(_legacy(1)))
    batch = build_batch(sample(1))
    struct.pack_into(">i", batch, 8, 20)
    with pytest.raises(InvalidBatch, match="below the header") as info:
        list(iter_batches(batch))
    assert info.value.corrupt


def test_iter_batches_respects_pos_and_end() -> None:
    a, b, c = (bytes(build_batch(sample(1), base_offset=i)) for i in range(3))
    buf = a + b + c
    assert [h.base_offset for _, h in iter_batches(buf, len(a), len(a) + len(b))] == [1]


def test_control_batch_round_trip() -> None:
    marker = control_record(ControlType.COMMIT, coordinator_epoch=9, timestamp=T0)
    batch = build_batch(
        [marker], is_control=True, is_transactional=True, producer_id=4, producer_epoch=1
    )
    header, (record,) = read_batch(batch)
    assert header.is_control and header.is_transactional
    parsed = parse_control_record(record)
    assert (parsed.type, parsed.version, parsed.coordinator_epoch) == (ControlType.COMMIT, 0, 9)
    abort = read_records(build_batch([control_record(ControlType.ABORT, 3, T0)], is_control=True))
    assert parse_control_record(abort[0]).type is ControlType.ABORT


def test_control_record_other_types_and_damage() -> None:
    leader_change = Record(0, 0, struct.pack(">hh", 0, 2), b"opaque", [])
    assert parse_control_record(leader_change) == (ControlType.LEADER_CHANGE, 0, None)
    assert parse_control_record(Record(0, 0, struct.pack(">hh", 0, 99), None, [])).type == 99
    with pytest.raises(InvalidBatch):
        parse_control_record(Record(0, 0, b"\x00", None, []))
    with pytest.raises(InvalidBatch):
        parse_control_record(Record(0, 0, struct.pack(">hh", 0, 1), b"\x00", []))


def _legacy(magic: int) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=T0 if magic else None, key=b"k", value=b"v")
    return bytes(builder.build())


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets_are_recognised(magic: int) -> None:
    data = _legacy(magic)
    assert message_format(data) == magic and is_legacy(data)
    header = read_legacy_header(data)
    assert (header.magic, header.offset, header.size) == (magic, 0, len(data))
    assert header.timestamp == (T0 if magic else -1)  # magic 0 has none: NO_TIMESTAMP
    with pytest.raises(InvalidBatch, match="magic") as info:
        validate(data + bytes(64))
    assert not info.value.corrupt
    damaged = bytearray(data)
    damaged[-1] ^= 1
    with pytest.raises(InvalidBatch, match="CRC"):
        read_legacy_header(damaged)


def test_message_format_of_a_v2_batch_and_of_too_few_bytes() -> None:
    batch = build_batch(sample(1))
    assert message_format(batch) == 2 and not is_legacy(batch)
    with pytest.raises(InvalidBatch):
        message_format(batch[:16])


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(list(Compression)), st.binary(min_size=1, max_size=40), st.integers(0, 10**6)
)
def test_mutated_batches_raise_only_invalid_batch(
    codec: Compression, noise: bytes, where: int
) -> None:
    data = build_batch(sample(4), compression=codec)
    where %= len(data)
    data[where : where + len(noise)] = noise
    for scan in (
        lambda: read_batch(data, check_crc=False, max_uncompressed=1 << 20),
        lambda: list(iter_batches(data, allow_partial=False)),
    ):
        with contextlib.suppress(InvalidBatch):
            scan()
