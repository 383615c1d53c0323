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
from broker.apis.services import ReplicaAccess
from protocol import ApiKey, ErrorCode
from protocol.messages import OffsetForLeaderEpochRequest
from protocol.records import BatchBuilder
from protocol.values import TopicPartition
from tests.unit.broker.broker_helpers import LocalReplicas, local_replicas, partition_state

TOPIC = "ledger"
A = TopicPartition(TOPIC, 0)


def state(partition: int, leader: int, epoch: int) -> Any:
    tp = TopicPartition(TOPIC, partition)
    return partition_state(
        tp, leader=leader, epoch=epoch, isr=(0, 1), replicas=(0, 1), partition_epoch=epoch
    )


def append(replicas: LocalReplicas, n: int) -> None:
    builder = BatchBuilder()
    for i in range(n):
        builder.append(i, None, b"v")
    replicas.append(A, bytes(builder.build()))


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ReplicaAccess]:
    """Partition 0 led here: epoch 1 wrote offsets 0-2, epoch 3 offsets 3-4, epoch 5
    is current with nothing written yet. Partition 1 is followed."""
    replicas = local_replicas(tmp_path)
    ids = {TOPIC: uuid.uuid4()}
    replicas.become(ids, state(0, 0, 1), state(1, 1, 1))
    append(replicas, 3)
    replicas.become(ids, state(0, 0, 3))
    append(replicas, 2)
    replicas.become(ids, state(0, 0, 5))
    yield replicas.services().replicas
    replicas.log_manager.shutdown()


async def ask(
    ctx: ReplicaAccess, queries: list[tuple[str, int, int, int]], *, version: int = 4
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
async def test_end_offsets_per_epoch(ctx: ReplicaAccess, version: int) -> None:
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


async def test_fencing_and_partition_errors(ctx: ReplicaAccess) -> None:
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


async def test_v0_and_v1_have_no_current_epoch_and_v0_no_epoch_in_the_answer(
    ctx: ReplicaAccess,
) -> None:
    # no current epoch on the wire before v2: the stale epoch 9 is never seen, no fencing
    assert await ask(ctx, [(TOPIC, 0, 9, 3)], version=1) == [(0, 0, 3, 5)]
    assert await ask(ctx, [(TOPIC, 0, 9, 3)], version=0) == [(0, 0, -1, 5)]
