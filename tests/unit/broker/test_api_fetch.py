"""The Fetch handler: file regions in the response (record bytes never read into Python),
empty records never null, sessions declined, fetch.max.bytes, isolation levels, and long
polls answered through a Future."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import protocol
from broker.apis import fetch
from broker.apis.services import ReplicaAccess
from broker.network import Codec, ResponseParts
from broker.produce_records import check_produce_records
from protocol import ApiKey, ErrorCode
from protocol.messages import FetchRequest
from protocol.records import iter_batches
from protocol.values import TopicPartition
from storage import FileRegion
from tests.records import record_batch
from tests.unit.broker.broker_helpers import HandlerRequest, local_replicas, partition_state
from timer.clock import MockClock

TOPIC = "clicks"
A = TopicPartition(TOPIC, 0)
B = TopicPartition(TOPIC, 1)


def batch(n: int = 1, value_size: int = 50) -> bytes:
    return record_batch(n, key=None, value=lambda i: bytes([i % 251]) * value_size)


def make_ctx(tmp_path: Path, props: dict[str, str] | None = None) -> ReplicaAccess:
    replicas = local_replicas(tmp_path)
    replicas.become({TOPIC: uuid.uuid4()}, partition_state(A), partition_state(B))
    return replicas.services(props).replicas


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ReplicaAccess]:
    context = make_ctx(tmp_path)
    yield context
    context.replica_manager.log_manager.shutdown()


def produce(ctx: ReplicaAccess, tp: TopicPartition, records: bytes) -> None:
    ctx.replica_manager.append_records(
        {tp: check_produce_records(records, 9)},
        required_acks=1,
        timeout_ms=0,
        on_done=lambda r: None,
    )


def request(
    version: int = 12,
    offsets: dict[int, int] | None = None,
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 1 << 24,
    isolation_level: int = 0,
    session_id: int = 0,
    session_epoch: int = -1,
) -> Any:
    body = FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=[
            FetchRequest.FetchTopic(
                topic=TOPIC,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=p, fetch_offset=o, partition_max_bytes=1 << 20
                    )
                    for p, o in (offsets or {0: 0}).items()
                ],
            )
        ],
    )
    frame = protocol.encode_request(protocol.make_request(ApiKey.FETCH, version, 3, "c", body))
    return protocol.decode_request(frame)


def on_the_wire(response: Any, version: int = 12) -> Any:
    """Encode as the network does, read the file regions back, decode like a client (at
    ``version``, for an answer the handler encoded itself)."""
    pieces = []
    for piece in Codec.default().encode(response):
        if isinstance(piece, FileRegion):
            piece = piece.read()
        assert isinstance(piece, bytes)
        pieces.append(piece)
    frame = b"".join(pieces)
    if isinstance(response, protocol.Response):
        version = response.api_version
    return protocol.decode_response(frame, ApiKey.FETCH, version).body


def partitions(body: Any) -> dict[int, Any]:
    return {p.partition_index: p for t in body.responses for p in t.partitions}


@pytest.mark.parametrize("version", [4, 7, 11, 12])
async def test_records_and_offsets_on_the_wire(ctx: ReplicaAccess, version: int) -> None:
    produce(ctx, A, batch(2))
    produce(ctx, A, batch(3))
    response = await fetch.handle(ctx, request(version, {0: 0, 1: 0}))
    body = on_the_wire(response)
    assert body.error_code == ErrorCode.NONE and body.session_id == 0
    a, b = partitions(body)[0], partitions(body)[1]
    assert (a.error_code, a.high_watermark, a.last_stable_offset) == (0, 5, 5)
    assert a.log_start_offset == (0 if version >= 5 else -1)  # a v5 field
    assert a.preferred_read_replica == -1
    assert a.aborted_transactions is None
    headers = [h for _, h in iter_batches(bytes(a.records))]
    assert [(h.base_offset, h.records_count) for h in headers] == [(0, 2), (2, 3)]
    assert b.records is not None and len(b.records) == 0  # empty, never null


async def test_error_partitions_carry_empty_records(ctx: ReplicaAccess) -> None:
    body = on_the_wire(await fetch.handle(ctx, request(12, {0: 99})))
    p = partitions(body)[0]
    assert p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert p.records is not None and len(p.records) == 0


async def test_read_committed_gets_empty_aborted_list(ctx: ReplicaAccess) -> None:
    produce(ctx, A, batch())
    body = on_the_wire(await fetch.handle(ctx, request(12, isolation_level=1)))
    assert partitions(body)[0].aborted_transactions == []


@pytest.mark.parametrize(("session_id", "epoch"), [(0, -1), (0, 0), (77, -1), (77, 0)])
async def test_full_fetches_are_served_in_full(
    ctx: ReplicaAccess, session_id: int, epoch: int
) -> None:
    """Epoch -1 wants no session (id 0 answered); epoch 0 opens one (a new id)."""
    produce(ctx, A, batch())
    body = on_the_wire(
        await fetch.handle(ctx, request(12, session_id=session_id, session_epoch=epoch))
    )
    assert body.error_code == ErrorCode.NONE
    if epoch == 0:
        assert body.session_id not in (0, session_id)
    else:
        assert body.session_id == 0
    assert len(partitions(body)[0].records) == len(batch())


async def test_incremental_fetch_gets_session_not_found(ctx: ReplicaAccess) -> None:
    body = on_the_wire(await fetch.handle(ctx, request(12, session_id=77, session_epoch=3)))
    assert body.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert body.session_id == 0 and body.responses == []


async def test_fetch_max_bytes_caps_the_request(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, {"fetch.max.bytes": "1024"})
    try:
        one = batch(1, value_size=600)
        for _ in range(3):
            produce(ctx, A, one)
        body = on_the_wire(await fetch.handle(ctx, request(12, max_bytes=1 << 30)))
        assert len(partitions(body)[0].records) == 1024
    finally:
        ctx.replica_manager.log_manager.shutdown()


async def test_long_poll_returns_future_completed_by_append(ctx: ReplicaAccess) -> None:
    result = await fetch.handle(ctx, request(12, max_wait_ms=5000))
    assert isinstance(result, asyncio.Future) and not result.done()
    produce(ctx, A, batch(4))
    assert result.done()
    p = partitions(on_the_wire(result.result()))[0]
    assert p.high_watermark == 4 and len(p.records) == len(batch(4))


async def test_long_poll_times_out_empty(ctx: ReplicaAccess) -> None:
    result = await fetch.handle(ctx, request(12, max_wait_ms=500))
    assert isinstance(ctx.clock, MockClock) and isinstance(result, asyncio.Future)
    ctx.clock.advance(500)
    ctx.replica_manager.fetch_purgatory.advance_clock()
    p = partitions(on_the_wire(result.result()))[0]
    assert p.error_code == ErrorCode.NONE and len(p.records) == 0


async def test_record_bytes_never_enter_python(
    ctx: ReplicaAccess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The response's records are the segment's file region; serving them reads batch
    headers (to find the start) and never the records: os.read and region reads would
    raise, and everything pread stays within the first scan chunk."""
    big = [batch(1, value_size=100_000) for _ in range(3)]
    for records in big:
        produce(ctx, A, records)
    total = sum(len(b) for b in big)
    preads: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        data = real_pread(fd, n, offset)
        preads.append(len(data))
        return data

    def forbidden(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("record bytes were read into Python")

    monkeypatch.setattr(os, "pread", counting_pread)
    monkeypatch.setattr(os, "read", forbidden)
    monkeypatch.setattr(os, "preadv", forbidden)
    monkeypatch.setattr(FileRegion, "read", forbidden)
    response = await fetch.handle(ctx, request(12, {0: 1}))
    assert isinstance(response, protocol.Response)
    parts = protocol.encode_response_parts(response)
    regions = [p for p in parts if not isinstance(p, bytes)]
    assert len(regions) == 1 and isinstance(regions[0], FileRegion)
    assert len(regions[0]) == total - len(big[0])  # from the batch holding offset 1
    # Only the header scan touched the file: far less than one batch of records.
    assert sum(preads) <= 2 * 8192 < len(big[0])
    assert all(isinstance(p, bytes) for p in parts if p is not regions[0])


def follower_request(
    listener: str, version: int = 12, fetch_offset: int = 0, epoch: int = -1
) -> HandlerRequest:
    body = FetchRequest(
        replica_id=1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic=TOPIC,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=0,
                        current_leader_epoch=epoch,
                        fetch_offset=fetch_offset,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
    )
    return HandlerRequest(ApiKey.FETCH, version, body, listener)


async def test_follower_fetch_only_on_the_inter_broker_listener(tmp_path: Path) -> None:
    replicas = local_replicas(tmp_path)
    replicas.become({TOPIC: uuid.uuid4()}, partition_state(A, isr=(0, 1), replicas=(0, 1)))
    props = {
        "listeners": "CLIENT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
    }
    ctx = replicas.services(props).replicas
    produce(ctx, A, batch(2))
    try:
        forged = partitions(on_the_wire(await fetch.handle(ctx, follower_request("CLIENT"))))
        assert forged[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert len(forged[0].records) == 0
        partition = replicas.rm.partition_for(A)
        assert partition is not None and partition.followers[1].log_end_offset == -1  # untouched
        served = partitions(on_the_wire(await fetch.handle(ctx, follower_request("INTERNAL"))))
        assert served[0].error_code == ErrorCode.NONE and len(served[0].records) > 0
        # without inter.broker.listener.name every listener serves followers
        anywhere = replicas.services({}).replicas
        plain = partitions(on_the_wire(await fetch.handle(anywhere, follower_request("CLIENT"))))
        assert plain[0].error_code == ErrorCode.NONE
    finally:
        replicas.log_manager.shutdown()


@pytest.mark.parametrize("version", [4, 5, 7, 11, 12])
async def test_a_follower_answer_is_encoded_by_the_handler(tmp_path: Path, version: int) -> None:
    """Without errors the follower's answer comes pre-encoded (the lean writer); a client
    reads from it what the generic encoder would have sent. With an error it is a
    Response, which the error metric reads."""
    replicas = local_replicas(tmp_path)
    replicas.become({TOPIC: uuid.uuid4()}, partition_state(A, isr=(0, 1), replicas=(0, 1)))
    ctx = replicas.services({}).replicas
    produce(ctx, A, batch(2))
    produce(ctx, A, batch(3))
    try:
        answer = await fetch.handle(ctx, follower_request("CLIENT", version, fetch_offset=2))
        assert isinstance(answer, ResponseParts)
        body = on_the_wire(answer, version)
        assert body.error_code == ErrorCode.NONE and body.session_id == 0
        p = partitions(body)[0]
        assert (p.error_code, p.high_watermark, p.last_stable_offset) == (0, 2, 2)
        assert p.log_start_offset == (0 if version >= 5 else -1)
        assert p.aborted_transactions is None and p.preferred_read_replica == -1
        headers = [h for _, h in iter_batches(bytes(p.records))]
        assert [(h.base_offset, h.records_count) for h in headers] == [(2, 3)]
        # its position moves the high watermark; at the end there is nothing to send
        caught_up = await fetch.handle(ctx, follower_request("CLIENT", version, fetch_offset=5))
        assert isinstance(caught_up, ResponseParts)
        p = partitions(on_the_wire(caught_up, version))[0]
        assert (p.error_code, p.high_watermark, len(p.records)) == (0, 5, 0)
        fenced = await fetch.handle(ctx, follower_request("CLIENT", version, epoch=99))
        assert isinstance(fenced, protocol.Response)
        assert partitions(on_the_wire(fenced))[0].error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    finally:
        replicas.log_manager.shutdown()
