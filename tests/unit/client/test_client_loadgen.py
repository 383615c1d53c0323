"""Pre-built load: batch sizing, valid batches, requests that differ only by correlation id."""

from __future__ import annotations

import protocol
from client.connection import PREFIX_SIZE, PrebuiltRequest
from client.loadgen import ProducePlan, build_batches, records_per_batch
from protocol import ApiKey
from protocol.records import Compression, read_batch, validate


def test_records_per_batch_fill_the_batch_or_follow_linger() -> None:
    # 100-byte records: about 110 bytes each in a 64 KiB batch
    full = records_per_batch(100, 65536, -1, 5)
    assert 560 <= full <= 600
    # a cap of 10k records/s with linger 5 ms: 50 records arrive before the batch goes
    assert records_per_batch(100, 65536, 10_000, 5) == 50
    assert records_per_batch(100, 65536, 10, 5) == 1
    assert records_per_batch(100_000, 16384, -1, 0) == 1


def test_batches_fit_the_batch_size_and_hold_random_letters() -> None:
    per = records_per_batch(100, 16384, -1, 0)
    batches = build_batches(100, per, 3, timestamp_ms=1234, seed=7)
    assert len(set(batches)) == 3
    for b in batches:
        assert len(b) <= 16384
        header, records = read_batch(b)
        assert header.records_count == per
        assert all(len(r.value or b"") == 100 and r.key is None for r in records)
        assert all((r.value or b"").isalpha() and (r.value or b"").isupper() for r in records)
    zstd = build_batches(100, per, 1, compression=Compression.ZSTD, timestamp_ms=1)[0]
    assert validate(zstd).compression == Compression.ZSTD and len(zstd) < len(batches[0])


def test_prebuilt_request_changes_only_the_correlation_id() -> None:
    batch = build_batches(10, 5, 1, timestamp_ms=1)[0]
    from client.produce import produce_body

    req = PrebuiltRequest.encode(ApiKey.PRODUCE, 9, "perf", produce_body("t", 2, batch, 1, 100))
    a = bytes(req.head_with(17)) + req.tail
    b = bytes(req.head_with(18)) + req.tail
    assert a[PREFIX_SIZE:] == b[PREFIX_SIZE:] and a[:8] == b[:8] and a != b
    decoded = protocol.decode_request(a[4:])
    assert decoded.header.correlation_id == 17 and decoded.header.client_id == "perf"
    data = decoded.body.topic_data[0]
    assert data.name == "t" and data.partition_data[0].index == 2
    assert bytes(data.partition_data[0].records) == batch
    assert int.from_bytes(a[:4], "big") == len(a) - 4


def test_plan_goes_round_robin_and_ends_with_a_short_batch() -> None:
    plan = ProducePlan("t", [0, 1, 2], record_size=10, per_batch=4, distinct=2, acks=1,
                       timeout_ms=100, api_version=9, timestamp_ms=1)  # fmt: skip
    sends = [plan.next() for _ in range(6)]
    assert [s.partition for s in sends] == [0, 1, 2, 0, 1, 2]
    assert all(s.records == 4 and s.payload_bytes == 40 for s in sends)
    # distinct batches alternate after a full round of partitions
    assert sends[0].request.tail != sends[3].request.tail
    last = plan.next(records_left=3)
    assert last.records == 3
    body = protocol.decode_request(bytes(last.request.head_with(0))[4:] + last.request.tail).body
    assert read_batch(body.topic_data[0].partition_data[0].records)[0].records_count == 3
