"""A dynamic num.replica.fetchers: every followed partition moves to the fetcher the new
count gives it, keeping its fetch state; the old fetchers stop. The fetchers'
connections never open here (the connect function waits forever)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.replication import FetcherConfig, FetchState, ReplicaFetcherManager
from broker.replication.fetch_state import PartitionFetchState
from broker.replication.manager import fetcher_id_for
from broker.replication.throttle import ThrottleSide
from client.security import PLAINTEXT
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from tests.unit.broker.broker_helpers import (
    LocalReplicas,
    local_replicas,
    partition_state,
    unthrottled,
)
from tests.unit.broker.test_replica_manager_fetchers import CACHE, never_connects
from timer.clock import MockClock

TPS = [TopicPartition("orders", p) for p in range(8)]


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalReplicas]:
    clock = MockClock()
    manager = ReplicaFetcherManager(
        FetcherConfig(broker_id=0, security=PLAINTEXT, num_fetchers=1),
        clock,
        throttle=unthrottled(ThrottleSide.FOLLOWER, 0, clock),
        connect=never_connects,
    )
    replicas = local_replicas(tmp_path, replica_fetchers=manager, leader_endpoint=CACHE.get)
    states = [partition_state(tp, leader=2, epoch=3, replicas=(0, 2)) for tp in TPS]
    errors = await replicas.rm.become_leader_or_follower(1, 1, states, {}, [])
    assert set(errors.values()) == {ErrorCode.NONE}
    yield replicas
    await replicas.rm.shutdown()
    replicas.log_manager.shutdown()


def manager_of(local: LocalReplicas) -> ReplicaFetcherManager:
    assert local.rm.replica_fetchers is not None
    return local.rm.replica_fetchers


async def test_growing_spreads_the_partitions_with_their_states(local: LocalReplicas) -> None:
    manager = manager_of(local)
    assert set(manager.fetchers) == {(2, 0)}
    # each partition keeps its state (one given a delay here, to tell it apart)
    old = manager.fetchers[(2, 0)]
    moved = PartitionFetchState(2, 3, FetchState.FETCHING, delayed_until_ms=7)
    old.adopt(TPS[0], old.remove_partitions([TPS[0]])[TPS[0]][0], moved)
    before = {tp: manager.fetch_state(tp) for tp in TPS}
    assert before[TPS[0]] == moved
    manager.resize(3)
    assert manager.config.num_fetchers == 3
    assert set(manager.fetchers) == {(2, fetcher_id_for(tp, 3)) for tp in TPS}
    assert len(manager.fetchers) > 1
    for tp in TPS:
        fetcher = manager.fetcher_of(tp)
        assert fetcher is not None and fetcher.fetcher_id == fetcher_id_for(tp, 3)
    assert {tp: manager.fetch_state(tp) for tp in TPS} == before
    assert old not in manager.fetchers.values()


async def test_shrinking_gathers_them_again(local: LocalReplicas) -> None:
    manager = manager_of(local)
    manager.resize(2)
    manager.resize(1)
    assert set(manager.fetchers) == {(2, 0)}
    assert all(manager.fetch_state(tp) is not None for tp in TPS)
    # partitions added afterwards go by the new count too
    manager.resize(2)
    assert set(manager.fetchers) == {(2, fetcher_id_for(tp, 2)) for tp in TPS}


async def test_a_fetcher_count_below_one_is_refused(local: LocalReplicas) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        manager_of(local).resize(0)
