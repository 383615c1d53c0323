"""Which partitions the leader-imbalance check moves back to their preferred leader."""

from __future__ import annotations

import uuid

from controller.context import ControllerContext
from controller.preferred_leader_rules import (
    imbalance_ratios,
    partitions_to_rebalance,
    preferred_candidates,
)
from controller.states import PartitionState
from protocol.values import TopicPartition
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
)


def ctx_with(
    leaders: dict[int, int], isr: tuple[int, ...] = (1, 2), live: tuple[int, ...] = (1, 2)
) -> ControllerContext:
    """Topic t with partitions 0-3: even ones prefer broker 1, odd ones broker 2."""
    ctx = ControllerContext()
    ctx.add_live_brokers(BrokerInfo(b, (EndPoint("h", b),)) for b in live)
    ctx.set_topic(TopicAssignment("t", uuid.uuid4(), {0: (1, 2), 1: (2, 1), 2: (1, 2), 3: (2, 1)}))
    for p, leader in leaders.items():
        tp = TopicPartition("t", p)
        ctx.put_leadership(tp, LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 1, isr), 1))
        ctx.partition_states[tp] = PartitionState.ONLINE
    return ctx


def test_balanced_cluster_moves_nothing() -> None:
    ctx = ctx_with({0: 1, 1: 2, 2: 1, 3: 2})
    assert imbalance_ratios(ctx) == {1: 0.0, 2: 0.0}
    assert partitions_to_rebalance(ctx, 10) == []


def test_leadership_piled_on_one_broker_moves_back() -> None:
    ctx = ctx_with({0: 1, 1: 1, 2: 1, 3: 1})
    assert imbalance_ratios(ctx) == {1: 0.0, 2: 1.0}
    assert partitions_to_rebalance(ctx, 10) == [TopicPartition("t", 1), TopicPartition("t", 3)]


def test_threshold_is_respected() -> None:
    ctx = ctx_with({0: 1, 1: 1, 2: 1, 3: 2})  # broker 2 leads 1 of its 2: 50%
    assert partitions_to_rebalance(ctx, 50) == []
    assert partitions_to_rebalance(ctx, 49) == [TopicPartition("t", 1)]


def test_preferred_replica_out_of_isr_or_dead_is_not_chosen() -> None:
    ctx = ctx_with({0: 1, 1: 1, 2: 1, 3: 1}, isr=(1,))
    assert partitions_to_rebalance(ctx, 10) == []
    ctx = ctx_with({0: 1, 1: 1, 2: 1, 3: 1}, live=(1,))
    assert preferred_candidates(ctx, ctx.all_partitions()) == []


def test_shutting_down_or_offline_or_deleting_is_skipped() -> None:
    ctx = ctx_with({0: 1, 1: 1, 2: 1, 3: 1})
    ctx.shutting_down.add(2)
    assert preferred_candidates(ctx, ctx.all_partitions()) == []
    ctx = ctx_with({0: 1, 1: 1, 2: 1, 3: 1})
    ctx.partition_states[TopicPartition("t", 1)] = PartitionState.OFFLINE
    ctx.topics_to_delete.add("x")
    assert preferred_candidates(ctx, ctx.all_partitions()) == [TopicPartition("t", 3)]
    ctx.topics_to_delete.add("t")
    assert preferred_candidates(ctx, ctx.all_partitions()) == []
