"""The pure rules of DeleteRecords: which offset a request may move the log start to, and
the low watermark over the live replicas; and DelayedDeleteRecords deciding per partition
over fake leaders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from broker.delayed.delete_records import (
    DelayedDeleteRecords,
    DeleteRecordsPartitionResult,
    DeleteRecordsPartitionStatus,
)
from broker.record_deletion import HIGH_WATERMARK, DeletionRefused, deletion_offset, low_watermark
from protocol.errors import ErrorCode
from protocol.values import TopicPartition

# -- deletion_offset -----------------------------------------------------------------------


def test_an_offset_up_to_the_high_watermark_is_the_new_log_start() -> None:
    assert deletion_offset("t", 0, high_watermark=10, deletes=True) == 0
    assert deletion_offset("t", 4, high_watermark=10, deletes=True) == 4
    assert deletion_offset("t", 10, high_watermark=10, deletes=True) == 10


def test_minus_one_means_the_high_watermark() -> None:
    assert HIGH_WATERMARK == -1
    assert deletion_offset("t", HIGH_WATERMARK, high_watermark=7, deletes=True) == 7


@pytest.mark.parametrize("offset", [11, 1 << 40, -2, -100])
def test_offsets_above_the_high_watermark_or_negative_are_out_of_range(offset: int) -> None:
    with pytest.raises(DeletionRefused) as refused:
        deletion_offset("t", offset, high_watermark=10, deletes=True)
    assert refused.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_compact_only_topic_refuses_by_policy_before_looking_at_the_offset() -> None:
    with pytest.raises(DeletionRefused) as refused:
        deletion_offset("t", 99, high_watermark=10, deletes=False)
    assert refused.value.error_code == ErrorCode.POLICY_VIOLATION


def test_internal_topics_are_refused() -> None:
    with pytest.raises(DeletionRefused) as refused:
        deletion_offset("__consumer_offsets", 0, high_watermark=10, deletes=True)
    assert refused.value.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


# -- low_watermark -------------------------------------------------------------------------


def everyone_alive(broker_id: int) -> bool:
    return True


def test_low_watermark_is_the_smallest_log_start_over_leader_and_followers() -> None:
    assert low_watermark(5, {1: 5, 2: 3}, everyone_alive) == 3
    assert low_watermark(5, {1: 8, 2: 9}, everyone_alive) == 5  # the leader's own counts
    assert low_watermark(5, {}, everyone_alive) == 5


def test_followers_on_dead_brokers_do_not_count() -> None:
    assert low_watermark(5, {1: 5, 2: 0}, lambda b: b != 2) == 5


def test_a_follower_that_has_not_fetched_holds_the_low_watermark_at_unknown() -> None:
    assert low_watermark(5, {1: 5, 2: -1}, everyone_alive) == -1


# -- DelayedDeleteRecords ------------------------------------------------------------------

A = TopicPartition("t", 0)
B = TopicPartition("t", 1)


@dataclass
class FakeLeader:
    lw: int
    is_leader: bool = True
    is_offline: bool = False

    def low_watermark(self, is_alive: Callable[[int], bool]) -> int:
        return self.lw


Results = dict[TopicPartition, DeleteRecordsPartitionResult]


def waiting(
    partitions: dict[TopicPartition, FakeLeader | None], required: dict[TopicPartition, int]
) -> tuple[DelayedDeleteRecords, list[Results]]:
    done: list[Results] = []
    statuses = {
        tp: DeleteRecordsPartitionStatus(offset, DeleteRecordsPartitionResult(), True)
        for tp, offset in required.items()
    }
    op = DelayedDeleteRecords(1000, statuses, partitions.get, everyone_alive, done.append)
    return op, done


def test_completes_once_every_low_watermark_reached_its_offset() -> None:
    leaders: dict[TopicPartition, FakeLeader | None] = {A: FakeLeader(2), B: FakeLeader(9)}
    op, done = waiting(leaders, {A: 4, B: 9})
    assert not op.try_complete() and not done
    leaders[A] = FakeLeader(5)
    assert op.try_complete()
    assert done == [
        {
            A: DeleteRecordsPartitionResult(ErrorCode.NONE, 5),
            B: DeleteRecordsPartitionResult(ErrorCode.NONE, 9),
        }
    ]


@pytest.mark.parametrize(
    ("leader", "error"),
    [
        (None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (FakeLeader(0, is_leader=False), ErrorCode.NOT_LEADER_OR_FOLLOWER),
        (FakeLeader(0, is_offline=True), ErrorCode.KAFKA_STORAGE_ERROR),
    ],
)
def test_a_partition_gone_moved_or_offline_is_answered_with_its_error(
    leader: FakeLeader | None, error: int
) -> None:
    op, done = waiting({A: leader}, {A: 4})
    assert op.try_complete()
    assert done == [{A: DeleteRecordsPartitionResult(error, -1)}]


def test_the_timeout_answers_request_timed_out_with_the_last_low_watermark() -> None:
    op, done = waiting({A: FakeLeader(2)}, {A: 4})
    assert not op.try_complete()
    op.run()  # the timer's expiry
    assert done == [{A: DeleteRecordsPartitionResult(ErrorCode.REQUEST_TIMED_OUT, 2)}]
