"""The leader side of replication through the ReplicaManager, on real logs with a
MockClock and a fake IsrWriter whose writes the test finishes by hand: follower fetches
move the high watermark, acks=all and long polls wait for it (an idempotent producer's
retry of a batch the leader holds too, answered with the batch's original offset),
min.insync.replicas refuses before and after the append, lagging followers leave the ISR
and caught-up ones join it, one ISR write at a time, and a fetch from a broker that is no
replica is refused."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from broker.delayed import FetchParams, FetchPartitionResult, PartitionFetchInfo
from broker.delayed.produce import ProducePartitionResult
from broker.isr import IsrWriteOutcome, IsrWriteResult
from broker.isr_zk import IsrChangePropagator
from broker.partition import Partition
from broker.produce_records import check_produce_records
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from tests.unit.broker.broker_helpers import LocalReplicas, batch, local_replicas, partition_state
from zk.model import LeaderAndIsr

A = TopicPartition("orders", 0)
TOPIC_IDS = {"orders": uuid.UUID("0b3ad1c2-4e5f-4a6b-8c7d-9e0f1a2b3c4d")}
LAG_MS = 1000

Results = list[tuple[TopicPartition, FetchPartitionResult]]
Produced = dict[TopicPartition, ProducePartitionResult]


@dataclass
class Submitted:
    tp: TopicPartition
    state: LeaderAndIsr
    controller_epoch: int
    on_done: Callable[[IsrWriteResult], None]


@dataclass
class FakeIsrWriter:
    """Keeps each submitted write until the test finishes it with an outcome."""

    submitted: list[Submitted] = field(default_factory=list)

    def submit(
        self,
        tp: TopicPartition,
        state: LeaderAndIsr,
        controller_epoch: int,
        on_done: Callable[[IsrWriteResult], None],
    ) -> None:
        self.submitted.append(Submitted(tp, state, controller_epoch, on_done))

    def finish(self, outcome: IsrWriteOutcome = IsrWriteOutcome.WRITTEN) -> LeaderAndIsr:
        write = self.submitted.pop(0)
        version = write.state.zk_version + 1 if outcome is IsrWriteOutcome.WRITTEN else -1
        write.on_done(IsrWriteResult(outcome, version))
        return write.state


@dataclass
class Leader:
    """Broker 0 leading A (replicas 0, 1, 2 unless a test says otherwise)."""

    r: LocalReplicas
    writer: FakeIsrWriter
    notified: list[list[TopicPartition]]
    min_isr: dict[str, int]

    @property
    def partition(self) -> Partition:
        found = self.r.rm.partition_for(A)
        assert found is not None
        return found

    @property
    def hw(self) -> int:
        return self.partition.high_watermark

    def lead(self, *, epoch: int = 0, isr: tuple[int, ...] = (0, 1, 2), leader: int = 0) -> None:
        state = partition_state(
            A, leader=leader, epoch=epoch, isr=isr, replicas=(0, 1, 2), partition_epoch=epoch
        )
        assert self.r.become(TOPIC_IDS, state) == {A: ErrorCode.NONE}

    def produce(
        self, n: int = 1, acks: int = 1, timeout_ms: int = 5000, records: bytes | None = None
    ) -> list[Produced]:
        got: list[Produced] = []
        self.r.rm.append_records(
            {A: check_produce_records(batch(n) if records is None else records, 9)},
            required_acks=acks, timeout_ms=timeout_ms, on_done=got.append,
        )  # fmt: skip
        return got

    def fetch(
        self, replica_id: int, offset: int, *, max_wait_ms: int = 0, log_start: int = 0
    ) -> list[Results]:
        got: list[Results] = []
        params = FetchParams(replica_id, max_wait_ms, 1, 1 << 20)
        info = PartitionFetchInfo(offset, 1 << 20, -1, log_start if replica_id >= 0 else -1)
        self.r.rm.fetch_messages(params, [(A, info)], got.append)
        return got

    def follower_fetch(self, replica_id: int, offset: int) -> FetchPartitionResult:
        [[(_, result)]] = self.fetch(replica_id, offset)
        return result

    def advance(self, ms: int) -> None:
        self.r.clock.advance(ms)
        self.r.produce.advance_clock()
        self.r.fetch.advance_clock()

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        return self.r.metrics.registry.get_sample_value(name, labels or {})


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[Leader]:
    writer = FakeIsrWriter()
    min_isr: dict[str, int] = {}
    r = local_replicas(
        tmp_path,
        isr_writer=writer,
        replica_lag_time_max_ms=LAG_MS,
        min_insync_replicas=lambda topic: min_isr.get(topic, 1),
    )
    notified: list[list[TopicPartition]] = []

    async def propagate(tps: list[TopicPartition]) -> None:
        notified.append(tps)

    r.rm.isr_propagator = IsrChangePropagator(r.clock, propagate)
    found = Leader(r, writer, notified, min_isr)
    found.lead()
    yield found
    r.log_manager.shutdown()


# -- the high watermark ----------------------------------------------------------------------


def test_high_watermark_moves_only_when_every_isr_member_has_the_offset(leader: Leader) -> None:
    leader.produce(3)
    assert leader.hw == 0  # the followers have not fetched yet
    assert leader.follower_fetch(1, 3).error_code == ErrorCode.NONE
    assert leader.hw == 0  # 2 holds nothing as far as the leader knows
    assert leader.follower_fetch(2, 1).high_watermark == 1
    # the fetch that completes the ISR's copy answers with the high watermark it moved
    assert leader.follower_fetch(2, 3).high_watermark == 3
    assert leader.hw == 3


def test_follower_reads_to_the_log_end_and_consumers_stop_at_the_high_watermark(
    leader: Leader,
) -> None:
    leader.produce(2)
    follower = leader.follower_fetch(1, 0)
    assert follower.records is not None and len(follower.records) == len(batch(2))
    [[(_, consumer)]] = leader.fetch(-1, 0)
    assert consumer.records is None and consumer.high_watermark == 0


def test_leader_alone_in_the_isr_moves_the_high_watermark_on_append(leader: Leader) -> None:
    leader.lead(epoch=1, isr=(0,))
    [result] = leader.produce(2, acks=-1)
    assert result[A].error_code == ErrorCode.NONE and leader.hw == 2


# -- acks=all and long polls -------------------------------------------------------------------


def test_acks_all_waits_for_every_isr_member_then_completes(leader: Leader) -> None:
    got = leader.produce(2, acks=-1)
    assert got == [] and leader.r.produce.num_delayed == 1
    leader.follower_fetch(1, 2)
    assert got == []
    leader.follower_fetch(2, 1)  # the high watermark is 1: the batch ends at 2
    assert got == []
    leader.follower_fetch(2, 2)
    [result] = got
    assert result[A].error_code == ErrorCode.NONE and result[A].base_offset == 0


def test_a_retried_acks_all_batch_waits_for_the_high_watermark_and_gets_its_offset(
    leader: Leader,
) -> None:
    """An idempotent producer retries a batch whose first answer it never got (here: the
    first request timed out before the followers fetched). The leader holds it already:
    the retry is not appended again, it waits like any acks=all write for the high
    watermark to pass the original batch, then answers its original base offset."""
    leader.produce(2)  # others' records first: the batch does not start at 0
    idempotent = batch(3, producer_id=9, epoch=0, seq=0)
    first = leader.produce(acks=-1, timeout_ms=300, records=idempotent)
    leader.advance(300)
    assert first[0][A].error_code == ErrorCode.REQUEST_TIMED_OUT
    retry = leader.produce(acks=-1, records=idempotent)
    log = leader.r.log_manager.get_log(A)
    assert log is not None and log.log_end_offset == 5  # not appended twice
    assert retry == []
    leader.follower_fetch(1, 5)
    leader.follower_fetch(2, 4)  # the high watermark is 4: the batch ends at 5
    assert retry == []
    leader.follower_fetch(2, 5)
    [result] = retry
    assert result[A].error_code == ErrorCode.NONE
    assert result[A].base_offset == 2
    assert result[A].log_start_offset == 0


def test_a_retry_of_a_committed_batch_is_answered_at_once(leader: Leader) -> None:
    idempotent = batch(2, producer_id=9, epoch=0, seq=0)
    leader.produce(acks=-1, records=idempotent)
    leader.follower_fetch(1, 2)
    leader.follower_fetch(2, 2)
    [result] = leader.produce(acks=-1, records=idempotent)
    assert result[A].error_code == ErrorCode.NONE and result[A].base_offset == 0
    assert leader.r.produce.num_delayed == 0


def test_acks_all_times_out_while_a_follower_does_not_fetch(leader: Leader) -> None:
    got = leader.produce(1, acks=-1, timeout_ms=300)
    leader.follower_fetch(1, 1)
    leader.advance(300)
    [result] = got
    assert result[A].error_code == ErrorCode.REQUEST_TIMED_OUT


def test_consumer_long_poll_completes_when_the_high_watermark_moves(leader: Leader) -> None:
    leader.produce(2)
    got = leader.fetch(-1, 0, max_wait_ms=5000)
    assert got == []  # nothing below the high watermark yet
    leader.follower_fetch(1, 2)
    assert got == []
    leader.follower_fetch(2, 2)
    [[(_, result)]] = got
    assert result.high_watermark == 2 and result.records is not None


def test_not_enough_replicas_before_the_append(leader: Leader) -> None:
    leader.min_isr["orders"] = 3
    leader.lead(epoch=1, isr=(0, 1))
    [result] = leader.produce(1, acks=-1)
    assert result[A].error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert leader.partition.log is not None and leader.partition.log.log_end_offset == 0
    [acks1] = leader.produce(1, acks=1)
    assert acks1[A].error_code == ErrorCode.NONE
    assert leader.metric("minikafka_under_min_isr_partitions") == 1


def test_not_enough_replicas_after_append_when_the_isr_shrank_meanwhile(leader: Leader) -> None:
    leader.min_isr["orders"] = 3
    got = leader.produce(1, acks=-1)
    assert got == []
    leader.advance(LAG_MS + 1)
    leader.follower_fetch(1, 1)  # 1 keeps up; 2 never fetched
    leader.r.rm.maybe_shrink_isr()
    assert got == []  # the removal counts once written
    leader.writer.finish()
    [result] = got
    assert result[A].error_code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert leader.partition.isr == (0, 1) and leader.hw == 1


# -- ISR shrink and expansion ------------------------------------------------------------------


def test_follower_lagging_past_the_limit_leaves_the_isr(leader: Leader) -> None:
    leader.advance(600)
    leader.follower_fetch(1, 0)  # at the leader's end: caught up at 600
    leader.follower_fetch(2, 0)
    leader.produce(1)
    leader.follower_fetch(1, 1)
    leader.advance(LAG_MS)  # 2 last caught up 1000 ms ago: not more than the limit
    leader.r.rm.maybe_shrink_isr()
    assert leader.writer.submitted == []
    leader.advance(1)
    leader.r.rm.maybe_shrink_isr()
    [write] = leader.writer.submitted
    assert write.state == LeaderAndIsr(0, 0, (0, 1), 0) and write.controller_epoch == 1
    assert leader.partition.isr == leader.partition.maximal_isr == (0, 1, 2)
    leader.writer.finish()
    assert list(leader.partition.isr) == [0, 1] and leader.partition.partition_epoch == 1
    assert leader.hw == 1  # 2 no longer holds it back
    assert leader.metric("minikafka_isr_shrinks_total") == 1
    assert leader.metric("minikafka_under_replicated_partitions") == 1
    assert leader.r.rm.isr_propagator is not None
    assert set(leader.r.rm.isr_propagator.pending) == {A}


def test_idle_partition_keeps_its_followers(leader: Leader) -> None:
    leader.follower_fetch(1, 0)
    leader.follower_fetch(2, 0)
    leader.advance(10 * LAG_MS)  # nothing appended: at the end means caught up
    leader.r.rm.maybe_shrink_isr()
    assert leader.writer.submitted == []


def test_follower_joins_the_isr_once_it_reaches_the_high_watermark(leader: Leader) -> None:
    leader.lead(epoch=1, isr=(0, 1))
    leader.produce(2)
    leader.follower_fetch(1, 2)
    assert leader.hw == 2
    leader.follower_fetch(2, 1)
    assert leader.writer.submitted == []  # below the high watermark
    leader.follower_fetch(2, 2)
    [write] = leader.writer.submitted
    assert write.state == LeaderAndIsr(0, 1, (0, 1, 2), 1)
    assert leader.partition.maximal_isr == (0, 1, 2) and leader.partition.isr == (0, 1)
    leader.produce(1)
    leader.follower_fetch(1, 3)
    assert leader.hw == 2  # the pending member counts already
    leader.writer.finish()
    assert list(leader.partition.isr) == [0, 1, 2] and leader.partition.partition_epoch == 2
    assert leader.metric("minikafka_isr_expands_total") == 1
    assert leader.metric("minikafka_under_replicated_partitions") == 0


def test_one_isr_write_in_flight_at_a_time(leader: Leader) -> None:
    leader.lead(epoch=1, isr=(0,))
    leader.advance(LAG_MS + 1)
    leader.follower_fetch(1, 0)  # joins: the write is in flight
    leader.follower_fetch(2, 0)  # would join too, but waits for the first write
    assert len(leader.writer.submitted) == 1
    leader.writer.finish()
    leader.follower_fetch(2, 0)
    [write] = leader.writer.submitted
    assert write.state.isr == (0, 1, 2) and write.state.zk_version == 2


def test_conflicting_write_leaves_the_isr_as_it_was(leader: Leader) -> None:
    leader.advance(LAG_MS + 1)
    leader.r.rm.maybe_shrink_isr()
    leader.writer.finish(IsrWriteOutcome.CONFLICT)
    assert leader.partition.isr == (0, 1, 2) and leader.partition.partition_epoch == 0
    assert leader.metric("minikafka_isr_shrinks_total") == 0
    assert leader.r.rm.isr_propagator is not None and not leader.r.rm.isr_propagator.pending
    # the controller's LeaderAndIsr sets the state; the leader shrinks from there
    leader.lead(epoch=1, isr=(0, 1))
    leader.r.rm.maybe_shrink_isr()  # everyone counts as caught up at the election
    assert leader.writer.submitted == []


def test_leader_and_isr_arriving_during_a_write_wins(leader: Leader) -> None:
    leader.advance(LAG_MS + 1)
    leader.r.rm.maybe_shrink_isr()
    leader.lead(epoch=1, isr=(0, 2))
    leader.writer.finish()  # written, but the controller's newer state stays
    assert leader.partition.isr == (0, 2) and leader.partition.partition_epoch == 1
    assert leader.r.rm.isr_propagator is not None
    assert set(leader.r.rm.isr_propagator.pending) == {A}  # ZooKeeper did change


# -- fetch validation ----------------------------------------------------------------------------


def test_fetch_from_a_broker_that_is_no_replica_is_refused(leader: Leader) -> None:
    leader.produce(1)
    result = leader.follower_fetch(7, 0)
    assert result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and result.records is None
    assert 7 not in leader.partition.followers


def test_follower_offset_beyond_the_leader_is_out_of_range_and_not_recorded(
    leader: Leader,
) -> None:
    assert leader.follower_fetch(1, 5).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert leader.partition.followers[1].log_end_offset == -1


# -- leadership changes ----------------------------------------------------------------------------


def test_continuing_leader_keeps_follower_offsets_new_leader_forgets_them(leader: Leader) -> None:
    leader.produce(2)
    leader.follower_fetch(1, 2)
    leader.lead(epoch=1, isr=(0, 1, 2))
    assert leader.partition.followers[1].log_end_offset == 2
    assert leader.partition.leader_epoch_start_offset == 2
    leader.lead(epoch=2, leader=1)  # follower now
    assert leader.partition.followers == {}
    leader.lead(epoch=3)
    assert leader.partition.followers[1].log_end_offset == -1
    assert leader.hw == 0  # never lowered, and not raised before the followers fetch


# -- metrics ---------------------------------------------------------------------------------------


def test_follower_lag_gauges_per_follower(leader: Leader) -> None:
    leader.produce(5)
    leader.follower_fetch(1, 3)
    assert leader.metric("minikafka_follower_max_lag_messages", {"follower": "1"}) == 2
    assert leader.metric("minikafka_follower_lag_messages", {"follower": "2"}) == 5


async def test_changes_are_propagated_after_the_blackout(leader: Leader) -> None:
    propagator = leader.r.rm.isr_propagator
    assert propagator is not None
    leader.advance(LAG_MS + 1)
    leader.r.rm.maybe_shrink_isr()
    leader.writer.finish()
    assert not await propagator.maybe_propagate()  # the change is too fresh
    leader.advance(propagator.times.blackout_ms + 1)
    assert await propagator.maybe_propagate()
    assert leader.notified == [[A]] and not propagator.pending
