"""DeleteRecords through the ReplicaManager and its handler, on real logs with a MockClock:
broker 0 leads ``orders-0`` with followers 1 and 2 whose fetches the test makes. The
leader's log start moves at once (consumers below it get OFFSET_OUT_OF_RANGE, ListOffsets
EARLIEST answers it) and is checkpointed; the response waits until every follower on a
live broker reported the new start in a fetch, or times out; refusals are answered at
once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from broker.apis import delete_records as handler
from broker.delayed import FetchParams, PartitionFetchInfo
from broker.delayed.delete_records import DeleteRecordsPartitionResult
from protocol import ApiKey, Response
from protocol.errors import ErrorCode
from protocol.messages import DeleteRecordsRequest
from protocol.values import EARLIEST_TIMESTAMP, TopicPartition
from storage.checkpoint import LOG_START_OFFSET_CHECKPOINT, read_offset_checkpoint
from tests.unit.broker.broker_helpers import (
    HandlerRequest,
    LocalReplicas,
    batch,
    ignore,
    local_replicas,
    partition_state,
    run_now,
)

A = TopicPartition("orders", 0)
TOPIC_IDS = {"orders": uuid.UUID("0b3ad1c2-4e5f-4a6b-8c7d-9e0f1a2b3c4d")}

Results = dict[TopicPartition, DeleteRecordsPartitionResult]


@dataclass
class Cluster:
    """Broker 0 leading A; ``dead`` are the brokers the metadata cache lists as gone."""

    r: LocalReplicas
    tmp_path: Path
    dead: set[int] = field(default_factory=set)

    def follower_fetch(self, replica_id: int, offset: int, log_start: int) -> None:
        params = FetchParams(replica_id, 0, 1, 1 << 20)
        info = PartitionFetchInfo(offset, 1 << 20, -1, log_start)
        self.r.rm.fetch_messages(params, [(A, info)], ignore)

    def consumer_fetch_error(self, offset: int) -> int:
        got: list[int] = []
        info = PartitionFetchInfo(offset, 1 << 20)
        self.r.rm.fetch_messages(
            FetchParams(-1, 0, 1, 1 << 20), [(A, info)], lambda rs: got.append(rs[0][1].error_code)
        )
        return got[0]

    def delete(self, offset: int, timeout_ms: int = 5000) -> list[Results]:
        got: list[Results] = []
        run_now(self.r.rm.delete_records({A: offset}, timeout_ms=timeout_ms, on_done=got.append))
        return got

    @property
    def log_start(self) -> int:
        lg = self.r.log_manager.get_log(A)
        assert lg is not None
        return lg.log_start_offset


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    dead: set[int] = set()
    r = local_replicas(tmp_path, is_alive_broker=lambda b: b not in dead)
    c = Cluster(r, tmp_path, dead)
    state = partition_state(A, isr=(0, 1, 2), replicas=(0, 1, 2))
    assert r.become(TOPIC_IDS, state) == {A: ErrorCode.NONE}
    r.append(A, batch(10))
    for follower in (1, 2):  # both hold the ten records: the high watermark is 10
        c.follower_fetch(follower, 10, 0)
    leader = r.rm.partition_for(A)
    assert leader is not None and leader.high_watermark == 10
    yield c
    r.log_manager.shutdown()


def test_the_response_waits_for_every_follower_to_report_the_new_log_start(
    cluster: Cluster,
) -> None:
    got = cluster.delete(4)
    assert cluster.log_start == 4
    assert got == []  # the followers still start at 0
    cluster.follower_fetch(1, 10, 4)
    assert got == []
    cluster.follower_fetch(2, 10, 4)
    assert got == [{A: DeleteRecordsPartitionResult(ErrorCode.NONE, 4)}]


def test_readers_below_the_new_log_start_are_out_of_range_and_earliest_is_the_start(
    cluster: Cluster,
) -> None:
    cluster.delete(6)
    assert cluster.consumer_fetch_error(5) == ErrorCode.OFFSET_OUT_OF_RANGE
    assert cluster.consumer_fetch_error(6) == ErrorCode.NONE
    found = cluster.r.rm.fetch_offset_for_timestamp(A, EARLIEST_TIMESTAMP)
    assert found is not None and found.offset == 6


def test_the_new_log_start_is_checkpointed_before_the_answer(cluster: Cluster) -> None:
    cluster.delete(3)
    checkpoint = read_offset_checkpoint(str(cluster.tmp_path / LOG_START_OFFSET_CHECKPOINT))
    assert checkpoint[A] == 3


def test_minus_one_deletes_up_to_the_high_watermark(cluster: Cluster) -> None:
    cluster.delete(-1)
    assert cluster.log_start == 10


def test_a_follower_on_a_dead_broker_is_not_waited_for(cluster: Cluster) -> None:
    cluster.dead.add(2)
    got = cluster.delete(4)
    cluster.follower_fetch(1, 10, 4)
    assert got == [{A: DeleteRecordsPartitionResult(ErrorCode.NONE, 4)}]


def test_a_broker_dying_while_the_response_waits_completes_it(cluster: Cluster) -> None:
    got = cluster.delete(4)
    cluster.follower_fetch(1, 10, 4)
    assert got == []
    cluster.dead.add(2)
    cluster.r.rm.live_brokers_changed()  # what UpdateMetadata does
    assert got == [{A: DeleteRecordsPartitionResult(ErrorCode.NONE, 4)}]


def test_the_timeout_answers_request_timed_out_with_the_low_watermark(cluster: Cluster) -> None:
    got = cluster.delete(4, timeout_ms=1000)
    cluster.follower_fetch(1, 10, 4)
    cluster.r.clock.advance(1001)
    cluster.r.rm.delete_records_purgatory.advance_clock()
    assert got == [{A: DeleteRecordsPartitionResult(ErrorCode.REQUEST_TIMED_OUT, 0)}]
    assert cluster.log_start == 4  # the leader's start moved all the same


def test_losing_the_leadership_while_waiting_answers_not_leader(cluster: Cluster) -> None:
    got = cluster.delete(4)
    follower = partition_state(A, leader=1, epoch=1, isr=(0, 1, 2), replicas=(0, 1, 2))
    assert cluster.r.become(TOPIC_IDS, follower) == {A: ErrorCode.NONE}
    assert got == [{A: DeleteRecordsPartitionResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)}]


def test_refusals_are_answered_at_once_and_move_nothing(cluster: Cluster) -> None:
    assert cluster.delete(11) == [{A: DeleteRecordsPartitionResult(ErrorCode.OFFSET_OUT_OF_RANGE)}]
    cluster.r.log_manager.topic_configs.set("orders", {"cleanup.policy": "compact"})
    assert cluster.delete(4) == [{A: DeleteRecordsPartitionResult(ErrorCode.POLICY_VIOLATION)}]
    assert cluster.log_start == 0
    got: list[Results] = []
    other = TopicPartition("unknown", 0)
    run_now(cluster.r.rm.delete_records({other: 1}, timeout_ms=100, on_done=got.append))
    assert got == [{other: DeleteRecordsPartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}]


def test_a_follower_replica_answers_not_leader(tmp_path: Path) -> None:
    r = local_replicas(tmp_path)
    try:
        state = partition_state(A, leader=1, isr=(0, 1), replicas=(0, 1))
        assert r.become(TOPIC_IDS, state) == {A: ErrorCode.NONE}
        got: list[Results] = []
        run_now(r.rm.delete_records({A: 0}, timeout_ms=100, on_done=got.append))
        assert got == [{A: DeleteRecordsPartitionResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)}]
    finally:
        r.log_manager.shutdown()


# -- the handler ---------------------------------------------------------------------------


def request(*partitions: tuple[str, int, int]) -> HandlerRequest:
    topics: dict[str, list[DeleteRecordsRequest.DeleteRecordsPartition]] = {}
    for topic, p, offset in partitions:
        topics.setdefault(topic, []).append(
            DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=offset)
        )
    wanted = [
        DeleteRecordsRequest.DeleteRecordsTopic(name=t, partitions=ps) for t, ps in topics.items()
    ]
    return HandlerRequest(
        ApiKey.DELETE_RECORDS, 2, DeleteRecordsRequest(topics=wanted, timeout_ms=5000)
    )


async def test_the_handler_answers_in_request_order_once_the_replicas_followed(
    cluster: Cluster,
) -> None:
    ctx = cluster.r.services().replicas
    pending = await handler.handle(ctx, request(("orders", 0, 4), ("nope", 3, 1)))
    assert not isinstance(pending, Response)  # waiting for the followers
    cluster.follower_fetch(1, 10, 4)
    cluster.follower_fetch(2, 10, 4)
    response = await pending
    answers = [
        (t.name, p.partition_index, p.error_code, p.low_watermark)
        for t in response.body.topics
        for p in t.partitions
    ]
    assert answers == [
        ("orders", 0, ErrorCode.NONE, 4),
        ("nope", 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    ]


async def test_a_partition_named_twice_is_answered_once_for_the_last_offset(
    cluster: Cluster,
) -> None:
    cluster.dead.update({1, 2})  # nothing to wait for
    response = await handler.handle(
        cluster.r.services().replicas, request(("orders", 0, 4), ("orders", 0, 5))
    )
    assert isinstance(response, Response)
    [topic] = response.body.topics
    assert [(p.partition_index, p.error_code, p.low_watermark) for p in topic.partitions] == [
        (0, ErrorCode.NONE, 5)
    ]
    assert cluster.log_start == 5
