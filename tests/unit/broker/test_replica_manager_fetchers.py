"""ReplicaManager's wiring of the replica fetchers: LeaderAndIsr adds the partitions this
broker follows (TRUNCATING, at the new epoch, from the leader's address) and removes
those it now leads; StopReplica and shutdown remove them. The fetchers' connections
never open here (the connect function waits forever): only the wiring is looked at."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.partition import PartitionStateLike
from broker.replication import (
    FetcherConfig,
    FetchState,
    LeaderEndpoint,
    ReplicaFetcherManager,
)
from broker.replication.throttle import ThrottleSide
from client.connection import Connection, ConnectionConfig
from client.security import PLAINTEXT
from protocol.errors import ErrorCode
from protocol.messages import LeaderAndIsrRequest
from protocol.values import TopicPartition
from tests.unit.broker.broker_helpers import (
    LocalReplicas,
    local_replicas,
    partition_state,
    unthrottled,
)
from timer.clock import MockClock

A = TopicPartition("orders", 0)
B = TopicPartition("orders", 1)
CACHE = {2: ("cache-host", 9092)}


async def never_connects(host: str, port: int, config: ConnectionConfig) -> Connection:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


LiveLeader = LeaderAndIsrRequest.LeaderAndIsrLiveLeader


def live(broker_id: int, host: str, port: int) -> LiveLeader:
    return LiveLeader(broker_id=broker_id, host_name=host, port=port)


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalReplicas]:
    clock = MockClock()
    manager = ReplicaFetcherManager(
        FetcherConfig(broker_id=0, security=PLAINTEXT, num_fetchers=2),
        clock,
        throttle=unthrottled(ThrottleSide.FOLLOWER, 0, clock),
        connect=never_connects,
    )
    replicas = local_replicas(tmp_path, replica_fetchers=manager, leader_endpoint=CACHE.get)
    yield replicas
    await replicas.rm.shutdown()
    replicas.log_manager.shutdown()


def fetchers(local: LocalReplicas) -> ReplicaFetcherManager:
    assert local.rm.replica_fetchers is not None
    return local.rm.replica_fetchers


async def become(
    local: LocalReplicas, *states: PartitionStateLike, leaders: list[LiveLeader] | None = None
) -> None:
    errors = await local.rm.become_leader_or_follower(1, 1, list(states), {}, leaders or [])
    assert set(errors.values()) == {ErrorCode.NONE}


async def test_a_new_follower_is_fetched_from_its_leader_in_truncating(
    local: LocalReplicas,
) -> None:
    await become(local, partition_state(A, leader=2, epoch=3, replicas=(0, 2)))
    state = fetchers(local).fetch_state(A)
    assert state is not None
    assert (state.leader_id, state.leader_epoch, state.state) == (2, 3, FetchState.TRUNCATING)
    fetcher = fetchers(local).fetcher_of(A)
    assert fetcher is not None
    assert fetcher.leader == LeaderEndpoint(2, "cache-host", 9092)
    assert fetcher.client_id.startswith("broker-0-fetcher-")


async def test_live_leaders_give_the_address_the_cache_lacks(local: LocalReplicas) -> None:
    await become(
        local,
        partition_state(A, leader=1, epoch=1, replicas=(0, 1)),
        leaders=[live(1, "live-host", 9999)],
    )
    fetcher = fetchers(local).fetcher_of(A)
    assert fetcher is not None and fetcher.leader == LeaderEndpoint(1, "live-host", 9999)


async def test_a_leader_nobody_can_reach_is_not_fetched(local: LocalReplicas) -> None:
    await become(local, partition_state(A, leader=5, epoch=1, replicas=(0, 5)))
    assert fetchers(local).fetch_state(A) is None
    await become(local, partition_state(B, leader=-1, epoch=1, replicas=(0, 2)))
    assert fetchers(local).fetch_state(B) is None


async def test_becoming_leader_removes_the_partition_and_stops_an_idle_fetcher(
    local: LocalReplicas,
) -> None:
    await become(local, partition_state(A, leader=2, epoch=1, replicas=(0, 2)))
    assert fetchers(local).fetchers
    await become(local, partition_state(A, leader=0, epoch=2, replicas=(0, 2)))
    assert fetchers(local).fetch_state(A) is None
    assert fetchers(local).fetchers == {}
    assert local.rm.partition_for(A) is not None and local.rm.partition_for(A).is_leader  # type: ignore[union-attr]


async def test_a_new_epoch_starts_over_in_truncating(local: LocalReplicas) -> None:
    await become(local, partition_state(A, leader=2, epoch=1, replicas=(0, 1, 2)))
    await become(
        local,
        partition_state(A, leader=1, epoch=2, replicas=(0, 1, 2)),
        leaders=[live(1, "other", 1)],
    )
    state = fetchers(local).fetch_state(A)
    assert state is not None and (state.leader_id, state.leader_epoch) == (1, 2)
    assert state.state is FetchState.TRUNCATING
    assert {key[0] for key in fetchers(local).fetchers} == {1}  # broker 2's fetcher stopped


async def test_stop_replica_and_shutdown_remove_fetchers(local: LocalReplicas) -> None:
    await become(
        local,
        partition_state(A, leader=2, epoch=1, replicas=(0, 2)),
        partition_state(B, leader=2, epoch=1, replicas=(0, 2)),
    )
    await local.rm.stop_replicas(1, [(A.topic, A.partition, False)])
    assert fetchers(local).fetch_state(A) is None
    assert fetchers(local).fetch_state(B) is not None
    tasks = [f._task for f in fetchers(local).fetchers.values()]
    await local.rm.shutdown()
    assert fetchers(local).fetchers == {}
    assert all(t is None or t.done() for t in tasks)
