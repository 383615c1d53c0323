"""DelayedProduce's decision table with fake partitions and a MockClock purgatory:
per-partition outcomes, exactly-once completion, and the timeout."""

from __future__ import annotations

from dataclasses import dataclass

from broker.delayed import DelayedProduce, ProducePartitionResult, ProducePartitionStatus
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from timer import DelayedOperationPurgatory
from timer.clock import MockClock

A = TopicPartition("t", 0)
B = TopicPartition("t", 1)
C = TopicPartition("t", 2)


@dataclass
class FakePartition:
    is_leader: bool = True
    high_watermark: int = 0
    isr: tuple[int, ...] = (0, 1)


Calls = list[dict[TopicPartition, ProducePartitionResult]]


def setup(
    partitions: dict[TopicPartition, FakePartition], min_isr: int = 1, delay_ms: int = 100
) -> tuple[MockClock, DelayedOperationPurgatory[DelayedProduce], DelayedProduce, Calls]:
    clock = MockClock()
    purgatory: DelayedOperationPurgatory[DelayedProduce] = DelayedOperationPurgatory(
        "Produce", clock=clock, reaper_enabled=False
    )
    calls: Calls = []
    statuses = {
        A: ProducePartitionStatus(10, ProducePartitionResult(0, base_offset=5), True),
        B: ProducePartitionStatus(20, ProducePartitionResult(0, base_offset=15), True),
        # failed to append: final from the start
        C: ProducePartitionStatus(-1, ProducePartitionResult(ErrorCode.CORRUPT_MESSAGE), False),
    }
    op = DelayedProduce(delay_ms, statuses, partitions.get, lambda topic: min_isr, calls.append)
    purgatory.try_complete_else_watch(op, [A, B])
    return clock, purgatory, op, calls


def codes(result: dict[TopicPartition, ProducePartitionResult]) -> list[int]:
    return [result[tp].error_code for tp in (A, B, C)]


def test_waits_until_every_partition_is_satisfied() -> None:
    parts = {A: FakePartition(high_watermark=10), B: FakePartition(high_watermark=19)}
    _, purgatory, op, calls = setup(parts)
    assert calls == [] and not op.is_completed
    parts[B].high_watermark = 20
    purgatory.check_and_complete(B)
    assert codes(calls[0]) == [0, 0, ErrorCode.CORRUPT_MESSAGE]
    assert calls[0][A].base_offset == 5


def test_partition_gone_or_not_leader() -> None:
    parts = {A: FakePartition(is_leader=False)}
    *_, calls = setup(parts)
    assert codes(calls[0])[:2] == [
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ]


def test_isr_below_min_when_reached_is_not_enough_replicas_after_append() -> None:
    parts = {A: FakePartition(high_watermark=10, isr=(0,)), B: FakePartition(high_watermark=20)}
    _, _, _, calls = setup(parts, min_isr=2)
    assert codes(calls[0])[:2] == [ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.NONE]


def test_timeout_marks_only_waiting_partitions_and_completes_once() -> None:
    parts = {A: FakePartition(high_watermark=10), B: FakePartition(high_watermark=0)}
    clock, purgatory, op, calls = setup(parts, delay_ms=100)
    purgatory.check_and_complete(A)
    clock.advance(100)
    purgatory.advance_clock()
    assert codes(calls[0]) == [0, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.CORRUPT_MESSAGE]
    parts[B].high_watermark = 20
    purgatory.check_and_complete(B)
    assert not op.force_complete()
    assert len(calls) == 1


def test_an_acknowledged_partition_keeps_its_answer_while_another_waits() -> None:
    parts = {A: FakePartition(high_watermark=10), B: FakePartition(high_watermark=0)}
    _, purgatory, op, calls = setup(parts, min_isr=2)
    # A was acknowledged by the first try; what happens to it afterwards is not looked at
    parts[A].is_leader = False
    parts[A].isr = (0,)
    parts[B].high_watermark = 20
    purgatory.check_and_complete(B)
    assert codes(calls[0]) == [0, 0, ErrorCode.CORRUPT_MESSAGE]
    assert op.is_completed and len(calls) == 1
