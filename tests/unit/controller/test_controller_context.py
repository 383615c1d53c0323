"""ControllerContext bookkeeping."""

from __future__ import annotations

import uuid

from controller.context import ControllerContext
from controller.model import PartitionReplica
from controller.states import PartitionState, ReplicaState
from protocol.values import TopicPartition
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
)


def ctx_with_topics() -> ControllerContext:
    ctx = ControllerContext()
    ctx.add_live_brokers(BrokerInfo(b, (EndPoint("h", b),), epoch=b * 10) for b in (1, 2, 3))
    ctx.set_topic(TopicAssignment("a", uuid.uuid4(), {0: (1, 2), 1: (2, 3)}))
    ctx.set_topic(TopicAssignment("b", uuid.uuid4(), {0: (3,)}))
    return ctx


def test_partitions_and_replicas_by_broker() -> None:
    ctx = ctx_with_topics()
    a0, a1, b0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
    assert ctx.all_partitions() == [a0, a1, b0]
    assert ctx.partitions_on_broker(2) == [a0, a1]
    assert ctx.replicas_on_brokers({3}) == [PartitionReplica(a1, 3), PartitionReplica(b0, 3)]
    assert ctx.replicas_for_partitions([a0]) == [PartitionReplica(a0, 1), PartitionReplica(a0, 2)]
    assert ctx.partition_replicas(TopicPartition("nope", 0)) == ()


def test_shutting_down_brokers_are_live_but_not_eligible() -> None:
    ctx = ctx_with_topics()
    ctx.shutting_down.add(2)
    assert ctx.live_broker_ids() == {1, 3}
    assert ctx.live_or_shutting_down_ids() == {1, 2, 3}
    assert not ctx.is_replica_online(2)
    assert ctx.is_replica_online(2, include_shutting_down=True)
    ctx.remove_live_brokers([2])
    assert ctx.shutting_down == set()
    assert ctx.broker_epoch(2) == -1
    assert ctx.broker_epoch(3) == 30


def test_leadership_and_states() -> None:
    ctx = ctx_with_topics()
    a0 = TopicPartition("a", 0)
    ctx.put_leadership(a0, LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 0, (1, 2)), 1))
    ctx.partition_states[a0] = PartitionState.OFFLINE
    assert ctx.partitions_led_by(2) == [a0]
    assert ctx.partitions_in_states(PartitionState.OFFLINE) == [a0]
    assert ctx.offline_partition_count() == 1
    assert ctx.partition_state(TopicPartition("a", 1)) is PartitionState.NON_EXISTENT
    assert ctx.replica_state(PartitionReplica(a0, 1)) is ReplicaState.NON_EXISTENT


def test_remove_topic_forgets_everything_about_it() -> None:
    ctx = ctx_with_topics()
    a0 = TopicPartition("a", 0)
    ctx.put_leadership(a0, LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1,)), 1))
    ctx.partition_states[a0] = PartitionState.ONLINE
    ctx.replica_states[PartitionReplica(a0, 1)] = ReplicaState.ONLINE
    ctx.topics_to_delete.add("a")
    ctx.remove_topic("a")
    assert ctx.all_topics() == {"b"}
    assert a0 not in ctx.leadership and a0 not in ctx.partition_states
    assert not ctx.replica_states and "a" not in ctx.topic_ids and not ctx.topics_to_delete


def test_reset_forgets_all() -> None:
    ctx = ctx_with_topics()
    ctx.epoch = 5
    ctx.reset()
    assert ctx.epoch == 0 and not ctx.live_brokers and not ctx.assignments


def test_new_leader_and_isr_bumps_epoch_keeps_version() -> None:
    lai = LeaderAndIsr(1, 7, (1, 2), 3)
    assert lai.new_leader_and_isr(2, (2,)) == LeaderAndIsr(2, 8, (2,), 3)
