"""Batches written by kafka-python and aiokafka decode with protocol.records, and batches
written by protocol.records decode with both of them, for every codec (kafka-python's
snappy goes through python-snappy, a dev dependency).
"""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder

from protocol.records import (
    HEADER_SIZE,
    Compression,
    ControlType,
    SimpleRecord,
    build_batch,
    control_record,
    read_batch,
    validate_records,
)
from protocol.records.compression import XERIAL_MAGIC

T0 = 1_700_000_000_000
CODECS = list(Compression)

# (key, value, headers, timestamp): compressible values, so that the clients, which fall
# back to no compression when it does not pay, keep the codec asked for.
ROWS: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]] = [
    (b"key-%d" % i, b"payload %d " % i * 40, [("trace", b"%d" % i), ("empty", None)], T0 + i)
    for i in range(30)
] + [
    (None, b"no key " * 30, [], T0 + 7),
    (b"no value", None, [], T0 - 3),
]


def _client_batch(builder_class: Any, codec: Compression) -> bytes:
    builder = builder_class(
        magic=2,
        compression_type=int(codec),
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for offset, (key, value, headers, ts) in enumerate(ROWS):
        assert builder.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


def _client_rows(batch_class: Any, data: bytes) -> list[tuple[Any, ...]]:
    batch = batch_class(data)
    assert batch.validate_crc()
    return [(r.key, r.value, list(r.headers), r.timestamp) for r in batch]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("builder_class", [KpBuilder, AioBuilder], ids=["kafka-python", "aiokafka"])
def test_client_batches_decode_here(builder_class: Any, codec: Compression) -> None:
    data = _client_batch(builder_class, codec)
    if codec is Compression.SNAPPY:  # both clients frame snappy the xerial way, as Java does
        assert data[HEADER_SIZE : HEADER_SIZE + 8] == XERIAL_MAGIC
    [(_, header)] = validate_records(data, from_client=True).batches
    assert header.compression == codec
    header, records = read_batch(data)
    assert header.records_count == len(ROWS)
    decoded = [(r.key, r.value, r.headers, r.timestamp(header)) for r in records]
    assert decoded == ROWS
    assert [r.offset(header) for r in records] == list(range(len(ROWS)))


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("batch_class", [KpBatch, AioBatch], ids=["kafka-python", "aiokafka"])
def test_batches_written_here_decode_in_clients(batch_class: Any, codec: Compression) -> None:
    data = bytes(
        build_batch(
            [SimpleRecord(k, v, h, ts) for k, v, h, ts in ROWS], compression=codec, base_offset=500
        )
    )
    batch = batch_class(data)
    assert batch.compression_type == codec
    assert batch.base_offset == 500
    assert _client_rows(batch_class, data) == ROWS
    assert [r.offset for r in batch_class(data)] == list(range(500, 500 + len(ROWS)))


@pytest.mark.parametrize("batch_class", [KpBatch, AioBatch], ids=["kafka-python", "aiokafka"])
def test_control_batches_written_here_are_control_batches_for_clients(batch_class: Any) -> None:
    marker = control_record(ControlType.ABORT, coordinator_epoch=3, timestamp=T0)
    data = bytes(
        build_batch(
            [marker], is_control=True, is_transactional=True, producer_id=9, producer_epoch=0
        )
    )
    batch = batch_class(data)
    assert batch.is_control_batch and batch.is_transactional
    assert batch.producer_id == 9
