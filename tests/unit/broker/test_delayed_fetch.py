"""DelayedFetch completes early when the fetch can no longer be served as asked: the
log was truncated below the fetch offset, retention moved the log start past it, or
the leader epoch moved past the one the request carried; and a follower's fetch for at
least one byte completes as soon as anything is appended past its offset."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.delayed import DelayedFetch, FetchParams, FetchPartitionResult, PartitionFetchInfo
from broker.partition import Partition
from broker.produce_records import check_produce_records
from protocol.errors import ErrorCode
from protocol.records import BatchBuilder
from protocol.values import TopicPartition
from storage import LogManager, LogManagerConfig
from tests.unit.broker.broker_helpers import lone_partition, partition_state
from timer import DelayedOperationPurgatory
from timer.clock import MockClock

TP = TopicPartition("logs", 0)
Results = list[tuple[TopicPartition, FetchPartitionResult]]


def state(epoch: int) -> Any:
    return partition_state(TP, epoch=epoch)


@pytest.fixture
def partition(tmp_path: Path) -> Iterator[Partition]:
    manager = LogManager(LogManagerConfig(log_dirs=(str(tmp_path),)), MockClock())
    p = lone_partition(TP, 0, manager)
    p.make_leader(state(1), uuid.uuid4())
    for _ in range(3):
        builder = BatchBuilder()
        builder.append(1, None, b"v")
        p.append_records_to_leader(
            check_produce_records(bytes(builder.build()), 9),
            required_acks=1,
            min_insync_replicas=1,
        )
    yield p
    manager.shutdown()


def waiting_fetch(
    partition: Partition,
    offset: int,
    epoch: int = -1,
    *,
    params: FetchParams | None = None,
    partition_max_bytes: int = 1 << 20,
) -> tuple[DelayedOperationPurgatory[DelayedFetch], list[Results]]:
    """A fetch at ``offset`` (by default one that needs more than there is), watched
    under TP."""
    purgatory: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory(
        "Fetch", clock=MockClock(), reaper_enabled=False
    )
    got: list[Results] = []
    if params is None:
        params = FetchParams(-1, max_wait_ms=1000, min_bytes=1 << 20, max_bytes=1 << 20)
    infos = [(TP, PartitionFetchInfo(offset, partition_max_bytes, epoch))]

    def read(params: FetchParams, infos: object) -> Results:
        return [(TP, FetchPartitionResult(ErrorCode.NONE, partition.high_watermark))]

    op = DelayedFetch(
        params, infos, {TP: partition}.get, read, got.append, held_back=lambda _tp, _p: False
    )
    purgatory.try_complete_else_watch(op, [TP])
    return purgatory, got


def test_waits_while_too_little_is_readable(partition: Partition) -> None:
    purgatory, got = waiting_fetch(partition, 1)
    purgatory.check_and_complete(TP)
    assert got == [] and purgatory.num_delayed == 1


def test_truncation_below_fetch_offset_completes(partition: Partition) -> None:
    purgatory, got = waiting_fetch(partition, 3)
    assert partition.log is not None
    partition.log.truncate_to(1)
    purgatory.check_and_complete(TP)
    assert len(got) == 1


def test_log_start_past_fetch_offset_completes(partition: Partition) -> None:
    purgatory, got = waiting_fetch(partition, 1)
    assert partition.log is not None
    partition.log.increment_log_start_offset(2)
    purgatory.check_and_complete(TP)
    assert len(got) == 1


def test_new_leader_epoch_completes(partition: Partition) -> None:
    purgatory, got = waiting_fetch(partition, 1, epoch=1)
    partition.make_leader(state(2), None)
    purgatory.check_and_complete(TP)
    assert len(got) == 1


FOLLOWER = FetchParams(1, max_wait_ms=1000, min_bytes=1, max_bytes=1 << 20)


def append_one(partition: Partition) -> None:
    builder = BatchBuilder()
    builder.append(1, None, b"v")
    partition.append_records_to_leader(
        check_produce_records(bytes(builder.build()), 9), required_acks=1, min_insync_replicas=1
    )


def test_follower_fetch_at_log_end_waits_for_an_append(partition: Partition) -> None:
    purgatory, got = waiting_fetch(partition, 3, params=FOLLOWER)
    purgatory.check_and_complete(TP)
    assert got == [] and purgatory.num_delayed == 1
    append_one(partition)
    purgatory.check_and_complete(TP)
    assert len(got) == 1 and purgatory.num_delayed == 0


def test_follower_fetch_of_zero_bytes_a_partition_keeps_waiting(partition: Partition) -> None:
    purgatory, got = waiting_fetch(partition, 3, params=FOLLOWER, partition_max_bytes=0)
    append_one(partition)
    purgatory.check_and_complete(TP)
    assert got == [] and purgatory.num_delayed == 1


def unchanged_fetch(
    partition: Partition,
) -> tuple[DelayedOperationPurgatory[DelayedFetch], DelayedFetch, list[Results], list[int]]:
    """A follower's fetch at the log end, parked with its first read's answer."""
    purgatory: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory(
        "Fetch", clock=MockClock(), reaper_enabled=False
    )
    got: list[Results] = []
    reads: list[int] = []
    first: Results = [(TP, FetchPartitionResult(ErrorCode.NONE, 3, 3, 0, None))]

    def read(params: FetchParams, infos: object) -> Results:
        reads.append(1)
        return [(TP, FetchPartitionResult(ErrorCode.NONE, partition.high_watermark))]

    params = FetchParams(1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20)
    infos = [(TP, PartitionFetchInfo(3, 1 << 20, -1))]
    op = DelayedFetch(
        params,
        infos,
        {TP: partition}.get,
        read,
        got.append,
        held_back=lambda _tp, _p: False,
        unchanged=first,
    )
    purgatory.watch(op, [TP])
    return purgatory, op, got, reads


def test_a_timeout_nothing_woke_answers_the_first_read(partition: Partition) -> None:
    _, op, got, reads = unchanged_fetch(partition)
    op.run()  # the timeout
    assert reads == [] and got == [[(TP, FetchPartitionResult(ErrorCode.NONE, 3, 3, 0, None))]]


def test_a_wake_up_makes_the_timeout_read_afresh(partition: Partition) -> None:
    purgatory, op, got, reads = unchanged_fetch(partition)
    purgatory.check_and_complete(TP)  # woken (a high watermark move, say), not enough
    assert got == [] and not op.is_completed
    op.run()
    assert reads == [1] and len(got) == 1
