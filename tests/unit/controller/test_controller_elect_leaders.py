"""Which partitions an ElectLeaders request elects and which it answers at once (a
table), and the controller running the elections on an in-memory store."""

from __future__ import annotations

import uuid

import pytest

from controller.context import ControllerContext
from controller.controller import ControllerConfig, KafkaController
from controller.elect_leaders import ElectionOutcome, ElectionType, triage
from protocol import ErrorCode
from protocol.values import NO_LEADER, TopicPartition
from tests.fakes.controller import InMemoryPartitionStateStore, RecordingChannelManager
from tests.fakes.zk import FakeZk
from timer.clock import MockClock
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
)

P, U = ElectionType.PREFERRED, ElectionType.UNCLEAN
E = ErrorCode


def broker(bid: int) -> BrokerInfo:
    return BrokerInfo(bid, (EndPoint("127.0.0.1", 9000 + bid),), epoch=100 + bid)


def make_ctx(leader: int, live: tuple[int, ...] = (1, 2, 3)) -> ControllerContext:
    ctx = ControllerContext()
    ctx.epoch = 1
    ctx.add_live_brokers(broker(b) for b in live)
    ctx.set_topic(TopicAssignment("t", uuid.uuid4(), {0: (1, 2, 3), 1: ()}))
    ctx.put_leadership(
        TopicPartition("t", 0), LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 0, (1, 2)), 1)
    )
    return ctx


T0 = TopicPartition("t", 0)
TRIAGE_CASES = [
    # election type, current leader, live brokers, partition, expected (None: elect it)
    (P, 2, (1, 2, 3), T0, None),
    (P, 1, (1, 2, 3), T0, E.ELECTION_NOT_NEEDED),
    (P, NO_LEADER, (2, 3), T0, None),
    (U, 2, (1, 2, 3), T0, E.ELECTION_NOT_NEEDED),
    (U, NO_LEADER, (2, 3), T0, None),
    (U, 1, (2, 3), T0, None),  # its leader is dead
    (P, 1, (1, 2, 3), TopicPartition("t", 9), E.UNKNOWN_TOPIC_OR_PARTITION),
    (U, 1, (1, 2, 3), TopicPartition("nope", 0), E.UNKNOWN_TOPIC_OR_PARTITION),
    (P, 1, (1, 2, 3), TopicPartition("t", 1), E.INVALID_REPLICA_ASSIGNMENT),
]


@pytest.mark.parametrize(("kind", "leader", "live", "tp", "expected"), TRIAGE_CASES)
def test_triage(
    kind: ElectionType,
    leader: int,
    live: tuple[int, ...],
    tp: TopicPartition,
    expected: ErrorCode | None,
) -> None:
    to_elect, answered = triage(make_ctx(leader, live), [tp, tp], kind)
    if expected is None:
        assert (to_elect, answered) == ([tp], {})
    else:
        assert to_elect == [] and answered[tp].error_code == expected


def test_topics_being_deleted_are_not_elected() -> None:
    ctx = make_ctx(2)
    ctx.topics_to_delete.add("t")
    _, answered = triage(ctx, [T0], P)
    assert answered[T0].error_code == E.INVALID_TOPIC_EXCEPTION


def controller(isr: tuple[int, ...], leader: int, live: tuple[int, ...]) -> KafkaController:
    zk = FakeZk()  # never used: the topic's config is not read for requested elections
    channel = RecordingChannelManager()
    store = InMemoryPartitionStateStore()
    c = KafkaController(
        zk, broker(1), channel, MockClock(), ControllerConfig(), store=store, scheduler=None
    )
    c.ctx.epoch, c.election.active_controller_id = 1, 1
    c.ctx.add_live_brokers(broker(b) for b in live)
    c.ctx.set_topic(TopicAssignment("t", uuid.uuid4(), {0: (1, 2, 3)}))
    st = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 4, isr), 1)
    c.ctx.put_leadership(T0, st)
    store.states[T0] = st
    c.partition_sm.initialize_states()
    c.replica_sm.initialize_states()
    return c


async def elect(c: KafkaController, kind: ElectionType) -> ElectionOutcome:
    import asyncio

    from controller import events as ev

    reply: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    await c.preferred.on_elect_leaders(ev.ElectLeaders([T0], kind, reply))
    outcomes = reply.result()
    assert isinstance(outcomes, dict)
    outcome = outcomes[T0]
    assert isinstance(outcome, ElectionOutcome)
    return outcome


async def test_preferred_election_moves_leadership_to_the_preferred_replica_in_the_isr() -> None:
    c = controller(isr=(2, 1), leader=2, live=(1, 2, 3))
    assert await elect(c, P) == ElectionOutcome(E.NONE, leader=1)
    lai = c.ctx.leadership[T0].leader_and_isr
    assert (lai.leader, lai.leader_epoch, lai.isr) == (1, 5, (2, 1))


async def test_preferred_replica_out_of_the_isr_is_not_available() -> None:
    c = controller(isr=(2,), leader=2, live=(1, 2, 3))
    outcome = await elect(c, P)
    assert outcome.error_code == E.PREFERRED_LEADER_NOT_AVAILABLE
    assert c.ctx.leadership[T0].leader_and_isr.leader == 2


async def test_unclean_election_on_request_picks_a_live_replica_outside_the_isr() -> None:
    c = controller(isr=(1,), leader=NO_LEADER, live=(2, 3))
    assert await elect(c, U) == ElectionOutcome(E.NONE, leader=2)
    assert c.ctx.leadership[T0].leader_and_isr.isr == (2,)
    assert c.unclean_leader_elections == 1


async def test_unclean_election_without_live_replicas_has_no_eligible_leader() -> None:
    c = controller(isr=(1,), leader=NO_LEADER, live=())
    assert (await elect(c, U)).error_code == E.ELIGIBLE_LEADERS_NOT_AVAILABLE
