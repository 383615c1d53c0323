"""ReplicaManager: LeaderAndIsr/StopReplica with controller-epoch and leader-epoch fencing,
appends with per-partition errors and metrics, acks=all through the produce purgatory
(completed, timed out, leadership lost), on real logs and a MockClock timer. The ISR's
part (follower fetches, shrink and expansion) is test_replica_manager_isr's."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from broker.delayed import DelayedFetch, DelayedProduce, ProducePartitionResult
from broker.metrics import BrokerMetrics
from broker.partition import Partition
from broker.produce_records import check_produce_records
from broker.replica_manager import ReplicaManager
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from storage import Log, LogManager, StorageError
from tests.unit.broker.broker_helpers import batch, local_replicas, partition_state, run_now
from timer import DelayedOperationPurgatory
from timer.clock import MockClock

A = TopicPartition("orders", 0)
B = TopicPartition("orders", 1)
TOPIC_ID = uuid.UUID("0b3ad1c2-4e5f-4a6b-8c7d-9e0f1a2b3c4d")


@dataclass
class Broker:
    clock: MockClock
    log_manager: LogManager
    produce: DelayedOperationPurgatory[DelayedProduce]
    fetch: DelayedOperationPurgatory[DelayedFetch]
    metrics: BrokerMetrics
    rm: ReplicaManager
    min_isr: dict[str, int] = field(default_factory=dict)
    known: set[TopicPartition] = field(default_factory=set)

    def lead(self, *tps: TopicPartition, epoch: int = 0, **kw: Any) -> dict[TopicPartition, int]:
        states = [partition_state(tp, epoch=epoch, **kw) for tp in tps]
        return run_now(self.rm.become_leader_or_follower(1, 1, states, {"orders": TOPIC_ID}))

    def log(self, tp: TopicPartition) -> Log:
        found = self.log_manager.get_log(tp)
        assert found is not None
        return found

    def partition(self, tp: TopicPartition) -> Partition:
        found = self.rm.partition_for(tp)
        assert found is not None
        return found

    def produce_now(
        self, entries: Mapping[TopicPartition, bytes], acks: int = 1, timeout_ms: int = 1000
    ) -> list[dict[TopicPartition, ProducePartitionResult]]:
        got: list[dict[TopicPartition, ProducePartitionResult]] = []
        self.rm.append_records(
            {tp: check_produce_records(records, 9) for tp, records in entries.items()},
            required_acks=acks,
            timeout_ms=timeout_ms,
            on_done=got.append,
        )
        return got


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    min_isr: dict[str, int] = {}
    known: set[TopicPartition] = set()
    r = local_replicas(
        tmp_path,
        min_insync_replicas=lambda topic: min_isr.get(topic, 1),
        is_known_partition=lambda t, p: TopicPartition(t, p) in known,
    )
    yield Broker(r.clock, r.log_manager, r.produce, r.fetch, r.metrics, r.rm, min_isr, known)
    r.log_manager.shutdown()


def metric(broker: Broker, name: str, **labels: str) -> float:
    value = broker.metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


# -- LeaderAndIsr -------------------------------------------------------------------------


def test_become_leader_creates_partitions_and_logs(broker: Broker) -> None:
    assert broker.lead(A, B) == {A: ErrorCode.NONE, B: ErrorCode.NONE}
    assert {p.tp for p in broker.rm.leader_partitions()} == {A, B}
    assert broker.partition(A).topic_id == TOPIC_ID
    assert broker.log(A).topic_id == "CzrRwk5fSmuMfZ4PGis8TQ"
    assert broker.rm.controller_epoch == 1


async def test_stale_controller_epoch_refuses_whole_request(broker: Broker) -> None:
    await broker.rm.become_leader_or_follower(1, 5, [partition_state(A)], {})
    answer = await broker.rm.become_leader_or_follower(1, 4, [partition_state(B)], {})
    assert answer == {B: ErrorCode.STALE_CONTROLLER_EPOCH}
    assert broker.rm.get_partition("orders", 1) is None
    assert broker.rm.is_stale_controller_epoch(4) and not broker.rm.is_stale_controller_epoch(5)


def test_leader_epoch_not_newer_is_stale_and_changes_nothing(broker: Broker) -> None:
    broker.lead(A, epoch=3)
    assert broker.lead(A, epoch=3) == {A: ErrorCode.STALE_CONTROLLER_EPOCH}
    assert broker.lead(A, epoch=2) == {A: ErrorCode.STALE_CONTROLLER_EPOCH}
    assert broker.partition(A).leader_epoch == 3
    assert broker.lead(A, epoch=4) == {A: ErrorCode.NONE}


def test_broker_not_in_replicas_is_unknown_partition(broker: Broker) -> None:
    answer = broker.lead(A, replicas=(1, 2), isr=(1, 2))
    assert answer == {A: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert broker.rm.get_partition("orders", 0) is None
    assert broker.log_manager.get_log(A) is None


def test_log_of_another_topic_id_is_inconsistent(broker: Broker) -> None:
    broker.log_manager.get_or_create_log(A, "AAAAAAAAAAAAAAAAAAAAAA")
    assert broker.lead(A) == {A: ErrorCode.INCONSISTENT_TOPIC_ID}


def test_log_that_cannot_open_is_storage_error(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> Any:
        raise StorageError("disk gone")

    monkeypatch.setattr(broker.log_manager, "get_or_create_log", broken)
    assert broker.lead(A) == {A: ErrorCode.KAFKA_STORAGE_ERROR}
    assert broker.rm.get_partition("orders", 0) is None


def test_follower_then_leader(broker: Broker) -> None:
    answer = broker.lead(A, leader=1, isr=(0, 1), replicas=(0, 1))
    assert answer == {A: ErrorCode.NONE}
    assert broker.rm.leader_partitions() == []
    assert broker.produce_now({A: batch()})[0][A].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    broker.lead(A, epoch=1, isr=(0, 1), replicas=(0, 1))
    assert broker.produce_now({A: batch()})[0][A].error_code == ErrorCode.NONE


def test_under_replicated_gauge(broker: Broker) -> None:
    broker.lead(A, isr=(0,), replicas=(0, 1))
    broker.lead(B, isr=(0, 1), replicas=(0, 1))
    assert broker.rm.under_replicated_count() == 1
    assert metric(broker, "minikafka_under_replicated_partitions") == 1


# -- StopReplica --------------------------------------------------------------------------


async def test_stop_replica_with_delete_removes_partition_and_log(broker: Broker) -> None:
    broker.lead(A, B)
    directory = broker.log(A).directory
    assert await broker.rm.stop_replicas(1, [("orders", 0, True), ("orders", 1, False)]) == {
        A: ErrorCode.NONE,
        B: ErrorCode.NONE,
    }
    assert broker.rm.get_partition("orders", 0) is None
    assert broker.log_manager.get_log(A) is None
    assert not os.path.exists(directory)
    assert broker.rm.get_partition("orders", 1) is not None
    assert broker.log_manager.get_log(B) is not None


async def test_stop_replica_fencing(broker: Broker) -> None:
    broker.lead(A, epoch=5)
    assert await broker.rm.stop_replicas(0, [("orders", 0, True)]) == {
        A: ErrorCode.STALE_CONTROLLER_EPOCH
    }
    fenced = await broker.rm.stop_replicas(1, [("orders", 0, True)], leader_epochs={A: 4})
    assert fenced == {A: ErrorCode.FENCED_LEADER_EPOCH}
    assert broker.rm.get_partition("orders", 0) is not None
    deleting = await broker.rm.stop_replicas(1, [("orders", 0, True)], leader_epochs={A: -2})
    assert deleting == {A: ErrorCode.NONE}


# -- produce ------------------------------------------------------------------------------


def test_append_results_offsets_and_metrics(broker: Broker) -> None:
    broker.lead(A, B)
    [first] = broker.produce_now({A: batch(3), B: batch(1)})
    [second] = broker.produce_now({A: batch(2)})
    assert (first[A].error_code, first[A].base_offset, first[A].log_start_offset) == (0, 0, 0)
    assert first[A].log_append_time_ms == -1
    assert second[A].base_offset == 3
    assert metric(broker, "minikafka_topic_messages_in_total", topic="orders") == 6
    expected = len(batch(3)) + len(batch(1)) + len(batch(2))
    assert metric(broker, "minikafka_topic_bytes_in_total", topic="orders") == expected


def test_log_append_time_topic_stamps_broker_time(broker: Broker) -> None:
    broker.log_manager.update_topic_config("orders", {"message.timestamp.type": "LogAppendTime"})
    broker.lead(A)
    [result] = broker.produce_now({A: batch(2)})
    assert result[A].log_append_time_ms == broker.clock.time_ms()
    header = next(broker.log(A).iter_batch_headers(0))[2]
    assert header.max_timestamp == broker.clock.time_ms()


def test_unknown_elsewhere_internal_and_invalid_acks(broker: Broker) -> None:
    broker.known.add(B)
    offsets = TopicPartition("__consumer_offsets", 0)
    [result] = broker.produce_now({A: batch(), B: batch(), offsets: batch()})
    assert result[A].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert result[B].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert result[offsets].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    [bad] = broker.produce_now({A: batch()}, acks=2)
    assert bad[A].error_code == ErrorCode.INVALID_REQUIRED_ACKS


def test_refused_records_are_counted_as_rejected_bytes_only_where_led(broker: Broker) -> None:
    broker.lead(A)
    broker.known.add(B)
    damaged = bytearray(batch(2))
    damaged[-1] ^= 0x55
    [result] = broker.produce_now({A: bytes(damaged), B: bytes(damaged)})
    assert result[A].error_code == ErrorCode.CORRUPT_MESSAGE
    assert result[B].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER  # the role first
    assert metric(broker, "minikafka_topic_bytes_rejected_total", topic="orders") == len(damaged)
    assert metric(broker, "minikafka_topic_failed_produce_requests_total", topic="orders") == 2


def test_storage_error_fails_only_its_partition(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker.lead(A, B)
    log_b = broker.log_manager.get_log(B)

    def broken(*args: object, **kwargs: object) -> Any:
        raise StorageError("No space left on device")

    monkeypatch.setattr(log_b, "append", broken)
    [result] = broker.produce_now({A: batch(), B: batch()})
    assert result[A].error_code == ErrorCode.NONE
    assert result[B].error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert result[B].base_offset == -1


def test_idempotent_retry_returns_original_offsets_and_is_not_counted(broker: Broker) -> None:
    broker.lead(A)
    broker.produce_now({A: batch(1)})
    [first] = broker.produce_now({A: batch(2, producer_id=9, epoch=0, seq=0)})
    [retry] = broker.produce_now({A: batch(2, producer_id=9, epoch=0, seq=0)})
    [gap] = broker.produce_now({A: batch(1, producer_id=9, epoch=0, seq=7)})
    assert first[A].base_offset == retry[A].base_offset == 1
    assert retry[A].error_code == ErrorCode.NONE
    assert gap[A].error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert broker.log(A).log_end_offset == 3
    assert metric(broker, "minikafka_topic_messages_in_total", topic="orders") == 3


def test_acks_all_completes_at_once_when_leader_appended(broker: Broker) -> None:
    broker.lead(A)
    [result] = broker.produce_now({A: batch(2)}, acks=-1)
    assert result[A].error_code == ErrorCode.NONE and result[A].base_offset == 0
    assert broker.produce.num_delayed == 0


def test_acks_all_below_min_isr_is_not_enough_replicas(broker: Broker) -> None:
    broker.min_isr["orders"] = 2
    broker.lead(A, isr=(0,), replicas=(0, 1))
    [result] = broker.produce_now({A: batch()}, acks=-1)
    assert result[A].error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert broker.log(A).log_end_offset == 0
    [acks1] = broker.produce_now({A: batch()}, acks=1)
    assert acks1[A].error_code == ErrorCode.NONE


def stuck_high_watermark(
    broker: Broker, tp: TopicPartition, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As if followers had not fetched yet: appends leave the high watermark behind."""
    partition = broker.partition(tp)
    monkeypatch.setattr(partition, "maybe_increment_high_watermark", lambda: False)


def test_acks_all_waits_then_completes_when_high_watermark_passes(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker.lead(A, B)
    stuck_high_watermark(broker, A, monkeypatch)
    got = broker.produce_now({A: batch(2), B: batch(1)}, acks=-1)
    assert got == [] and broker.produce.num_delayed == 1
    broker.log(A).update_high_watermark(1)
    broker.produce.check_and_complete(A)
    assert got == []  # offset 1 is not enough: the batch ends at 2
    broker.log(A).update_high_watermark(2)
    broker.produce.check_and_complete(A)
    [result] = got
    assert result[A].error_code == result[B].error_code == ErrorCode.NONE
    assert result[A].base_offset == 0 and result[B].base_offset == 0


def test_acks_all_answers_a_partition_acknowledged_on_append_as_it_was_then(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B's high watermark passes its append at once (the leader is its ISR), A's does
    not: B's answer is settled when the produce starts waiting, against the ISR and
    min.insync.replicas of that moment, not when A's followers catch up."""
    broker.lead(A, B)
    stuck_high_watermark(broker, A, monkeypatch)
    got = broker.produce_now({A: batch(2), B: batch(1)}, acks=-1)
    assert got == []
    broker.min_isr["orders"] = 2  # from now on B's ISR of one is too small
    broker.log(A).update_high_watermark(2)
    broker.produce.check_and_complete(A)
    [result] = got
    assert result[B].error_code == ErrorCode.NONE
    assert result[A].error_code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_acks_all_times_out(broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    broker.lead(A)
    stuck_high_watermark(broker, A, monkeypatch)
    got = broker.produce_now({A: batch()}, acks=-1, timeout_ms=300)
    broker.clock.advance(299)
    broker.produce.advance_clock()
    assert got == []
    broker.clock.advance(1)
    broker.produce.advance_clock()
    assert got[0][A].error_code == ErrorCode.REQUEST_TIMED_OUT
    assert broker.produce.num_delayed == 0


def test_acks_all_losing_leadership_answers_not_leader(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker.lead(A)
    stuck_high_watermark(broker, A, monkeypatch)
    got = broker.produce_now({A: batch()}, acks=-1)
    broker.lead(A, leader=1, epoch=1, isr=(0, 1), replicas=(0, 1))
    assert got[0][A].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_acks_all_with_every_partition_failed_answers_at_once(broker: Broker) -> None:
    [result] = broker.produce_now({A: batch()}, acks=-1)
    assert result[A].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.produce.num_delayed == 0
