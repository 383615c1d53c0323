"""The vectorized record decoder against the protocol's exact decoder: same rows for
every codec, null keys and values, headers, LogAppendTime, long varints, and both ways
of walking records; offset ranges are exact slices."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.records import Compression, SimpleRecord, TimestampType, build_batch, read_header
from spark_jobs import arrow_records
from spark_jobs.arrow_records import RECORD_SCHEMA, Batch, decode


def batch(records: list[SimpleRecord], base_offset: int, **kw: object) -> Batch:
    data = bytes(build_batch(records, base_offset=base_offset, **kw))  # type: ignore[arg-type]
    return Batch.at(data, 0, read_header(data))


def exact(batches: list[Batch]) -> pa.RecordBatch:
    return arrow_records._decode_exact(batches)


def simple(n: int, *, size: int = 10, headers: bool = False) -> list[SimpleRecord]:
    return [
        SimpleRecord(
            None if i % 3 == 0 else b"k%d" % i,
            None if i % 5 == 0 else bytes([i % 256]) * size,
            [("h", b"x")] if headers and i % 2 else (),
            1_000 + 7 * i - (i % 3) * 50,  # deltas of both signs
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("codec", list(Compression))
def test_every_codec_decodes_as_the_exact_decoder_does(codec: Compression) -> None:
    batches = [batch(simple(20), 0, compression=codec), batch(simple(7), 20, compression=codec)]
    assert decode(batches, 0, 100).equals(exact(batches))


def test_headers_log_append_time_and_plain_batches_mix_in_offset_order() -> None:
    batches = [
        batch(simple(5), 0),
        batch(simple(6, headers=True), 5, compression=Compression.ZSTD),
        batch(
            simple(4),
            11,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            log_append_time=99_000,
        ),
    ]
    rows = decode(batches, 0, 100)
    assert rows.equals(exact(batches))
    assert rows.column("offset").to_pylist() == list(range(15))
    assert rows.column("timestampType").to_pylist()[11:] == [1] * 4
    assert rows.schema == RECORD_SCHEMA


def test_large_fields_and_offset_deltas_need_multi_byte_varints() -> None:
    batches = [batch(simple(300, size=9000), 0), batch(simple(70, size=100), 300)]
    assert decode(batches, 0, 1000).equals(exact(batches))


def test_lockstep_and_record_by_record_walks_agree() -> None:
    many_small = [batch(simple(3), 3 * i) for i in range(40)]  # chooses lockstep
    few_large = [batch(simple(200), 0)]  # chooses record by record
    for batches in (many_small, few_large):
        assert decode(batches, 0, 10**6).equals(exact(batches))


def test_a_range_is_exactly_its_offsets() -> None:
    batches = [batch(simple(10), 0), batch(simple(10), 10)]
    assert decode(batches, 7, 13).column("offset").to_pylist() == [7, 8, 9, 10, 11, 12]
    assert decode(batches, 20, 30).num_rows == 0
    assert decode([], 0, 1).num_rows == 0


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.none() | st.binary(max_size=200),
            st.none() | st.binary(max_size=3000),
            st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2),
            st.integers(0, 2**40),
        ),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(list(Compression)),
)
def test_any_records_decode_as_the_exact_decoder_does(
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]],
    codec: Compression,
) -> None:
    simple_records = [SimpleRecord(k, v, h, t) for k, v, h, t in records]
    half = len(simple_records) // 2
    batches = [b for b in (simple_records[:half], simple_records[half:]) if b]
    built = [batch(b, 0 if i == 0 else half, compression=codec) for i, b in enumerate(batches)]
    assert decode(built, 0, 10**6).equals(exact(built))
