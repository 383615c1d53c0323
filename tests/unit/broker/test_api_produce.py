"""The Produce handler, through encoded requests and responses: versions 0-2 with magic
0/1 message sets up-converted (and their CRCs checked),
acks 0 (never a response), 1 (at once) and all (at once, or a Future that the purgatory
completes), transactional batches refused, per-partition errors on the wire."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import protocol
from broker.apis import produce
from broker.apis.services import ReplicaAccess
from protocol import ApiKey, ErrorCode
from protocol.messages import ProduceRequest
from protocol.records import BatchBuilder, Compression, read_batch
from protocol.records.legacy import LegacyRecord, write_message_set
from protocol.values import TopicPartition
from tests.records import record_batch
from tests.unit.broker.broker_helpers import local_replicas, partition_state

TOPIC = "payments"


def batch(n: int = 1, *, transactional: bool = False) -> bytes:
    return record_batch(
        n,
        producer_id=5 if transactional else -1,
        producer_epoch=0 if transactional else -1,
        base_sequence=0 if transactional else -1,
        is_transactional=transactional,
    )


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ReplicaAccess]:
    replicas = local_replicas(tmp_path)
    partitions = (TopicPartition(TOPIC, p) for p in (0, 1))
    replicas.become({TOPIC: uuid.uuid4()}, *(partition_state(tp) for tp in partitions))
    yield replicas.services().replicas
    replicas.log_manager.shutdown()


def request(version: int, partitions: dict[int, bytes | None], *, acks: int = 1) -> Any:
    body = ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=TOPIC,
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=p, records=r)
                    for p, r in partitions.items()
                ],
            )
        ],
    )
    # Through the codec, as the network hands it over (records become memoryviews).
    frame = protocol.encode_request(protocol.make_request(ApiKey.PRODUCE, version, 7, "t", body))
    return protocol.decode_request(frame)


def on_the_wire(response: Any) -> Any:
    frame = protocol.encode_response(response)
    return protocol.decode_response(frame, ApiKey.PRODUCE, response.api_version).body


def partitions(body: Any) -> dict[int, Any]:
    return {p.index: p for t in body.responses for p in t.partition_responses}


def log_end(ctx: ReplicaAccess, p: int) -> int:
    log = ctx.replica_manager.log_manager.get_log(TopicPartition(TOPIC, p))
    assert log is not None
    end: int = log.log_end_offset
    return end


def message_set(magic: int, n: int, *, compression: int = 0, first_ts: int = 1000) -> bytes:
    out = bytearray()
    records = [LegacyRecord(i, first_ts + i, b"k%d" % i, b"v%d" % i) for i in range(n)]
    write_message_set(out, records, magic=magic, compression=compression)
    return bytes(out)


@pytest.mark.parametrize(
    ("version", "magic", "compression"),
    [(0, 0, 0), (1, 0, 1), (2, 1, 0), (2, 1, 3), (0, 0, 3), (1, 1, 2)],
)
async def test_versions_below_3_append_legacy_message_sets_as_v2_batches(
    ctx: ReplicaAccess, version: int, magic: int, compression: int
) -> None:
    await produce.handle(ctx, request(9, {0: batch(2)}))
    response = await produce.handle(
        ctx, request(version, {0: message_set(magic, 3, compression=compression)})
    )
    answer = partitions(on_the_wire(response))
    assert (answer[0].error_code, answer[0].base_offset) == (0, 2)
    assert log_end(ctx, 0) == 5
    log = ctx.replica_manager.log_manager.get_log(TopicPartition(TOPIC, 0))
    assert log is not None
    data = log.read_bytes(2, 1 << 20)
    header, records = read_batch(data)
    assert (header.magic, header.base_offset, header.compression) == (2, 2, compression)
    assert [(r.key, r.value) for r in records] == [(b"k0", b"v0"), (b"k1", b"v1"), (b"k2", b"v2")]
    # magic 0 has no timestamps: CreateTime keeps NO_TIMESTAMP; magic 1 keeps its own
    expected = [-1, -1, -1] if magic == 0 else [1000, 1001, 1002]
    assert [header.base_timestamp + r.timestamp_delta for r in records] == expected
    assert await produce.handle(ctx, request(version, {1: message_set(magic, 1)}, acks=0)) is None
    assert log_end(ctx, 1) == 1


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_versions_below_3_check_every_crc(ctx: ReplicaAccess, version: int) -> None:
    damaged = bytearray(message_set(1, 2))
    damaged[-1] ^= 0xFF  # the last message's value: its CRC-32 no longer matches
    inner = bytearray(message_set(0, 2, compression=1))
    response = await produce.handle(ctx, request(version, {0: bytes(damaged), 1: batch(1)}))
    answer = partitions(on_the_wire(response))
    assert answer[0].error_code == ErrorCode.CORRUPT_MESSAGE
    assert (answer[1].error_code, answer[1].base_offset) == (0, 0)  # a v2 batch is taken too
    assert log_end(ctx, 0) == 0
    inner[-3] ^= 0xFF  # inside the gzip stream: the wrapper's CRC fails first
    response = await produce.handle(ctx, request(version, {0: bytes(inner)}))
    assert partitions(on_the_wire(response))[0].error_code == ErrorCode.CORRUPT_MESSAGE


async def test_versions_below_3_refuse_mixed_magics(ctx: ReplicaAccess) -> None:
    mixed = message_set(0, 1) + message_set(1, 1)
    response = await produce.handle(ctx, request(2, {0: mixed}))
    assert partitions(on_the_wire(response))[0].error_code == ErrorCode.INVALID_RECORD
    assert log_end(ctx, 0) == 0


async def test_conversions_are_counted(ctx: ReplicaAccess) -> None:
    await produce.handle(ctx, request(1, {0: message_set(0, 4), 1: message_set(0, 2)}))
    cell = ctx.metrics.produce_message_conversions.labels(topic=TOPIC)
    assert cell.value == 6
    assert ctx.metrics.message_conversions_time.labels(api="Produce").count == 1


async def test_acks_1_answers_offsets(ctx: ReplicaAccess) -> None:
    await produce.handle(ctx, request(9, {0: batch(3)}))
    response = await produce.handle(ctx, request(9, {0: batch(2), 1: batch(1)}))
    assert isinstance(response, protocol.Response)
    assert response.header.correlation_id == 7
    answer = partitions(on_the_wire(response))
    assert (answer[0].error_code, answer[0].base_offset, answer[0].log_start_offset) == (0, 3, 0)
    assert answer[0].log_append_time_ms == -1
    assert (answer[1].error_code, answer[1].base_offset) == (0, 0)


async def test_acks_0_never_answers_even_on_error(ctx: ReplicaAccess) -> None:
    assert await produce.handle(ctx, request(9, {0: batch(2)}, acks=0)) is None
    assert log_end(ctx, 0) == 2
    assert await produce.handle(ctx, request(9, {0: b"garbage"}, acks=0)) is None
    assert log_end(ctx, 0) == 2


async def test_acks_all_answers_at_once_when_leader_alone(ctx: ReplicaAccess) -> None:
    response = await produce.handle(ctx, request(9, {0: batch()}, acks=-1))
    assert isinstance(response, protocol.Response)
    assert partitions(on_the_wire(response))[0].error_code == ErrorCode.NONE


async def test_acks_all_waiting_returns_future_completed_by_purgatory(
    ctx: ReplicaAccess, monkeypatch: pytest.MonkeyPatch
) -> None:
    partition = ctx.replica_manager.get_partition(TOPIC, 0)
    assert partition is not None
    monkeypatch.setattr(partition, "maybe_increment_high_watermark", lambda: False)
    result = await produce.handle(ctx, request(9, {0: batch()}, acks=-1))
    assert isinstance(result, asyncio.Future) and not result.done()
    assert partition.log is not None
    partition.log.update_high_watermark(1)
    ctx.replica_manager.produce_purgatory.check_and_complete(TopicPartition(TOPIC, 0))
    assert result.done()
    assert partitions(on_the_wire(result.result()))[0].error_code == ErrorCode.NONE


async def test_a_waiting_produce_makes_its_future_on_the_brokers_loop(
    ctx: ReplicaAccess, monkeypatch: pytest.MonkeyPatch
) -> None:
    partition = ctx.replica_manager.get_partition(TOPIC, 0)
    assert partition is not None
    monkeypatch.setattr(partition, "maybe_increment_high_watermark", lambda: False)
    running = asyncio.get_running_loop()
    # the test's stand-in for the broker's loop: the running one
    assert ctx.event_loop.create_future().get_loop() is running
    brokers = asyncio.new_event_loop()
    try:
        on_brokers = dataclasses.replace(ctx, event_loop=brokers)
        result = await produce.handle(on_brokers, request(9, {0: batch()}, acks=-1))
        assert isinstance(result, asyncio.Future) and result.get_loop() is brokers
    finally:
        brokers.close()


async def test_transactional_batches_are_appended_once_transactions_are_on(
    ctx: ReplicaAccess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(produce, "transactions_enabled", lambda config: True)
    response = await produce.handle(ctx, request(9, {0: batch(), 1: batch(2, transactional=True)}))
    answer = partitions(on_the_wire(response))
    assert {p.error_code for p in answer.values()} == {ErrorCode.NONE}
    assert (log_end(ctx, 0), log_end(ctx, 1)) == (1, 2)
    log = ctx.replica_manager.log_manager.get_log(TopicPartition(TOPIC, 1))
    assert log is not None and log.producer_state.first_unstable_offset == 0  # open


async def test_transactional_batches_are_refused_whole(
    ctx: ReplicaAccess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(produce, "transactions_enabled", lambda config: False)
    response = await produce.handle(ctx, request(9, {0: batch(), 1: batch(transactional=True)}))
    answer = partitions(on_the_wire(response))
    assert {p.error_code for p in answer.values()} == {
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    }
    assert log_end(ctx, 0) == 0


async def test_a_transactional_batch_refuses_the_request_even_when_malformed(
    ctx: ReplicaAccess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(produce, "transactions_enabled", lambda config: False)
    trailing = batch(transactional=True) + b"\x00\x01"  # not exactly one batch
    response = await produce.handle(ctx, request(9, {0: batch(), 1: trailing}))
    answer = partitions(on_the_wire(response))
    assert {p.error_code for p in answer.values()} == {
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    }
    assert log_end(ctx, 0) == 0


@pytest.mark.parametrize(("version", "code"), [(3, 76), (6, 76), (7, 0), (9, 0)])
async def test_zstd_is_a_rule_of_the_request_version(
    ctx: ReplicaAccess, version: int, code: int
) -> None:
    builder = BatchBuilder(compression=Compression.ZSTD)
    builder.append(1_000, b"k", b"v" * 50)
    response = await produce.handle(ctx, request(version, {0: bytes(builder.build())}))
    assert partitions(on_the_wire(response))[0].error_code == code
    assert log_end(ctx, 0) == (1 if code == 0 else 0)


async def test_bad_records_error_on_the_wire_with_message(ctx: ReplicaAccess) -> None:
    damaged = bytearray(batch())
    damaged[-1] ^= 0x55
    response = await produce.handle(ctx, request(8, {0: bytes(damaged), 1: batch()}))
    answer = partitions(on_the_wire(response))
    assert answer[0].error_code == ErrorCode.CORRUPT_MESSAGE
    assert answer[0].base_offset == -1 and "CRC" in answer[0].error_message
    assert answer[1].error_code == ErrorCode.NONE and answer[1].error_message is None


async def test_unknown_topic(ctx: ReplicaAccess) -> None:
    body = request(9, {0: batch()}).body
    body.topic_data[0].name = "missing"
    req = protocol.make_request(ApiKey.PRODUCE, 9, 1, "t", body)
    answer = on_the_wire(await produce.handle(ctx, req))
    assert answer.responses[0].name == "missing"
    assert answer.responses[0].partition_responses[0].error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )


async def test_log_append_time_topic_stamps_up_converted_messages(ctx: ReplicaAccess) -> None:
    """A LogAppendTime topic gives an old producer's messages the append time, as Kafka
    does (magic 0 sent none, magic 1 sent its own): the answer (v2) carries it too."""
    log = ctx.replica_manager.log_manager.get_log(TopicPartition(TOPIC, 0))
    assert log is not None
    log.update_config(dataclasses.replace(log.config, message_timestamp_type="LogAppendTime"))
    for magic in (0, 1):
        response = await produce.handle(ctx, request(2, {0: message_set(magic, 2)}))
        answer = partitions(on_the_wire(response))[0]
        assert answer.error_code == 0 and answer.log_append_time_ms > 0
        data = log.read_bytes(answer.base_offset, 1 << 20)
        header, _ = read_batch(data)
        assert header.is_log_append_time
        assert header.max_timestamp == answer.log_append_time_ms
