"""The controller's side of a controlled shutdown, on an in-memory store."""

from __future__ import annotations

import uuid

from controller.context import ControllerContext
from controller.controlled_shutdown import move_leadership_off, nowhere_to_move
from controller.model import PartitionReplica
from controller.partition_state_machine import PartitionStateMachine
from controller.replica_state_machine import ReplicaStateMachine
from controller.request_batch import ControllerRequestBatch
from controller.states import PartitionState, ReplicaState
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from tests.fakes.controller import InMemoryPartitionStateStore
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
)

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


Setup = tuple[
    ControllerContext, PartitionStateMachine, ReplicaStateMachine, InMemoryPartitionStateStore
]


def setup() -> Setup:
    ctx = ControllerContext()
    ctx.epoch = 1
    ctx.add_live_brokers(BrokerInfo(b, (EndPoint("h", b),), epoch=10 + b) for b in (1, 2))
    # t-0 led by 2, t-1 followed by 2, t-2 only on 2
    ctx.set_topic(TopicAssignment("t", uuid.uuid4(), {0: (2, 1), 1: (1, 2), 2: (2,)}))
    store = InMemoryPartitionStateStore()
    for tp, leader, isr in ((T0, 2, (2, 1)), (T1, 1, (1, 2)), (T2, 2, (2,))):
        st = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 0, isr), 1)
        ctx.put_leadership(tp, st)
        store.states[tp] = st
        ctx.partition_states[tp] = PartitionState.ONLINE
        for r in ctx.partition_replicas(tp):
            ctx.replica_states[PartitionReplica(tp, r)] = ReplicaState.ONLINE
    return ctx, PartitionStateMachine(ctx, store), ReplicaStateMachine(ctx, store), store


async def test_leadership_and_isr_membership_move_off_the_broker() -> None:
    ctx, psm, rsm, _ = setup()
    batch = ControllerRequestBatch()
    result = await move_leadership_off(ctx, psm, rsm, batch, 2, 12)
    assert (result.error_code, result.remaining) == (ErrorCode.NONE, [])
    assert ctx.shutting_down == {2}
    assert ctx.leadership[T0].leader_and_isr.leader == 1
    assert ctx.leadership[T0].leader_and_isr.isr == (1,)
    assert ctx.leadership[T1].leader_and_isr.isr == (1,)
    assert ctx.replica_state(PartitionReplica(T1, 2)) is ReplicaState.OFFLINE
    assert ctx.leadership[T2].leader_and_isr.leader == 2  # single replica: stays
    assert batch.stop_replica == {2: {T1: False}}


async def test_stale_epoch_and_unknown_broker_are_refused() -> None:
    ctx, psm, rsm, _ = setup()
    batch = ControllerRequestBatch()
    assert (await move_leadership_off(ctx, psm, rsm, batch, 2, 11)).error_code == (
        ErrorCode.STALE_BROKER_EPOCH
    )
    assert (await move_leadership_off(ctx, psm, rsm, batch, 9, -1)).error_code == (
        ErrorCode.BROKER_NOT_AVAILABLE
    )
    assert ctx.shutting_down == set() and batch.is_empty()


async def test_partitions_with_no_other_isr_member_remain() -> None:
    ctx, psm, rsm, store = setup()
    lai = LeaderAndIsr(2, 0, (2,))  # broker 1 is not in t-0's ISR: nobody to take over
    ctx.put_leadership(T0, LeaderIsrAndControllerEpoch(lai, 1))
    store.states[T0] = ctx.leadership[T0]
    result = await move_leadership_off(ctx, psm, rsm, ControllerRequestBatch(), 2, -1)
    assert (result.error_code, result.remaining) == (ErrorCode.NONE, [T0])


async def test_nothing_left_to_hand_over_to_is_said_so_when_the_rest_is_stopping() -> None:
    ctx, psm, rsm, _ = setup()
    ctx.shutting_down.add(1)  # broker 1, the only other replica, is stopping too
    result = await move_leadership_off(ctx, psm, rsm, ControllerRequestBatch(), 2, -1)
    assert result.error_code == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    assert result.remaining == [T0]
    assert ctx.leadership[T0].leader_and_isr.leader == 2


def test_nowhere_to_move_needs_a_live_broker_not_stopping_with_a_replica() -> None:
    ctx, _, _, _ = setup()
    assert not nowhere_to_move(ctx, [T0], 2)  # broker 1 may yet take it
    assert not nowhere_to_move(ctx, [], 2)  # nothing left: nothing stuck
    ctx.remove_live_brokers([1])
    assert nowhere_to_move(ctx, [T0], 2)
