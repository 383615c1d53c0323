"""The ListOffsets handler (v0-7): v0's segment offsets; earliest, latest, max timestamp,
by timestamp, isolation levels, leader epochs in answers, and errors per partition."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import protocol
from broker.apis import list_offsets
from broker.apis.services import ReplicaAccess
from protocol import ApiKey, ErrorCode
from protocol.messages import ListOffsetsRequest
from protocol.values import TopicPartition
from storage import Log
from tests.records import record_batch
from tests.unit.broker.broker_helpers import local_replicas, partition_state

TOPIC = "metrics"
A = TopicPartition(TOPIC, 0)


def batch(*timestamps: int) -> bytes:
    return record_batch(len(timestamps), key=None, timestamps=timestamps)


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ReplicaAccess]:
    replicas = local_replicas(tmp_path)
    ids = {TOPIC: uuid.uuid4()}
    follower = partition_state(TopicPartition(TOPIC, 1), leader=1, isr=(0, 1), replicas=(0, 1))
    replicas.become(ids, partition_state(A, epoch=4), follower)
    for records in (batch(100, 150, 200), batch(300, 900, 400)):
        replicas.append(A, records)
    yield replicas.services().replicas
    replicas.log_manager.shutdown()


def request(
    version: int,
    queries: list[tuple[str, int, int]],
    *,
    isolation_level: int = 0,
    epoch: int = -1,
    replica_id: int = -1,
) -> Any:
    topics: dict[str, list[Any]] = {}
    for topic, p, ts in queries:
        topics.setdefault(topic, []).append(
            ListOffsetsRequest.ListOffsetsPartition(
                partition_index=p, timestamp=ts, current_leader_epoch=epoch
            )
        )
    body = ListOffsetsRequest(
        replica_id=replica_id,
        isolation_level=isolation_level,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()
        ],
    )
    frame = protocol.encode_request(
        protocol.make_request(ApiKey.LIST_OFFSETS, version, 1, "c", body)
    )
    return protocol.decode_request(frame)


def log_of(ctx: ReplicaAccess) -> Log:
    found = ctx.replica_manager.log_manager.get_log(A)
    assert found is not None
    return found


async def answers(ctx: ReplicaAccess, req: Any) -> list[tuple[int, int, int, int]]:
    response = await list_offsets.handle(ctx, req)
    frame = protocol.encode_response(response)
    body = protocol.decode_response(frame, ApiKey.LIST_OFFSETS, response.api_version).body
    return [
        (p.error_code, p.timestamp, p.offset, p.leader_epoch)
        for t in body.topics
        for p in t.partitions
    ]


async def lookup(
    ctx: ReplicaAccess, version: int, timestamp: int, isolation_level: int = 0
) -> tuple[int, int, int, int]:
    """One partition per request: Kafka refuses a partition named twice."""
    [answer] = await answers(
        ctx, request(version, [(TOPIC, 0, timestamp)], isolation_level=isolation_level)
    )
    return answer


async def test_special_timestamps_and_lookup_v7(ctx: ReplicaAccess) -> None:
    assert await lookup(ctx, 7, -2) == (0, -1, 0, 4)  # earliest
    assert await lookup(ctx, 7, -1) == (0, -1, 6, 4)  # latest: the high watermark
    # The largest timestamp: storage resolves it to its batch (offsets 3-5), reporting
    # the batch's last offset as Kafka before 3.7 did; the record itself is offset 4.
    error, timestamp, offset, epoch = await lookup(ctx, 7, -3)
    assert (error, timestamp, epoch) == (0, 900, 4) and 3 <= offset <= 5
    assert await lookup(ctx, 7, 160) == (0, 200, 2, 4)  # first record at or after 160
    assert await lookup(ctx, 7, 5000) == (0, -1, -1, -1)  # nothing that late


async def test_v1_without_epochs(ctx: ReplicaAccess) -> None:
    assert await lookup(ctx, 1, -1) == (0, -1, 6, -1)
    assert await lookup(ctx, 1, 300) == (0, 300, 3, -1)


async def test_isolation_levels_hide_what_is_above_the_high_watermark(ctx: ReplicaAccess) -> None:
    log_of(ctx).update_high_watermark(3)
    for isolation in (0, 1):
        assert (await lookup(ctx, 5, -1, isolation))[2] == 3
        assert (await lookup(ctx, 5, 300, isolation))[2] == -1
    # v1 has no isolation level: its consumers read uncommitted, up to the high watermark
    assert (await lookup(ctx, 1, -1))[2] == 3


async def test_errors_per_partition(ctx: ReplicaAccess) -> None:
    got = await answers(ctx, request(7, [(TOPIC, 1, -1), ("absent", 0, -1), (TOPIC, 0, -1)]))
    # grouped by topic as sent: metrics [1, 0], then absent [0]
    assert [e for e, *_ in got] == [
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]


@pytest.mark.parametrize(
    ("epoch", "code"), [(3, ErrorCode.FENCED_LEADER_EPOCH), (5, ErrorCode.UNKNOWN_LEADER_EPOCH)]
)
async def test_leader_epoch_fencing(ctx: ReplicaAccess, epoch: int, code: int) -> None:
    [(error, _, offset, _)] = await answers(ctx, request(7, [(TOPIC, 0, -1)], epoch=epoch))
    assert (error, offset) == (code, -1)


async def test_duplicate_partitions_are_invalid(ctx: ReplicaAccess) -> None:
    got = await answers(ctx, request(7, [(TOPIC, 0, -1), (TOPIC, 0, -2)]))
    assert [e for e, *_ in got] == [ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST]


async def test_replicas_see_the_log_end_and_debug_tools_may_ask_followers(
    ctx: ReplicaAccess,
) -> None:
    log_of(ctx).update_high_watermark(3)
    [replica] = await answers(ctx, request(7, [(TOPIC, 0, -1)], replica_id=1))
    assert replica[2] == 6
    [tool] = await answers(ctx, request(7, [(TOPIC, 1, -1)], replica_id=-2))
    assert (tool[0], tool[2]) == (ErrorCode.NONE, 0)


async def v0_offsets(
    ctx: ReplicaAccess, timestamp: int, max_num: int, replica_id: int = -1, partition: int = 0
) -> tuple[int, list[int]]:
    body = ListOffsetsRequest(
        replica_id=replica_id,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=TOPIC,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(
                        partition_index=partition, timestamp=timestamp, max_num_offsets=max_num
                    )
                ],
            )
        ],
    )
    frame = protocol.encode_request(protocol.make_request(ApiKey.LIST_OFFSETS, 0, 1, "c", body))
    response = await list_offsets.handle(ctx, protocol.decode_request(frame))
    out = protocol.decode_response(protocol.encode_response(response), ApiKey.LIST_OFFSETS, 0)
    [p] = out.body.topics[0].partitions
    return p.error_code, list(p.old_style_offsets)


async def test_v0_answers_segment_boundaries_and_the_log_end(ctx: ReplicaAccess) -> None:
    lg = log_of(ctx)
    lg.roll()  # the fixture's 6 records in the first segment, the second empty
    assert [s.base_offset for s in lg.segments] == [0, 6]
    # the new active segment is empty: no log-end point; base offsets newest first
    assert await v0_offsets(ctx, -1, 10) == (ErrorCode.NONE, [6, 0])
    assert await v0_offsets(ctx, -1, 1) == (ErrorCode.NONE, [6])
    assert await v0_offsets(ctx, -2, 10) == (ErrorCode.NONE, [0])
    assert await v0_offsets(ctx, 0, 10) == (ErrorCode.NONE, [])  # before any write
    # a consumer is capped at the high watermark; a replica is not
    lg.update_high_watermark(3)
    assert await v0_offsets(ctx, -1, 10) == (ErrorCode.NONE, [3, 0])
    assert await v0_offsets(ctx, -1, 10, replica_id=1) == (ErrorCode.NONE, [6, 0])
    assert (await v0_offsets(ctx, -1, 10, partition=1))[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_v0_answers_a_partition_named_twice_each_time(ctx: ReplicaAccess) -> None:
    P = ListOffsetsRequest.ListOffsetsPartition
    body = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=TOPIC,
                partitions=[
                    P(partition_index=0, timestamp=-1, max_num_offsets=1),
                    P(partition_index=0, timestamp=-2, max_num_offsets=1),
                ],
            )
        ],
    )
    frame = protocol.encode_request(protocol.make_request(ApiKey.LIST_OFFSETS, 0, 1, "c", body))
    response = await list_offsets.handle(ctx, protocol.decode_request(frame))
    answers = [
        (p.error_code, list(p.old_style_offsets)) for p in response.body.topics[0].partitions
    ]
    assert answers == [(ErrorCode.NONE, [6]), (ErrorCode.NONE, [0])]
