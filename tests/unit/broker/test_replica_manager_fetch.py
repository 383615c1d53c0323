"""ReplicaManager reads: max_bytes rules, errors per partition, the high watermark and
READ_COMMITTED limits, and long polls completed by an append, by min_bytes, by a
leadership change or by the timeout (MockClock)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from broker.delayed import (
    DelayedFetch,
    FetchParams,
    FetchPartitionResult,
    PartitionFetchInfo,
)
from broker.metrics import BrokerMetrics
from broker.produce_records import check_produce_records
from broker.replica_manager import ReplicaManager
from protocol.errors import ErrorCode
from protocol.values import READ_COMMITTED, TopicPartition
from storage import FileRegion, Log, LogManager
from tests.records import record_batch
from tests.unit.broker.broker_helpers import local_replicas, partition_state, run_now
from timer import DelayedOperationPurgatory
from timer.clock import MockClock

A = TopicPartition("events", 0)
B = TopicPartition("events", 1)
Results = list[tuple[TopicPartition, FetchPartitionResult]]


def batch(n: int = 1, value_size: int = 100) -> bytes:
    return record_batch(n, key=None, value=b"x" * value_size)


@dataclass
class Broker:
    clock: MockClock
    log_manager: LogManager
    fetch: DelayedOperationPurgatory[DelayedFetch]
    metrics: BrokerMetrics
    rm: ReplicaManager

    def log(self, tp: TopicPartition) -> Log:
        found = self.log_manager.get_log(tp)
        assert found is not None
        return found

    def produce(self, tp: TopicPartition, records: bytes) -> None:
        got: list[object] = []
        self.rm.append_records(
            {tp: check_produce_records(records, 9)},
            required_acks=1,
            timeout_ms=0,
            on_done=got.append,
        )
        assert got, "acks=1 answers at once"

    def fetch_now(
        self,
        infos: list[tuple[TopicPartition, PartitionFetchInfo]],
        *,
        max_bytes: int = 1 << 20,
        min_bytes: int = 1,
        max_wait_ms: int = 0,
        isolation_level: int = 0,
        replica_id: int = -1,
    ) -> list[Results]:
        got: list[Results] = []
        params = FetchParams(replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level)
        self.rm.fetch_messages(params, infos, got.append)
        return got


def info(
    offset: int = 0, partition_max_bytes: int = 1 << 20, epoch: int = -1
) -> PartitionFetchInfo:
    return PartitionFetchInfo(offset, partition_max_bytes, epoch)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    r = local_replicas(tmp_path)
    r.become({"events": uuid.uuid4()}, *(partition_state(tp, epoch=2) for tp in (A, B)))
    yield Broker(r.clock, r.log_manager, r.fetch, r.metrics, r.rm)
    r.log_manager.shutdown()


def size(region: FileRegion | None) -> int:
    assert region is not None
    return len(region)


def sizes(results: Results) -> list[int]:
    return [len(r.records) if r.records is not None else 0 for _, r in results]


def test_reads_whole_batches_with_offsets(broker: Broker) -> None:
    one = batch(2)
    broker.produce(A, one)
    broker.produce(A, batch(2))
    [results] = broker.fetch_now([(A, info()), (B, info())])
    (tp_a, a), (tp_b, b) = results
    assert (tp_a, tp_b) == (A, B)
    assert a.error_code == ErrorCode.NONE and size(a.records) == 2 * len(one)
    assert (a.high_watermark, a.last_stable_offset, a.log_start_offset) == (4, 4, 0)
    assert b.error_code == ErrorCode.NONE and b.records is None and b.high_watermark == 0
    assert a.records is not None and a.records.read()[:8] == bytes(
        8
    )  # base offset rewritten in place


def test_max_bytes_shared_in_request_order(broker: Broker) -> None:
    size = len(batch())
    broker.produce(A, batch())
    broker.produce(B, batch())
    [results] = broker.fetch_now([(A, info()), (B, info())], max_bytes=size + 10)
    assert sizes(results) == [size, 10]  # the second gets what is left (a partial batch)


def test_first_batch_is_whole_even_above_every_limit(broker: Broker) -> None:
    big = batch(1, value_size=5000)
    broker.produce(A, big)
    broker.produce(B, batch())
    [results] = broker.fetch_now([(A, info(partition_max_bytes=100)), (B, info())], max_bytes=200)
    assert sizes(results) == [len(big), 0]


def test_empty_first_partition_does_not_use_up_min_one_message(broker: Broker) -> None:
    big = batch(1, value_size=5000)
    broker.produce(B, big)
    [results] = broker.fetch_now([(A, info()), (B, info(partition_max_bytes=100))], max_bytes=10)
    assert sizes(results) == [0, len(big)]


def test_partition_max_bytes_caps_each_partition(broker: Broker) -> None:
    size = len(batch())
    for _ in range(3):
        broker.produce(A, batch())
    [results] = broker.fetch_now([(A, info(partition_max_bytes=2 * size))])
    assert sizes(results) == [2 * size]


def test_errors_are_per_partition(broker: Broker) -> None:
    broker.produce(A, batch())
    unknown = TopicPartition("nope", 0)
    [results] = broker.fetch_now(
        [(A, info(offset=7)), (B, info(epoch=1)), (unknown, info()), (A, info(epoch=3))]
    )
    codes = [r.error_code for _, r in results]
    assert codes == [
        ErrorCode.OFFSET_OUT_OF_RANGE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
    ]
    assert all(r.records is None and r.high_watermark == -1 for _, r in results)


def test_consumers_stop_at_high_watermark_read_committed_at_lso(broker: Broker) -> None:
    # broker 1 follows A from now on: the high watermark waits for its copy
    state = partition_state(A, epoch=3, isr=(0, 1), replicas=(0, 1))
    run_now(broker.rm.become_leader_or_follower(1, 1, [state], {}))
    broker.produce(A, batch())
    one = len(batch())
    broker.produce(A, batch())
    # the follower holds the first batch (fetches from 1) and reads on to the log end
    [[(_, follower)]] = broker.fetch_now([(A, info(1))], replica_id=1)
    assert size(follower.records) == one
    assert follower.high_watermark == 1
    for isolation in (0, READ_COMMITTED):
        [[(_, r)]] = broker.fetch_now([(A, info())], isolation_level=isolation)
        assert size(r.records) == one
        assert r.high_watermark == r.last_stable_offset == 1


def test_bytes_out_metric(broker: Broker) -> None:
    broker.produce(A, batch())
    broker.fetch_now([(A, info())])
    value = broker.metrics.registry.get_sample_value(
        "minikafka_topic_bytes_out_total", {"topic": "events"}
    )
    assert value == len(batch())


# -- long poll ----------------------------------------------------------------------------


def test_long_poll_completed_by_an_append(broker: Broker) -> None:
    got = broker.fetch_now([(A, info()), (B, info())], max_wait_ms=500)
    assert got == [] and broker.fetch.num_delayed == 1
    broker.produce(B, batch())
    [results] = got
    assert sizes(results) == [0, len(batch())]
    assert broker.fetch.num_delayed == 0


def test_long_poll_waits_for_min_bytes(broker: Broker) -> None:
    size = len(batch())
    got = broker.fetch_now([(A, info())], max_wait_ms=500, min_bytes=2 * size)
    broker.produce(A, batch())
    assert got == []
    broker.produce(A, batch())
    assert sizes(got[0]) == [2 * size]


def test_long_poll_min_bytes_counts_at_most_partition_max_bytes(broker: Broker) -> None:
    size = len(batch())
    got = broker.fetch_now(
        [(A, info(partition_max_bytes=size))], max_wait_ms=500, min_bytes=2 * size
    )
    broker.produce(A, batch())
    broker.produce(A, batch())
    assert got == []  # only one batch's worth may count for this partition


def test_long_poll_times_out_with_what_is_there(broker: Broker) -> None:
    got = broker.fetch_now([(A, info())], max_wait_ms=500, min_bytes=10_000)
    broker.produce(A, batch())
    broker.clock.advance(499)
    broker.fetch.advance_clock()
    assert got == []
    broker.clock.advance(1)
    broker.fetch.advance_clock()
    assert sizes(got[0]) == [len(batch())]


def test_long_poll_timeout_with_nothing_answers_empty(broker: Broker) -> None:
    got = broker.fetch_now([(A, info())], max_wait_ms=100)
    broker.clock.advance(100)
    broker.fetch.advance_clock()
    [[(_, r)]] = got
    assert r.error_code == ErrorCode.NONE and r.records is None and r.high_watermark == 0


async def test_long_poll_ends_when_leadership_moves(broker: Broker) -> None:
    got = broker.fetch_now([(A, info())], max_wait_ms=500)
    moved = partition_state(A, leader=1, epoch=3, isr=(0, 1), replicas=(0, 1), partition_epoch=1)
    await broker.rm.become_leader_or_follower(1, 1, [moved], {})
    [[(_, r)]] = got
    assert r.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_no_wait_or_error_answers_at_once(broker: Broker) -> None:
    assert len(broker.fetch_now([(A, info())], max_wait_ms=0)) == 1
    assert len(broker.fetch_now([(A, info(offset=5))], max_wait_ms=500)) == 1
    assert len(broker.fetch_now([], max_wait_ms=500)) == 1
    assert broker.fetch.num_delayed == 0


def test_follower_long_poll_records_the_fetch_once_when_it_arrives(broker: Broker) -> None:
    state = partition_state(A, epoch=3, isr=(0, 1), replicas=(0, 1))
    run_now(broker.rm.become_leader_or_follower(1, 1, [state], {}))
    broker.produce(A, batch())
    got = broker.fetch_now([(A, info(1))], replica_id=1, max_wait_ms=500)
    partition = broker.rm.partition_for(A)
    assert partition is not None and got == []
    recorded = partition.followers[1]
    assert recorded.last_fetch_leader_end_offset == 1
    broker.clock.advance(100)
    broker.produce(A, batch())
    # the append answers the fetch with the new batch; the follower's position is what
    # it reported when the fetch arrived (its next fetch reports the new one)
    [[(_, result)]] = got
    assert size(result.records) == len(batch())
    assert partition.followers[1] == recorded
