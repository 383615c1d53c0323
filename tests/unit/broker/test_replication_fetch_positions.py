"""broker.replication.fetch_positions: a fetcher's wanted positions follow the partitions
touched since the last turn (and the waiting ones), every partition on a sweep, and the
changed ones are the candidates of an incremental request."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from broker.partition import Partition, PartitionError
from broker.replication.fetch_positions import SWEEP_MS, FetchPositions
from broker.replication.fetch_state import FetchState, PartitionFetchState
from protocol.values import TopicPartition

A, B = TopicPartition("t", 0), TopicPartition("t", 1)
FETCHING = PartitionFetchState(1, 4, FetchState.FETCHING)
TRUNCATING = PartitionFetchState(1, 4, FetchState.TRUNCATING)


class FakeLog:
    def __init__(self, end: int) -> None:
        self.log_end_offset = end
        self.log_start_offset = 0


def partition(tp: TopicPartition, end: int) -> Any:
    """What FetchPositions reads of a Partition: its log's two offsets."""
    return SimpleNamespace(tp=tp, log=FakeLog(end))


def test_only_touched_partitions_are_looked_at_again() -> None:
    a, b = partition(A, 10), partition(B, 20)
    table: dict[TopicPartition, tuple[Partition, PartitionFetchState]] = {
        A: (a, FETCHING),
        B: (b, FETCHING),
    }
    positions = FetchPositions()
    assert positions.refresh(table, 0) == []  # the first turn looks at all
    assert positions.wanted == {A: (4, 10, 0), B: (4, 20, 0)}
    assert positions.take_changed() == {A, B}
    a.log.log_end_offset = 11
    b.log.log_end_offset = 21
    positions.touch(A)
    positions.refresh(table, 100)
    assert positions.wanted == {A: (4, 11, 0), B: (4, 20, 0)}  # B was not touched
    assert positions.take_changed() == {A} and positions.take_changed() == set()
    positions.refresh(table, SWEEP_MS)  # a sweep sees B's move
    assert positions.wanted[B] == (4, 21, 0) and positions.take_changed() == {B}


def test_waiting_partitions_are_looked_at_every_turn() -> None:
    a = partition(A, 10)
    table: dict[TopicPartition, tuple[Partition, PartitionFetchState]] = {A: (a, TRUNCATING)}
    positions = FetchPositions()
    assert positions.refresh(table, 0) == [A] and positions.wanted == {}
    backing_off = PartitionFetchState(1, 4, FetchState.FETCHING, delayed_until_ms=500)
    table[A] = (a, backing_off)
    positions.touch(A)
    assert positions.refresh(table, 100) == [] and positions.wanted == {}
    positions.refresh(table, 500)  # not touched, but its backoff ended
    assert positions.wanted == {A: (4, 10, 0)} and positions.take_changed() == {A}
    del table[A]
    positions.touch(A)
    positions.refresh(table, 600)
    assert positions.wanted == {} and positions.take_changed() == {A}
    assert positions.touched_since_refresh(A) is False


def test_a_partition_without_a_log_stays_touched() -> None:
    a = partition(A, 10)
    a.log = None
    positions = FetchPositions()
    with pytest.raises(PartitionError):
        positions.refresh({A: (a, FETCHING)}, 0)
    assert positions.touched_since_refresh(A)
