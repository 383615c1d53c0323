"""The controller's reactions to failures, driven through its handlers on an in-memory
store and a recording channel: a broker's death (its replicas leave the ISRs, its
leaderships go through the offline election, clean or unclean by the topic's config),
the brokers' answers to its requests (delivered through callbacks as events), and a
LeaderAndIsr answer reporting a failed log directory."""

from __future__ import annotations

import uuid

import pytest

from controller import events as ev
from controller.controller import ControllerConfig, KafkaController
from controller.model import PartitionReplica
from controller.request_batch import ControllerRequestBatch
from controller.states import PartitionState, ReplicaState
from protocol import ApiKey, ErrorCode
from protocol.messages import LeaderAndIsrResponse, StopReplicaResponse
from protocol.values import NO_LEADER, TopicPartition
from tests.fakes.controller import InMemoryPartitionStateStore, RecordingChannelManager, SentRequest
from tests.fakes.zk import FakeZk
from timer.clock import MockClock
from zk import paths
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
)

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)
U0 = TopicPartition("u", 0)
TOPIC_IDS = {"a": uuid.uuid4(), "u": uuid.uuid4()}


def broker(bid: int) -> BrokerInfo:
    return BrokerInfo(bid, (EndPoint("127.0.0.1", 9000 + bid),), epoch=100 + bid)


def make_controller(
    states: dict[TopicPartition, LeaderAndIsr], static_unclean: bool = False
) -> tuple[KafkaController, RecordingChannelManager, InMemoryPartitionStateStore, FakeZk]:
    """Controller 1 of a live cluster {1, 2, 3}: topic a (a-0 on 1,2,3; a-1 on 2,3) and
    topic u (u-0 on 2,3), led by their first replica with a full ISR unless ``states``
    says otherwise."""
    states = {
        A0: LeaderAndIsr(1, 0, (1, 2, 3)),
        A1: LeaderAndIsr(2, 0, (2, 3)),
        U0: LeaderAndIsr(2, 0, (2, 3)),
        **states,
    }
    configs = FakeZk()
    channel = RecordingChannelManager()
    store = InMemoryPartitionStateStore()
    c = KafkaController(
        configs,
        broker(1),
        channel,
        MockClock(),
        ControllerConfig(unclean_leader_election_enable=static_unclean),
        store=store,
        scheduler=None,
    )
    ctx = c.ctx
    ctx.epoch, c.election.active_controller_id = 1, 1
    ctx.add_live_brokers(broker(b) for b in (1, 2, 3))
    for b in (1, 2, 3):
        channel.add_broker(broker(b))
    ctx.set_topic(TopicAssignment("a", TOPIC_IDS["a"], {0: (1, 2, 3), 1: (2, 3)}))
    ctx.set_topic(TopicAssignment("u", TOPIC_IDS["u"], {0: (2, 3)}))
    for tp, lai in states.items():
        st = LeaderIsrAndControllerEpoch(lai, 1)
        ctx.put_leadership(tp, st)
        store.states[tp] = st
    c.partition_sm.initialize_states()
    c.replica_sm.initialize_states()
    return c, channel, store, configs


def leadership(c: KafkaController, tp: TopicPartition) -> tuple[int, int, tuple[int, ...]]:
    lai = c.ctx.leadership[tp].leader_and_isr
    return lai.leader, lai.leader_epoch, lai.isr


def leader_and_isr_partitions(sent: list[SentRequest]) -> dict[int, set[tuple[str, int]]]:
    """broker -> the (topic id, partition) pairs its LeaderAndIsr requests carried."""
    names = {v: k for k, v in TOPIC_IDS.items()}
    out: dict[int, set[tuple[str, int]]] = {}
    for r in sent:
        for t in r.body.topic_states:
            for p in t.partition_states:
                out.setdefault(r.broker_id, set()).add((names[t.topic_id], p.partition_index))
    return out


# -- a broker dies ------------------------------------------------------------------------


async def test_dead_follower_leaves_every_isr_with_a_new_leader_epoch() -> None:
    c, channel, store, _ = make_controller(
        {
            A0: LeaderAndIsr(1, 5, (1, 2, 3)),
            A1: LeaderAndIsr(3, 2, (3, 2)),
            U0: LeaderAndIsr(3, 0, (3,)),
        }
    )
    await c.brokers.on_broker_failure({2})
    assert leadership(c, A0) == (1, 6, (1, 3))
    assert leadership(c, A1) == (3, 3, (3,))
    assert leadership(c, U0) == (3, 0, (3,))  # 2 was not in its ISR: nothing to write
    assert store.states[A0] == c.ctx.leadership[A0]  # written, not only remembered
    assert c.ctx.replica_state(PartitionReplica(A0, 2)) is ReplicaState.OFFLINE
    # the remaining replicas hear of it; the dead broker is no longer a destination
    assert leader_and_isr_partitions(channel.take(ApiKey.LEADER_AND_ISR)) == {
        1: {("a", 0)},
        3: {("a", 0), ("a", 1)},
    }
    assert {r.broker_id for r in channel.take(ApiKey.UPDATE_METADATA)} == {1, 3}


async def test_new_leaders_are_sent_before_the_other_replicas_leave_their_isrs() -> None:
    """Broker 2 led a-1 and u-0 and followed a-0: the elections' LeaderAndIsr and
    UpdateMetadata go out first, carrying only the partitions it led; a-0's ISR change
    follows in a second batch."""
    c, channel, _, _ = make_controller(
        {
            A0: LeaderAndIsr(1, 5, (1, 2, 3)),
            A1: LeaderAndIsr(2, 2, (2, 3)),
            U0: LeaderAndIsr(2, 0, (2, 3)),
        }
    )
    await c.brokers.on_broker_failure({2})
    sent = channel.take()
    kinds = [(r.api_key, r.broker_id) for r in sent]
    first_update = kinds.index((ApiKey.UPDATE_METADATA, 1))
    elections, changes = sent[:first_update], sent[first_update:]
    assert leader_and_isr_partitions(elections) == {3: {("a", 1), ("u", 0)}}
    assert leader_and_isr_partitions(
        [r for r in changes if r.api_key == ApiKey.LEADER_AND_ISR]
    ) == {1: {("a", 0)}, 3: {("a", 0)}}
    assert leadership(c, A1) == (3, 3, (3,)) and leadership(c, A0) == (1, 6, (1, 3))


async def test_dead_leader_is_replaced_by_the_first_live_isr_member_in_assignment_order() -> None:
    c, _, _, _ = make_controller({A0: LeaderAndIsr(1, 5, (3, 1, 2))})
    await c.brokers.on_broker_failure({1})
    assert leadership(c, A0) == (2, 6, (3, 2))
    assert c.ctx.partition_state(A0) is PartitionState.ONLINE
    assert c.offline_partition_count == 0


async def test_without_a_live_isr_member_the_partition_stays_offline_with_its_last_isr() -> None:
    c, _, store, _ = make_controller({U0: LeaderAndIsr(2, 5, (2,))})
    await c.brokers.on_broker_failure({2})
    assert leadership(c, U0) == (NO_LEADER, 6, (2,))
    assert store.states[U0].leader_and_isr.leader == NO_LEADER
    assert c.ctx.partition_state(U0) is PartitionState.OFFLINE
    assert c.offline_partition_count == 1
    assert c.unclean_leader_elections == 0


async def test_an_isr_grown_since_the_controller_last_read_it_still_elects_a_leader() -> None:
    """The leader added a follower to the ISR in ZooKeeper and died before the ISR change
    notification reached the controller: its cached ISR names only the dead leader. The
    election must not leave the partition offline on that stale view: it reads the
    state again, and the follower leads (a clean election, as Kafka's controller makes
    from the state it reads at election time)."""
    c, _, store, _ = make_controller({U0: LeaderAndIsr(2, 5, (2,))})
    grown = LeaderAndIsr(2, 5, (2, 3), zk_version=1)  # written by leader 2, unseen
    store.states[U0] = LeaderIsrAndControllerEpoch(grown, 1)
    await c.brokers.on_broker_failure({2})
    assert leadership(c, U0) == (3, 6, (3,))
    assert store.states[U0].leader_and_isr.leader == 3
    assert c.ctx.partition_state(U0) is PartitionState.ONLINE
    assert c.offline_partition_count == 0 and c.unclean_leader_elections == 0


@pytest.mark.parametrize(
    ("static", "cluster_default", "topic", "unclean"),
    [
        (False, None, "true", True),
        (False, "true", None, True),
        (True, None, None, True),
        (True, None, "false", False),
        (False, "true", "false", False),
    ],
)
async def test_unclean_election_follows_the_topic_over_the_broker_config(
    static: bool, cluster_default: str | None, topic: str | None, unclean: bool
) -> None:
    c, _, _, configs = make_controller({U0: LeaderAndIsr(2, 5, (2,))}, static_unclean=static)
    if cluster_default is not None:
        configs.entity_configs[("brokers", paths.DEFAULT_ENTITY)] = {
            "unclean.leader.election.enable": cluster_default
        }
    if topic is not None:
        configs.entity_configs[(paths.TOPICS_ENTITY, "u")] = {
            "unclean.leader.election.enable": topic
        }
    await c.brokers.on_broker_failure({2})
    if unclean:
        assert leadership(c, U0) == (3, 6, (3,))
        assert c.unclean_leader_elections == 1
        assert c.offline_partition_count == 0
    else:
        assert leadership(c, U0)[0] == NO_LEADER
        assert c.unclean_leader_elections == 0
        assert c.offline_partition_count == 1


async def test_the_last_isr_member_coming_back_leads_again() -> None:
    c, _, _, _ = make_controller({U0: LeaderAndIsr(2, 5, (2,))})
    await c.brokers.on_broker_failure({2})
    c.ctx.add_live_brokers([broker(2)])
    await c.brokers.on_broker_startup({2})
    assert leadership(c, U0) == (2, 7, (2,))
    assert c.offline_partition_count == 0


# -- the brokers' answers -----------------------------------------------------------------


async def test_answers_and_removals_reach_the_callbacks_once() -> None:
    c, channel, _, _ = make_controller({A0: LeaderAndIsr(1, 5, (1, 2, 3))})
    batch = ControllerRequestBatch()
    st = c.ctx.leadership[A0]
    batch.add_leader_and_isr(c.ctx, [1, 2], A0, st, (1, 2, 3), False)
    batch.add_stop_replica(3, A0, delete=False)
    got: list[tuple[str, int, object]] = []
    batch.send(
        c.ctx,
        channel,
        1,
        on_leader_and_isr_response=lambda b, r: got.append(("lai", b, r)),
        on_stop_replica_response=lambda b, r, _: got.append(("stop", b, r)),
    )
    to_1, to_2 = channel.take(ApiKey.LEADER_AND_ISR)
    (stop,) = channel.take(ApiKey.STOP_REPLICA)
    answer = LeaderAndIsrResponse(error_code=0, topics=[])
    to_1.respond(answer)
    channel.remove_broker(2)  # died before answering
    channel.remove_broker(3)
    assert got == [("lai", 1, answer), ("lai", 2, None), ("stop", 3, None)]
    assert to_2.answered and stop.answered


async def test_the_controllers_callbacks_post_response_events() -> None:
    c, channel, _, _ = make_controller({A0: LeaderAndIsr(1, 5, (1, 2, 3))})
    await c.brokers.on_broker_failure({2})
    sent = channel.take(ApiKey.LEADER_AND_ISR)
    body = LeaderAndIsrResponse(error_code=0, topics=[])
    for r in sent:
        r.respond(body)
    assert c.events.queue_size() == len(sent)
    queued = [c.events._queue.get_nowait() for _ in sent]
    assert queued == [ev.LeaderAndIsrResponseReceived(r.broker_id, body) for r in sent]


def storage_error(tp: TopicPartition) -> LeaderAndIsrResponse:
    R = LeaderAndIsrResponse
    return R(
        error_code=0,
        topics=[
            R.LeaderAndIsrTopicError(
                topic_id=TOPIC_IDS[tp.topic],
                partition_errors=[
                    R.LeaderAndIsrPartitionError(
                        partition_index=tp.partition, error_code=ErrorCode.KAFKA_STORAGE_ERROR
                    )
                ],
            )
        ],
    )


async def test_a_storage_error_takes_the_replica_offline_and_moves_its_leadership() -> None:
    c, channel, _, _ = make_controller(
        {A0: LeaderAndIsr(1, 5, (1, 2, 3)), A1: LeaderAndIsr(2, 1, (2, 3))}
    )
    await c.brokers.on_leader_and_isr_response(
        ev.LeaderAndIsrResponseReceived(1, storage_error(A0))
    )
    assert leadership(c, A0) == (2, 6, (2, 3))
    assert c.ctx.replica_state(PartitionReplica(A0, 1)) is ReplicaState.OFFLINE
    assert leadership(c, A1) == (2, 1, (2, 3))  # other partitions untouched
    assert c.ctx.replicas_on_offline_dirs == {1: {A0}}
    # broker 1 is told to stop the replica it cannot host
    assert [r.broker_id for r in channel.take(ApiKey.STOP_REPLICA)] == [1]
    # the same answer again changes nothing
    await c.brokers.on_leader_and_isr_response(
        ev.LeaderAndIsrResponseReceived(1, storage_error(A0))
    )
    assert leadership(c, A0) == (2, 6, (2, 3))


async def test_a_replica_on_a_failed_directory_is_not_elected() -> None:
    c, _, _, _ = make_controller({A0: LeaderAndIsr(1, 5, (1, 2, 3))})
    await c.brokers.on_leader_and_isr_response(
        ev.LeaderAndIsrResponseReceived(2, storage_error(A0))
    )
    assert leadership(c, A0) == (1, 6, (1, 3))
    await c.brokers.on_broker_failure({1})
    assert leadership(c, A0) == (3, 7, (3,))


async def test_other_answers_are_logged_only(caplog: pytest.LogCaptureFixture) -> None:
    c, channel, store, _ = make_controller({A0: LeaderAndIsr(1, 5, (1, 2, 3))})
    writes = store.writes
    await c.brokers.on_leader_and_isr_response(ev.LeaderAndIsrResponseReceived(2, None))
    await c.brokers.on_leader_and_isr_response(
        ev.LeaderAndIsrResponseReceived(
            2, LeaderAndIsrResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH, topics=[])
        )
    )
    S = StopReplicaResponse
    await c.topics.on_stop_replica_response(
        ev.StopReplicaResponseReceived(
            3,
            S(
                error_code=0,
                partition_errors=[
                    S.StopReplicaPartitionError(
                        topic_name="a", partition_index=0, error_code=ErrorCode.KAFKA_STORAGE_ERROR
                    )
                ],
            ),
        )
    )
    assert store.writes == writes and channel.sent == []
    assert "STALE_CONTROLLER_EPOCH" in caplog.text
    assert "StopReplica a-0: KAFKA_STORAGE_ERROR" in caplog.text
