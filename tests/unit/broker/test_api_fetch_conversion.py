"""Fetch v0-3 through the handler: the read down-converted to magic 0 (v0-1) or 1 (v2-3)
with the log's offsets and timestamps, control batches left out, the output bounded by
the read, message.downconversion.enable, zstd, the conversion metrics, and a long poll
answered through the Future once an append arrives."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import protocol
from broker.apis import fetch
from broker.apis.services import ReplicaAccess
from protocol import ApiKey, ErrorCode
from protocol.messages import FetchRequest
from protocol.records import Compression, SimpleRecord, build_batch
from protocol.records.legacy import deep_messages, iter_messages
from tests.unit.broker.test_api_fetch import TOPIC, A, make_ctx, on_the_wire, partitions, produce


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ReplicaAccess]:
    context = make_ctx(tmp_path)
    yield context
    context.replica_manager.log_manager.shutdown()


def batch(n: int, first_ts: int, codec: Compression = Compression.NONE, size: int = 10) -> bytes:
    records = [
        SimpleRecord(b"k%d" % i, bytes([65 + i % 26]) * size, timestamp=first_ts + i)
        for i in range(n)
    ]
    return bytes(build_batch(records, compression=codec))


def old_request(
    version: int, offset: int = 0, partition_max_bytes: int = 1 << 20, **kw: Any
) -> Any:
    body = FetchRequest(
        replica_id=-1,
        max_wait_ms=kw.get("max_wait_ms", 0),
        min_bytes=kw.get("min_bytes", 1),
        max_bytes=1 << 24,
        topics=[
            FetchRequest.FetchTopic(
                topic=TOPIC,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=0, fetch_offset=offset, partition_max_bytes=partition_max_bytes
                    )
                ],
            )
        ],
    )
    frame = protocol.encode_request(protocol.make_request(ApiKey.FETCH, version, 3, "c", body))
    return protocol.decode_request(frame)


async def answer(ctx: ReplicaAccess, req: Any) -> Any:
    result = await fetch.handle(ctx, req)
    assert isinstance(result, asyncio.Future)
    return partitions(on_the_wire(await asyncio.wait_for(result, 5)))[0]


def messages(records: Any) -> list[Any]:
    return [d for _, m in iter_messages(bytes(records)) for d in deep_messages(m)]


@pytest.mark.parametrize(("version", "magic"), [(0, 0), (1, 0), (2, 1), (3, 1)])
async def test_old_versions_read_the_magic_they_know(
    ctx: ReplicaAccess, version: int, magic: int
) -> None:
    produce(ctx, A, batch(3, 1000))
    produce(ctx, A, batch(2, 2000, Compression.GZIP))
    part = await answer(ctx, old_request(version, offset=1))
    assert (part.error_code, part.high_watermark) == (ErrorCode.NONE, 5)
    got = messages(part.records)
    # from the fetch offset in the plain batch; the gzip batch whole in one wrapper
    assert [(m.offset, m.magic, m.key) for m in got] == [
        (1, magic, b"k1"), (2, magic, b"k2"), (3, magic, b"k0"), (4, magic, b"k1"),
    ]  # fmt: skip
    expected = [1001, 1002, 2000, 2001] if magic == 1 else [-1] * 4
    assert [m.timestamp for m in got] == expected
    cell = ctx.metrics.fetch_message_conversions.labels(topic=TOPIC)
    assert cell.value == 4
    assert ctx.metrics.message_conversions_time.labels(api="Fetch").count == 1


async def test_control_batches_are_left_out(ctx: ReplicaAccess) -> None:
    from protocol.records.control import ControlType, control_record
    from protocol.records.validation import validate_records

    produce(ctx, A, batch(1, 10))
    log = ctx.replica_manager.log_manager.get_log(A)
    assert log is not None
    marker = build_batch(
        [control_record(ControlType.ABORT, 0, 20)],
        base_offset=1,
        producer_id=7,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )
    log.append_as_follower(validate_records(bytes(marker), from_client=False))
    log.update_high_watermark(2)
    produce(ctx, A, batch(1, 30))
    part = await answer(ctx, old_request(2))
    assert [m.offset for m in messages(part.records)] == [0, 2]


async def test_output_is_bounded_by_the_read(ctx: ReplicaAccess) -> None:
    for i in range(5):
        produce(ctx, A, batch(4, 100 * i, size=200))
    one_batch = len(batch(4, 0, size=200))
    part = await answer(ctx, old_request(3, partition_max_bytes=2 * one_batch))
    got = messages(part.records)
    assert len(bytes(part.records)) <= 2 * one_batch
    assert [m.offset for m in got] == list(range(len(got))) and 0 < len(got) <= 8
    # a limit below one batch still gets the first batch whole
    tiny = await answer(ctx, old_request(3, partition_max_bytes=10))
    assert [m.offset for m in messages(tiny.records)] == [0, 1, 2, 3]


async def test_downconversion_disabled_answers_unsupported_version(ctx: ReplicaAccess) -> None:
    produce(ctx, A, batch(2, 0))
    log = ctx.replica_manager.log_manager.get_log(A)
    assert log is not None
    log.update_config(dataclasses.replace(log.config, message_downconversion_enable=False))
    part = await answer(ctx, old_request(1))
    assert part.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert bytes(part.records or b"") == b""
    v4 = partitions(on_the_wire(await fetch.handle(ctx, old_request(4))))[0]
    assert v4.error_code == ErrorCode.NONE and bytes(v4.records)[16] == 2


async def test_zstd_cannot_be_down_converted(ctx: ReplicaAccess) -> None:
    produce(ctx, A, batch(2, 0, Compression.ZSTD))
    part = await answer(ctx, old_request(3))
    assert part.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


async def test_long_poll_is_converted_when_it_completes(ctx: ReplicaAccess) -> None:
    result = await fetch.handle(ctx, old_request(2, max_wait_ms=5000))
    assert isinstance(result, asyncio.Future) and not result.done()
    produce(ctx, A, batch(1, 42))
    body = on_the_wire(await asyncio.wait_for(result, 5))
    got = messages(partitions(body)[0].records)
    assert [(m.offset, m.timestamp, m.magic) for m in got] == [(0, 42, 1)]
