"""The leader side of the replication throttle in the ReplicaManager's reads: a follower
outside the ISR gets no records of a throttled partition while the leader's quota is
exceeded; other partitions and in-sync followers are served; the bytes of throttled
partitions sent to followers count against the quota."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.delayed import FetchParams, FetchPartitionResult, PartitionFetchInfo
from broker.produce_records import check_produce_records
from broker.replication.throttle import ReplicationThrottle, ThrottleSide
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from tests.records import record_batch
from tests.unit.broker.broker_helpers import (
    LocalReplicas,
    local_replicas,
    partition_state,
    run_now,
    unthrottled,
)
from timer.clock import MockClock

A = TopicPartition("moving", 0)
B = TopicPartition("moving", 1)
RATE = 1000  # bytes/s: a fresh quota allows 10 s of it, 10 kB
LISTS = {"moving": {"leader.replication.throttled.replicas": "0:0"}}  # partition 0 on broker 0
Results = list[tuple[TopicPartition, FetchPartitionResult]]
LOG_END = 10  # each partition's log end after lead(): one batch of 10 records


@pytest.fixture
def local(tmp_path: Path) -> Iterator[tuple[LocalReplicas, ReplicationThrottle]]:
    clock = MockClock()
    throttle = unthrottled(ThrottleSide.LEADER, 0, clock, lambda t: LISTS.get(t, {}), lambda: RATE)
    r = local_replicas(tmp_path, clock=clock, leader_throttle=throttle)
    r.become({"moving": uuid.uuid4()})
    yield r, throttle
    r.log_manager.shutdown()


def lead(r: LocalReplicas, isr: tuple[int, ...]) -> None:
    states = [partition_state(tp, epoch=2, isr=isr, replicas=(0, 1)) for tp in (A, B)]
    run_now(r.rm.become_leader_or_follower(1, 1, states, {"moving": uuid.uuid4()}))
    for tp in (A, B):
        append(r, tp)


def append(r: LocalReplicas, tp: TopicPartition) -> None:
    got: list[object] = []
    batch = record_batch(10, key=None, value=b"x" * 1000)  # about 10 kB
    r.rm.append_records(
        {tp: check_produce_records(batch, 9)}, required_acks=1, timeout_ms=0, on_done=got.append
    )
    assert got


def follower_fetch(r: LocalReplicas) -> Results:
    got: list[Results] = []
    infos = [(tp, PartitionFetchInfo(0, 1 << 20, -1)) for tp in (A, B)]
    r.rm.fetch_messages(FetchParams(1, 0, 1, 1 << 20), infos, got.append)
    [results] = got
    return results


def records(results: Results) -> dict[TopicPartition, int]:
    return {tp: len(r.records) if r.records is not None else 0 for tp, r in results}


def test_a_follower_out_of_the_isr_waits_for_the_quota(
    local: tuple[LocalReplicas, ReplicationThrottle],
) -> None:
    r, throttle = local
    lead(r, isr=(0,))
    first = records(follower_fetch(r))
    assert first[A] > 0 and first[B] > 0  # the quota was not exceeded yet
    assert throttle.recorded_bytes == first[A]  # only the throttled partition counts
    assert throttle.quota_exceeded()
    held = follower_fetch(r)
    assert records(held) == {A: 0, B: first[B]}
    (_, a), _ = held
    assert a.error_code == ErrorCode.NONE and a.high_watermark >= 0
    assert isinstance(throttle.clock, MockClock)  # the clock the manager was given too
    throttle.clock.advance(11_000)  # the windows expire: the quota is free again
    assert records(follower_fetch(r))[A] == first[A]


def test_an_in_sync_follower_is_not_throttled(
    local: tuple[LocalReplicas, ReplicationThrottle],
) -> None:
    r, throttle = local
    lead(r, isr=(0, 1))
    first = records(follower_fetch(r))
    assert throttle.quota_exceeded()
    assert records(follower_fetch(r)) == first
    assert throttle.recorded_bytes == 2 * first[A]  # counted all the same, as Kafka does


def test_a_waiting_follower_is_not_woken_by_data_it_may_not_have(
    local: tuple[LocalReplicas, ReplicationThrottle],
) -> None:
    r, throttle = local
    lead(r, isr=(0,))
    follower_fetch(r)
    assert throttle.quota_exceeded()
    # the follower is at both log ends and waits; new data in the throttled partition
    # would reach it with no records, so it does not complete the wait
    got: list[Results] = []
    infos = [(tp, PartitionFetchInfo(LOG_END, 1 << 20, -1)) for tp in (A, B)]
    r.rm.fetch_messages(FetchParams(1, 500, 1, 1 << 20), infos, got.append)
    assert got == []
    append(r, A)
    assert got == []
    append(r, B)  # unthrottled data does
    [results] = got
    assert records(results)[A] == 0 and records(results)[B] > 0
