"""Every transition of both state machines, valid and invalid, through the machines."""

from __future__ import annotations

import itertools
import logging
import uuid

import pytest

from controller.context import ControllerContext
from controller.model import PartitionReplica
from controller.partition_state_machine import PartitionStateMachine
from controller.replica_state_machine import ReplicaStateMachine, without_replica
from controller.request_batch import ControllerRequestBatch
from controller.states import (
    PARTITION_TRANSITIONS,
    REPLICA_TRANSITIONS,
    PartitionState,
    ReplicaState,
    check_transition,
)
from protocol.values import NO_LEADER, TopicPartition
from tests.fakes.controller import InMemoryPartitionStateStore
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
)

TP = TopicPartition("t", 0)


def broker(bid: int) -> BrokerInfo:
    return BrokerInfo(bid, (EndPoint("127.0.0.1", 9000 + bid),), epoch=100 + bid)


def make_ctx(live: tuple[int, ...] = (1, 2, 3)) -> ControllerContext:
    ctx = ControllerContext()
    ctx.epoch = 1
    ctx.add_live_brokers(broker(b) for b in live)
    ctx.set_topic(TopicAssignment("t", uuid.uuid4(), {0: (1, 2, 3)}))
    return ctx


def with_leadership(
    ctx: ControllerContext, store: InMemoryPartitionStateStore, leader: int
) -> None:
    st = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 0, (1, 2, 3), 0), 1)
    ctx.put_leadership(TP, st)
    store.states[TP] = st


REPLICA_CASES = list(itertools.product(ReplicaState, ReplicaState))


@pytest.mark.parametrize(
    ("current", "target"), REPLICA_CASES, ids=[f"{c}->{t}" for c, t in REPLICA_CASES]
)
async def test_replica_transition(
    current: ReplicaState, target: ReplicaState, caplog: pytest.LogCaptureFixture
) -> None:
    ctx = make_ctx()
    store = InMemoryPartitionStateStore()
    with_leadership(ctx, store, leader=1)
    pr = PartitionReplica(TP, 2)  # a follower: NEW is allowed for it
    if current is not ReplicaState.NON_EXISTENT:
        ctx.replica_states[pr] = current
    rsm = ReplicaStateMachine(ctx, store)
    batch = ControllerRequestBatch()
    with caplog.at_level(logging.ERROR):
        refused = await rsm.handle_state_changes([pr], target, batch)
    if current in REPLICA_TRANSITIONS[target]:
        assert refused == []
        assert ctx.replica_state(pr) is target
    else:
        assert refused == [pr]
        assert ctx.replica_state(pr) is current
        assert "invalid state transition" in caplog.text
        assert batch.is_empty()


PARTITION_CASES = list(itertools.product(PartitionState, PartitionState))


@pytest.mark.parametrize(
    ("current", "target"), PARTITION_CASES, ids=[f"{c}->{t}" for c, t in PARTITION_CASES]
)
async def test_partition_transition(
    current: PartitionState, target: PartitionState, caplog: pytest.LogCaptureFixture
) -> None:
    ctx = make_ctx()
    store = InMemoryPartitionStateStore()
    if current in (PartitionState.ONLINE, PartitionState.OFFLINE):
        with_leadership(ctx, store, leader=1 if current is PartitionState.ONLINE else 9)
    if current is not PartitionState.NON_EXISTENT:
        ctx.partition_states[TP] = current
    psm = PartitionStateMachine(ctx, store)
    batch = ControllerRequestBatch()
    with caplog.at_level(logging.ERROR):
        failures = await psm.handle_state_changes([TP], target, batch)
    if current in PARTITION_TRANSITIONS[target]:
        assert failures == {}
        assert ctx.partition_state(TP) is target
        if target is PartitionState.ONLINE:
            assert ctx.leadership[TP].leader_and_isr.leader == 1
            assert store.states[TP] == ctx.leadership[TP]  # written before recorded
            assert set(batch.leader_and_isr) == {1, 2, 3}
    else:
        assert TP in failures
        assert ctx.partition_state(TP) is current
        assert "invalid state transition" in caplog.text
        assert batch.is_empty()


def test_check_transition_refuses_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        assert not check_transition(
            PARTITION_TRANSITIONS, TP, PartitionState.NON_EXISTENT, PartitionState.ONLINE
        )
    assert "NonExistentPartition to OnlinePartition" in caplog.text


def test_tables_cover_every_state() -> None:
    assert set(REPLICA_TRANSITIONS) == set(ReplicaState)
    assert set(PARTITION_TRANSITIONS) == set(PartitionState)


async def test_new_partition_gets_first_live_replica_and_live_isr() -> None:
    ctx = make_ctx(live=(2, 3))
    ctx.partition_states[TP] = PartitionState.NEW
    store = InMemoryPartitionStateStore()
    batch = ControllerRequestBatch()
    failures = await PartitionStateMachine(ctx, store).handle_state_changes(
        [TP], PartitionState.ONLINE, batch
    )
    assert failures == {}
    lai = ctx.leadership[TP].leader_and_isr
    assert (lai.leader, lai.isr, lai.leader_epoch, lai.zk_version) == (2, (2, 3), 0, 0)
    assert all(e.is_new for per in batch.leader_and_isr.values() for e in per.values())


async def test_new_partition_without_live_replicas_stays_new() -> None:
    ctx = make_ctx(live=(7,))
    ctx.partition_states[TP] = PartitionState.NEW
    store = InMemoryPartitionStateStore()
    failures = await PartitionStateMachine(ctx, store).handle_state_changes(
        [TP], PartitionState.ONLINE, ControllerRequestBatch()
    )
    assert "no assigned replica is alive" in failures[TP]
    assert ctx.partition_state(TP) is PartitionState.NEW
    assert store.states == {}


async def test_offline_partition_with_no_live_isr_stays_offline() -> None:
    ctx = make_ctx(live=(3,))
    store = InMemoryPartitionStateStore()
    st = LeaderIsrAndControllerEpoch(LeaderAndIsr(NO_LEADER, 4, (1,), 2), 1)
    ctx.put_leadership(TP, st)
    store.states[TP] = st
    ctx.partition_states[TP] = PartitionState.OFFLINE
    failures = await PartitionStateMachine(ctx, store).trigger_online_partition_state_change(
        ControllerRequestBatch()
    )
    assert "no eligible leader" in failures[TP]
    assert ctx.partition_state(TP) is PartitionState.OFFLINE
    assert store.writes == 0


async def test_unclean_election_when_enabled() -> None:
    ctx = make_ctx(live=(3,))
    store = InMemoryPartitionStateStore()
    st = LeaderIsrAndControllerEpoch(LeaderAndIsr(NO_LEADER, 4, (1,), 2), 1)
    ctx.put_leadership(TP, st)
    store.states[TP] = st
    ctx.partition_states[TP] = PartitionState.OFFLINE
    psm = PartitionStateMachine(ctx, store, unclean_leader_election=True)
    assert await psm.trigger_online_partition_state_change(ControllerRequestBatch()) == {}
    lai = ctx.leadership[TP].leader_and_isr
    assert (lai.leader, lai.isr, lai.leader_epoch, lai.zk_version) == (3, (3,), 5, 3)


async def test_conflicting_write_is_reread_and_retried() -> None:
    ctx = make_ctx(live=(2, 3))
    store = InMemoryPartitionStateStore()
    ctx.put_leadership(TP, LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2, 3), 0), 1))
    # a leader changed the ISR meanwhile: the znode is at zkVersion 1 and lacks 2
    store.states[TP] = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 3), 1), 1)
    ctx.partition_states[TP] = PartitionState.OFFLINE
    failures = await PartitionStateMachine(ctx, store).trigger_online_partition_state_change(
        ControllerRequestBatch()
    )
    assert failures == {}
    lai = ctx.leadership[TP].leader_and_isr
    assert (lai.leader, lai.isr, lai.zk_version) == (3, (3,), 2)


async def test_offline_replica_leaves_isr_and_gets_stop_replica() -> None:
    ctx = make_ctx(live=(1, 3))
    store = InMemoryPartitionStateStore()
    with_leadership(ctx, store, leader=1)
    pr = PartitionReplica(TP, 2)
    ctx.replica_states[pr] = ReplicaState.ONLINE
    batch = ControllerRequestBatch()
    await ReplicaStateMachine(ctx, store).handle_state_changes([pr], ReplicaState.OFFLINE, batch)
    assert ctx.leadership[TP].leader_and_isr.isr == (1, 3)
    assert store.states[TP] == ctx.leadership[TP]
    assert batch.stop_replica == {2: {TP: False}}
    assert set(batch.leader_and_isr) == {1, 3}


async def test_offline_replica_leaves_the_isr_a_leader_wrote_after_the_context_was_read() -> None:
    """The leader let 2 back into the ISR in ZooKeeper; the controller has not heard yet
    (its context still says (1, 3)). When 2 dies, it must still leave the ISR."""
    ctx = make_ctx(live=(1, 3))
    store = InMemoryPartitionStateStore()
    ctx.put_leadership(TP, LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 1, (1, 3), 0), 1))
    store.states[TP] = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 1, (1, 3, 2), 1), 1)
    pr = PartitionReplica(TP, 2)
    ctx.replica_states[pr] = ReplicaState.ONLINE
    batch = ControllerRequestBatch()
    await ReplicaStateMachine(ctx, store).handle_state_changes([pr], ReplicaState.OFFLINE, batch)
    lai = store.states[TP].leader_and_isr
    assert (lai.leader, lai.isr, lai.leader_epoch, lai.zk_version) == (1, (1, 3), 2, 2)
    assert ctx.leadership[TP] == store.states[TP]
    assert set(batch.leader_and_isr) == {1, 3}


class CountingStore(InMemoryPartitionStateStore):
    """Records which partitions were read."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[TopicPartition] = []

    async def read_states(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        self.read += partitions
        return await super().read_states(partitions)


async def test_offline_replica_the_context_shows_in_the_isr_is_written_without_a_read() -> None:
    ctx = make_ctx(live=(1, 3))
    store = CountingStore()
    with_leadership(ctx, store, leader=1)
    pr = PartitionReplica(TP, 2)
    ctx.replica_states[pr] = ReplicaState.ONLINE
    batch = ControllerRequestBatch()
    await ReplicaStateMachine(ctx, store).handle_state_changes([pr], ReplicaState.OFFLINE, batch)
    lai = store.states[TP].leader_and_isr
    assert (lai.leader, lai.isr, lai.leader_epoch, lai.zk_version) == (1, (1, 3), 1, 1)
    assert store.read == []
    assert ctx.leadership[TP] == store.states[TP]


async def test_offline_replica_leaves_an_isr_changed_since_the_context_was_read() -> None:
    """The context says (1, 2, 3) at zkVersion 0; the leader has since written (1, 2)
    (zkVersion 1). The write from the context conflicts; the state is read and 2 still
    leaves the ISR as written now."""
    ctx = make_ctx(live=(1, 3))
    store = CountingStore()
    with_leadership(ctx, store, leader=1)
    store.states[TP] = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2), 1), 1)
    pr = PartitionReplica(TP, 2)
    ctx.replica_states[pr] = ReplicaState.ONLINE
    batch = ControllerRequestBatch()
    await ReplicaStateMachine(ctx, store).handle_state_changes([pr], ReplicaState.OFFLINE, batch)
    lai = store.states[TP].leader_and_isr
    assert (lai.leader, lai.isr, lai.leader_epoch, lai.zk_version) == (1, (1,), 1, 2)
    assert store.read == [TP]
    assert ctx.leadership[TP] == store.states[TP]
    assert set(batch.leader_and_isr) == {1, 3}


def test_without_replica_keeps_the_last_isr_member() -> None:
    assert without_replica(LeaderAndIsr(1, 3, (1,), 7), 1) == LeaderAndIsr(NO_LEADER, 4, (1,), 7)
    assert without_replica(LeaderAndIsr(1, 3, (1, 2), 7), 1) == LeaderAndIsr(NO_LEADER, 4, (2,), 7)
    assert without_replica(LeaderAndIsr(1, 3, (1, 2), 7), 2) == LeaderAndIsr(1, 4, (1,), 7)


async def test_new_replica_that_leads_is_refused() -> None:
    ctx = make_ctx()
    store = InMemoryPartitionStateStore()
    with_leadership(ctx, store, leader=1)
    pr = PartitionReplica(TP, 1)
    refused = await ReplicaStateMachine(ctx, store).handle_state_changes(
        [pr], ReplicaState.NEW, ControllerRequestBatch()
    )
    assert refused == [pr]
    assert ctx.replica_state(pr) is ReplicaState.NON_EXISTENT
