"""A new controller and the brokers that died before it took over, on an in-memory store
and a recording channel: replicas of brokers that are not live leave the ISRs they still
sit in (a new leader epoch, written, LeaderAndIsr to the remaining replicas,
UpdateMetadata to all), partitions they led are elected, and the last ISR member of a
leaderless partition is left alone -- whether the broker died with the old controller or
while the election ran (neither case is ever seen as a broker-change event)."""

from __future__ import annotations

import uuid

from controller.context import ControllerContext
from controller.controller import ControllerConfig, KafkaController
from controller.model import PartitionReplica
from controller.replica_state_machine import stranded_replicas
from controller.states import PartitionState, ReplicaState
from protocol import ApiKey
from protocol.values import NO_LEADER, TopicPartition
from tests.fakes.controller import InMemoryPartitionStateStore, RecordingChannelManager, SentRequest
from tests.fakes.zk import FakeZk
from timer.clock import MockClock
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
)

A0, A1, A2 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("a", 2)
TOPIC_ID = uuid.uuid4()
#: the previous controller's epoch: every state below was written by it
OLD_EPOCH = 4


def broker(bid: int) -> BrokerInfo:
    return BrokerInfo(bid, (EndPoint("127.0.0.1", 9000 + bid),), epoch=100 + bid)


def loaded_controller(
    states: dict[TopicPartition, LeaderAndIsr], live: tuple[int, ...] = (2, 3)
) -> tuple[KafkaController, RecordingChannelManager, InMemoryPartitionStateStore]:
    """Broker 2, just elected (epoch 5), with the context it read from ZooKeeper: topic a
    on brokers 1, 2, 3 with ``states``, and only ``live`` registered. Its state machines
    have not started."""
    channel = RecordingChannelManager()
    store = InMemoryPartitionStateStore()
    # the context is loaded by hand; no config is set anywhere in ZooKeeper
    c = KafkaController(
        FakeZk(), broker(2), channel, MockClock(), ControllerConfig(), store=store, scheduler=None
    )
    c.ctx.epoch, c.election.active_controller_id = OLD_EPOCH + 1, 2
    c.ctx.add_live_brokers(broker(b) for b in live)
    c.ctx.set_topic(TopicAssignment("a", TOPIC_ID, {tp.partition: (1, 2, 3) for tp in states}))
    for tp, lai in states.items():
        st = LeaderIsrAndControllerEpoch(lai, OLD_EPOCH)
        c.ctx.put_leadership(tp, st)
        store.states[tp] = st
    return c, channel, store


def leadership(c: KafkaController, tp: TopicPartition) -> tuple[int, int, tuple[int, ...]]:
    lai = c.ctx.leadership[tp].leader_and_isr
    return lai.leader, lai.leader_epoch, lai.isr


def leader_and_isr_states(sent: list[SentRequest]) -> dict[tuple[int, int], tuple[int, ...]]:
    """(broker, partition) -> the ISR its LeaderAndIsr named, for each one sent."""
    out = {}
    for r in sent:
        for t in r.body.topic_states:
            for p in t.partition_states:
                out[(r.broker_id, p.partition_index)] = tuple(p.isr)
    return out


def test_stranded_replicas_are_those_of_dead_brokers_that_lead_or_share_an_isr() -> None:
    ctx = ControllerContext()
    ctx.add_live_brokers([broker(2), broker(3)])
    ctx.set_topic(TopicAssignment("a", TOPIC_ID, {0: (1, 2, 3), 1: (1, 2, 3), 2: (1, 2, 3)}))
    ctx.set_topic(TopicAssignment("b", uuid.uuid4(), {0: (1, 2)}))
    for tp, lai in {
        A0: LeaderAndIsr(2, 0, (1, 2, 3)),  # a dead follower in the ISR
        A1: LeaderAndIsr(1, 0, (1, 3)),  # a dead leader
        A2: LeaderAndIsr(3, 0, (2, 3)),  # already out of the ISR
        TopicPartition("b", 0): LeaderAndIsr(NO_LEADER, 3, (1,)),  # the last ISR member
    }.items():
        ctx.put_leadership(tp, LeaderIsrAndControllerEpoch(lai, 1))
    assert stranded_replicas(ctx) == [PartitionReplica(A0, 1), PartitionReplica(A1, 1)]


async def test_a_dead_follower_leaves_the_isr_of_a_partition_whose_leader_lives() -> None:
    c, channel, store = loaded_controller(
        {
            A0: LeaderAndIsr(2, 7, (2, 1, 3)),
            A1: LeaderAndIsr(3, 2, (3, 1)),
            A2: LeaderAndIsr(3, 4, (3, 2)),
        }
    )
    await c.election.start_state_machines()
    assert leadership(c, A0) == (2, 8, (2, 3))
    assert leadership(c, A1) == (3, 3, (3,))
    assert leadership(c, A2) == (3, 4, (3, 2))  # 1 was not in it: nothing written
    # written fenced by the new controller's epoch, not only remembered
    assert store.states[A0] == LeaderIsrAndControllerEpoch(c.ctx.leadership[A0].leader_and_isr, 5)
    assert c.ctx.replica_state(PartitionReplica(A0, 1)) is ReplicaState.OFFLINE
    assert c.ctx.replica_state(PartitionReplica(A0, 3)) is ReplicaState.ONLINE
    # the live replicas end up told the ISR without broker 1 (the dead one is told nothing)
    told = leader_and_isr_states(channel.take(ApiKey.LEADER_AND_ISR))
    assert {b for b, _ in told} == {2, 3}
    assert told[(2, 0)] == told[(3, 0)] == (2, 3)
    assert told[(3, 1)] == (3,)
    metadata = channel.take(ApiKey.UPDATE_METADATA)
    assert {r.broker_id for r in metadata} == {2, 3}
    isr_in_metadata = {
        p.partition_index: tuple(p.isr)
        for r in metadata
        for t in r.body.topic_states
        for p in t.partition_states
    }
    assert isr_in_metadata[0] == (2, 3)


async def test_a_partition_the_dead_broker_led_is_elected_without_it() -> None:
    c, _, _ = loaded_controller({A0: LeaderAndIsr(1, 7, (1, 3, 2))})
    await c.election.start_state_machines()
    assert leadership(c, A0) == (2, 8, (3, 2))  # first live ISR member in assignment order
    assert c.ctx.partition_state(A0) is PartitionState.ONLINE
    assert c.offline_partition_count == 0


async def test_without_a_live_isr_member_the_partition_goes_leaderless_once() -> None:
    c, _, store = loaded_controller({A0: LeaderAndIsr(1, 7, (1,))})
    await c.election.start_state_machines()
    assert leadership(c, A0) == (NO_LEADER, 8, (1,))
    assert c.offline_partition_count == 1
    # the next controller finds nothing left to write
    again, _, store_again = loaded_controller({A0: store.states[A0].leader_and_isr})
    writes = store_again.writes
    await again.election.start_state_machines()
    assert store_again.writes == writes
    assert leadership(again, A0) == (NO_LEADER, 8, (1,))


async def test_brokers_that_died_during_the_election_are_handled_the_same() -> None:
    """Broker 1 (the old controller) and broker 3 both went while broker 2 was being
    elected: 2 never saw 3 live, so it is only in the loaded states that 3 appears."""
    c, _, _ = loaded_controller(
        {A0: LeaderAndIsr(2, 1, (1, 2, 3)), A1: LeaderAndIsr(3, 1, (3, 2))}, live=(2,)
    )
    await c.election.start_state_machines()
    assert leadership(c, A0) == (2, 3, (2,))  # one write per dead broker, as on their deaths
    assert leadership(c, A1) == (2, 2, (2,))  # elected, without either
    assert c.offline_partition_count == 0


async def test_nothing_is_written_when_every_isr_member_is_live() -> None:
    c, channel, store = loaded_controller(
        {A0: LeaderAndIsr(2, 7, (2, 3)), A1: LeaderAndIsr(3, 1, (3, 2))}
    )
    await c.election.start_state_machines()
    assert store.writes == 0
    assert leadership(c, A0) == (2, 7, (2, 3))
    # the live replicas still learn their state from the new controller
    assert set(leader_and_isr_states(channel.take(ApiKey.LEADER_AND_ISR))) == {
        (2, 0),
        (3, 0),
        (2, 1),
        (3, 1),
    }
