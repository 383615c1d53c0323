"""Magic 0/1 messages: round trips, CRC-32, compressed wrappers (relative offsets, the
wrapper's timestamp types), magic 0's lz4 header checksum, and conversion to and from
RecordBatch v2 with offsets and timestamps. kafka-python's legacy codec, an independent
implementation, reads what is written here and writes what is read here."""

from __future__ import annotations

import struct
import types
from collections.abc import Iterator
from typing import Any

import lz4.frame
import pytest

from protocol.records import build_batch, read_batch
from protocol.records.batch import Compression, InvalidBatch, TimestampType
from protocol.records.compression import UnsupportedCompression
from protocol.records.control import ControlType, control_record
from protocol.records.conversion import DownConverter, down_convert, up_convert
from protocol.records.legacy import (
    LegacyRecord,
    deep_messages,
    iter_messages,
    read_message,
    write_message,
    write_message_set,
)
from protocol.records.legacy_compression import header_checksum, xxh32
from protocol.records.record import SimpleRecord

CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]


def records(n: int, first: int = 0) -> list[LegacyRecord]:
    return [
        LegacyRecord(first + i, 1000 + i, None if i % 2 else b"k%d" % i, b"v" * i) for i in range(n)
    ]


def message_set(magic: int, n: int, codec: int = 0, **kw: Any) -> bytes:
    out = bytearray()
    write_message_set(out, records(n), magic=magic, compression=codec, **kw)
    return bytes(out)


def deep(data: bytes) -> list[Any]:
    return [d for _, m in iter_messages(data) for d in deep_messages(m)]


@pytest.fixture
def kafka_python() -> Iterator[Any]:
    """kafka-python's legacy codec, its xxhash (for magic 0's lz4) given by ours."""
    import kafka.codec
    from kafka.record.memory_records import MemoryRecords

    class _Digest:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def digest(self) -> bytes:
            return struct.pack(">I", xxh32(self.data))

    saved = kafka.codec.xxhash
    kafka.codec.xxhash = types.SimpleNamespace(xxh32=_Digest)
    try:
        yield MemoryRecords
    finally:
        kafka.codec.xxhash = saved


def test_xxh32_known_values_and_lz4_header_checksum() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F
    frame = lz4.frame.compress(b"x" * 100, store_size=True)
    assert frame[14] == header_checksum(frame, broken=False)
    assert header_checksum(frame, broken=True) == (xxh32(frame[:14]) >> 8) & 0xFF


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(magic: int, codec: int) -> None:
    data = message_set(magic, 5, codec)
    got = deep(data)
    assert [(m.offset, m.key, m.value, m.magic) for m in got] == [
        (r.offset, r.key, r.value, magic) for r in records(5)
    ]
    assert [m.timestamp for m in got] == ([-1] * 5 if magic == 0 else [1000 + i for i in range(5)])
    shallow = [m for _, m in iter_messages(data)]
    if codec:
        # one wrapper at the last offset; a magic 1 wrapper has the largest timestamp
        assert [(m.offset, m.compression, m.key) for m in shallow] == [(4, codec, None)]
        assert shallow[0].timestamp == (-1 if magic == 0 else 1004)
    else:
        assert len(shallow) == 5


def test_magic_1_inner_offsets_are_relative_to_the_wrapper() -> None:
    out = bytearray()
    write_message_set(out, records(3, first=40), magic=1, compression=Compression.GZIP)
    (wrapper,) = [m for _, m in iter_messages(out)]
    assert wrapper.offset == 42
    from protocol.records.legacy_compression import legacy_decompress

    inner = legacy_decompress(1, wrapper.value or b"", 1, 1 << 20)
    assert [m.offset for _, m in iter_messages(inner)] == [0, 1, 2]
    assert [m.offset for m in deep_messages(wrapper)] == [40, 41, 42]
    # magic 0 wrappers carry absolute inner offsets
    out0 = bytearray()
    write_message_set(out0, records(3, first=40), magic=0, compression=Compression.GZIP)
    assert [m.offset for m in deep(bytes(out0))] == [40, 41, 42]


def test_log_append_time_wrapper_stamps_every_inner_message() -> None:
    data = message_set(
        1, 3, Compression.SNAPPY, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=77
    )
    (wrapper,) = [m for _, m in iter_messages(data)]
    assert wrapper.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [m.timestamp for m in deep_messages(wrapper)] == [77, 77, 77]


def test_crc_mismatch_is_corrupt_and_truncation_is_left_out() -> None:
    data = bytearray(message_set(1, 2))
    data[-1] ^= 1
    with pytest.raises(InvalidBatch) as exc:
        list(iter_messages(data))
    assert exc.value.corrupt and exc.value.error_code == 2
    whole = message_set(0, 3)
    assert len(list(iter_messages(whole[:-5]))) == 2  # a partial tail ends the iteration
    with pytest.raises(InvalidBatch) as too_small:
        list(iter_messages(struct.pack(">qi", 0, 3) + b"\0" * 20))
    assert too_small.value.corrupt


def test_inner_message_checks() -> None:
    inner = bytearray()
    write_message(inner, 0, 1, 0, 5, None, b"x")  # magic 1 inside a magic 0 wrapper
    from protocol.records.legacy_compression import legacy_compress

    wrapper = bytearray()
    write_message(wrapper, 0, 0, Compression.GZIP, -1, None, legacy_compress(1, inner, 0))
    with pytest.raises(InvalidBatch, match="magic"):
        deep(bytes(wrapper))
    zstd = bytearray()
    write_message(zstd, 0, 1, Compression.ZSTD, 5, None, b"anything")
    with pytest.raises(UnsupportedCompression):
        up_convert(bytes(zstd))


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_what_is_written(kafka_python: Any, magic: int, codec: int) -> None:
    parsed = []
    memory = kafka_python(message_set(magic, 4, codec))
    while memory.has_next():
        for r in memory.next_batch():
            parsed.append((r.offset, r.timestamp, r.key, r.value))
    assert parsed == [
        (r.offset, r.timestamp if magic else None, r.key, r.value) for r in records(4)
    ]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_what_kafka_python_writes_is_read(kafka_python: Any, magic: int, codec: int) -> None:
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for r in records(4):
        builder.append(r.offset, timestamp=r.timestamp if magic else None, key=r.key, value=r.value)
    got = deep(bytes(builder.build()))
    assert [(m.key, m.value) for m in got] == [(r.key, r.value) for r in records(4)]
    if magic == 1:
        assert [m.timestamp for m in got] == [r.timestamp for r in records(4)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_up_conversion(magic: int, codec: int) -> None:
    data = message_set(magic, 3, codec) + message_set(magic, 2)  # a wrapper, then two more
    up = up_convert(data)
    header, got = read_batch(up.batch)
    assert up.records == 5 and up.header == header
    assert (header.base_offset, header.compression, header.producer_id) == (0, codec, -1)
    assert not header.is_log_append_time
    assert [r.offset_delta for r in got] == [0, 1, 2, 3, 4]
    stamps = [header.base_timestamp + r.timestamp_delta for r in got]
    assert stamps == ([-1] * 5 if magic == 0 else [1000, 1001, 1002, 1000, 1001])
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in records(3) + records(2)]


def test_up_conversion_refusals() -> None:
    with pytest.raises(InvalidBatch, match="magic"):
        up_convert(message_set(0, 1) + message_set(1, 1))
    with pytest.raises(InvalidBatch, match="no whole message"):
        up_convert(message_set(0, 1)[:-3])
    # a partial message after whole ones is left out
    assert up_convert(message_set(0, 2) + message_set(0, 1)[:-3]).records == 2


def v2_batches() -> bytes:
    plain = build_batch(
        [SimpleRecord(b"a%d" % i, b"x%d" % i, timestamp=500 + i) for i in range(4)],
        base_offset=10,
    )
    squeezed = build_batch(
        [SimpleRecord(None, b"y%d" % i, timestamp=600 + i) for i in range(3)],
        base_offset=14,
        compression=Compression.LZ4,
    )
    marker = build_batch(
        [control_record(ControlType.COMMIT, 0, 700)],
        base_offset=17,
        producer_id=3,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )
    stamped = build_batch(
        [SimpleRecord(b"z", b"z", timestamp=1)],
        base_offset=18,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=9999,
    )
    return bytes(plain + squeezed + marker + stamped)


@pytest.mark.parametrize("magic", [0, 1])
def test_down_conversion_offsets_timestamps_and_control_batches(magic: int) -> None:
    out = down_convert(v2_batches(), magic, 12)
    shallow = [m for _, m in iter_messages(out)]
    # the uncompressed batch from the fetch offset on; the lz4 batch whole in one wrapper;
    # the control batch left out
    assert [(m.offset, m.compression) for m in shallow] == [(12, 0), (13, 0), (16, 3), (18, 0)]
    got = [d for m in shallow for d in deep_messages(m)]
    assert [d.offset for d in got] == [12, 13, 14, 15, 16, 18]
    assert [d.value for d in got] == [b"x2", b"x3", b"y0", b"y1", b"y2", b"z"]
    assert {d.magic for d in got} == {magic}
    if magic == 1:
        assert [d.timestamp for d in got] == [502, 503, 600, 601, 602, 9999]
        assert shallow[-1].timestamp_type is TimestampType.LOG_APPEND_TIME
    else:
        assert {d.timestamp for d in got} == {-1}


def test_down_conversion_budget_keeps_the_first_batch_whole() -> None:
    data = v2_batches()
    small = DownConverter(1, 10, budget=1)
    small.feed(data)
    assert small.done and [m.offset for _, m in iter_messages(small.output)] == [10, 11, 12, 13]
    assert small.records == 4
    # fed a batch cut short, the converter takes the whole ones and waits for the rest
    partial = DownConverter(1, 10, budget=1 << 20)
    first = read_batch(data)[0].size
    assert partial.feed(data[: first + 30]) == first


def test_down_conversion_of_zstd() -> None:
    zstd = build_batch([SimpleRecord(b"k", b"v")], compression=Compression.ZSTD)
    with pytest.raises(UnsupportedCompression):
        down_convert(bytes(zstd), 1, 0)
    plain = build_batch([SimpleRecord(b"k", b"v")])
    zstd_after = build_batch(
        [SimpleRecord(b"k", b"v")], base_offset=1, compression=Compression.ZSTD
    )
    out = down_convert(bytes(plain + zstd_after), 1, 0)
    assert [m.offset for _, m in iter_messages(out)] == [0]  # stops before the zstd batch


def test_read_message_checks_size_fields() -> None:
    data = bytearray(message_set(1, 1))
    struct.pack_into(">i", data, 8, 5)  # below magic 1's minimum
    with pytest.raises(InvalidBatch):
        read_message(data)


def test_down_conversion_pauses_between_pieces_of_work() -> None:
    from protocol.records.conversion import PAUSE_EVERY

    records = [SimpleRecord(b"k", b"v%d" % i) for i in range(2 * PAUSE_EVERY + 1)]
    pauses: list[int] = []
    converter = DownConverter(1, 0, 1 << 20)
    converter.pause = lambda: pauses.append(converter.records)
    converter.feed(bytes(build_batch(records)))
    assert len(pauses) == 3  # uncompressed: every PAUSE_EVERY messages
    converter.feed(bytes(build_batch(records, base_offset=200, compression=Compression.GZIP)))
    assert len(pauses) == 4  # a wrapper is written whole: one pause after it
    assert converter.records == 2 * len(records)
