"""The OffsetForLeaderEpoch handler (v2-4): end offsets from the leader-epoch cache,
unknown epochs, fencing by current_leader_epoch, and partition errors."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import protocol
from broker.apis import offset_for_leader_epoch
from broker.config import BrokerConfig
from broker.context import BrokerContext
from broker.metadata_cache import MetadataCache
from broker.metrics import BrokerMetrics
from broker.replica_manager import ReplicaManager
from protocol import ApiKey, ErrorCode
from protocol.messages import LeaderAndIsrRequest, OffsetForLeaderEpochRequest
from protocol.records import BatchBuilder
from storage import LogManager, LogManagerConfig, TopicPartition
from timer import DelayedOperationPurgatory
from timer.clock import MockClock

TOPIC = "ledger"
A = TopicPartition(TOPIC, 0)
State = LeaderAndIsrRequest.LeaderAndIsrPartitionState


def state(partition: int, leader: int, epoch: int) -> Any:
    return State(
        topic_name=TOPIC,
        partition_index=partition,
        controller_epoch=1,
        leader=leader,
        leader_epoch=epoch,
        isr=[0, 1],
        partition_epoch=epoch,
        replicas=[0, 1],
    )


def append(rm: ReplicaManager, n: int) -> None:
    builder = BatchBuilder()
    for i in range(n):
        builder.append(i, None, b"v")
    rm.append_records(
        {A: bytes(builder.build())},
        required_acks=1,
        timeout_ms=0,
        api_version=9,
        on_done=lambda r: None,
    )


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[BrokerContext]:
    """Partition 0 led here: epoch 1 wrote offsets 0-2, epoch 3 offsets 3-4, epoch 5
    is current with nothing written yet. Partition 1 is followed."""
    clock = MockClock()
    log_manager = LogManager(LogManagerConfig(log_dirs=(str(tmp_path),)), clock)
    purgatories: list[DelayedOperationPurgatory[Any]] = [
        DelayedOperationPurgatory(name, clock=clock, reaper_enabled=False)
        for name in ("Produce", "Fetch")
    ]
    rm = ReplicaManager(
        0, log_manager, produce_purgatory=purgatories[0], fetch_purgatory=purgatories[1]
    )
    ids = {TOPIC: uuid.uuid4()}
    rm.become_leader_or_follower(1, 1, [state(0, 0, 1), state(1, 1, 1)], ids)
    append(rm, 3)
    rm.become_leader_or_follower(1, 1, [state(0, 0, 3)], ids)
    append(rm, 2)
    rm.become_leader_or_follower(1, 1, [state(0, 0, 5)], ids)
    yield BrokerContext(
        broker_id=0,
        cluster_id="test-cluster",
        config=BrokerConfig.from_properties({}),
        clock=clock,
        metrics=BrokerMetrics(),
        metadata_cache=MetadataCache(0),
        log_manager=log_manager,
        replica_manager=rm,
    )
    log_manager.shutdown()


async def ask(
    ctx: BrokerContext, queries: list[tuple[str, int, int, int]], *, version: int = 4
) -> list[tuple[int, int, int, int]]:
    """(topic, partition, current_leader_epoch, leader_epoch) -> (error, partition,
    epoch, end offset) as a client decodes them."""
    topics: dict[str, list[Any]] = {}
    for topic, p, current, epoch in queries:
        topics.setdefault(topic, []).append(
            OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                partition=p, current_leader_epoch=current, leader_epoch=epoch
            )
        )
    body = OffsetForLeaderEpochRequest(
        replica_id=-1,
        topics=[
            OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=t, partitions=ps)
            for t, ps in topics.items()
        ],
    )
    req = protocol.make_request(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, 1, "c", body)
    response = await offset_for_leader_epoch.handle(
        ctx, protocol.decode_request(protocol.encode_request(req))
    )
    frame = protocol.encode_response(response)
    decoded = protocol.decode_response(frame, ApiKey.OFFSET_FOR_LEADER_EPOCH, version).body
    return [
        (p.error_code, p.partition, p.leader_epoch, p.end_offset)
        for t in decoded.topics
        for p in t.partitions
    ]


@pytest.mark.parametrize("version", [2, 3, 4])
async def test_end_offsets_per_epoch(ctx: BrokerContext, version: int) -> None:
    got = await ask(
        ctx,
        [(TOPIC, 0, -1, 1)],
        version=version,
    )
    assert got == [(0, 0, 1, 3)]
    assert await ask(ctx, [(TOPIC, 0, 5, 2)]) == [(0, 0, 1, 3)]  # largest epoch <= 2
    assert await ask(ctx, [(TOPIC, 0, 5, 3)]) == [(0, 0, 3, 5)]
    assert await ask(ctx, [(TOPIC, 0, 5, 5)]) == [(0, 0, 5, 5)]  # current: the log end
    assert await ask(ctx, [(TOPIC, 0, 5, 9)]) == [(0, 0, -1, -1)]  # unknown epoch


async def test_fencing_and_partition_errors(ctx: BrokerContext) -> None:
    got = await ask(
        ctx,
        [(TOPIC, 0, 4, 1), (TOPIC, 1, -1, 1), ("absent", 0, -1, 1)],
    )
    assert got == [
        (ErrorCode.FENCED_LEADER_EPOCH, 0, -1, -1),
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, 1, -1, -1),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0, -1, -1),
    ]
    assert (await ask(ctx, [(TOPIC, 0, 6, 1)]))[0][0] == ErrorCode.UNKNOWN_LEADER_EPOCH
