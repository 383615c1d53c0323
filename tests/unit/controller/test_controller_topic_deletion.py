"""TopicDeletionManager: each step of a deletion and its effect, on an in-memory context.

The manager runs on the real state machines over an in-memory partition-state store,
with a fake DeletionClient that records what would leave the controller: the requests
(StopReplica with or without delete, UpdateMetadata), the ZooKeeper deletes and the
muted watches. The last tests drive a whole KafkaController through its handlers, from
the /admin/delete_topics event to the brokers' StopReplica answers and the znodes' removal.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

import pytest

from controller.context import ControllerContext
from controller.controller import ControllerConfig, KafkaController
from controller.model import PartitionReplica
from controller.partition_state_machine import PartitionStateMachine
from controller.reassignment_rules import ReplicaAssignment
from controller.replica_state_machine import ReplicaStateMachine
from controller.request_batch import ControllerRequestBatch
from controller.request_bodies import build_stop_replica, build_update_metadata
from controller.states import PartitionState, ReplicaState
from controller.topic_deletion import (
    TopicDeletionManager,
    deletion_answers,
    topics_ineligible_at_failover,
)
from protocol import ApiKey, ErrorCode
from protocol.messages import StopReplicaResponse
from protocol.values import EPOCH_DURING_DELETE, LEADER_DURING_DELETE, TopicPartition
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

R = ReplicaState
D0, D1 = TopicPartition("d", 0), TopicPartition("d", 1)
K0 = TopicPartition("k", 0)
EPOCH_ZK_VERSION = 7


def broker(bid: int) -> BrokerInfo:
    return BrokerInfo(bid, (EndPoint("127.0.0.1", 9000 + bid),), epoch=100 + bid)


class FakeDeletionClient:
    """Records the manager's side effects."""

    def __init__(self) -> None:
        self.deleted_topics: list[tuple[str, int]] = []
        self.deleted_entries: list[list[str]] = []
        self.muted: list[str] = []
        self.metadata_updates: list[list[TopicPartition]] = []
        #: broker -> partition -> delete?, over every batch sent
        self.stops: dict[int, dict[TopicPartition, bool]] = {}

    async def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        self.deleted_topics.append((topic, epoch_zk_version))

    async def delete_topic_deletions(self, topics: Collection[str], epoch_zk_version: int) -> None:
        self.deleted_entries.append(sorted(topics))

    def mute_partition_modifications(self, topic: str) -> None:
        self.muted.append(topic)

    def send_metadata_update(self, partitions: Collection[TopicPartition]) -> None:
        self.metadata_updates.append(sorted(partitions))

    def send(self, batch: ControllerRequestBatch) -> None:
        for bid, stops in batch.stop_replica.items():
            self.stops.setdefault(bid, {}).update(stops)

    def take_stops(self) -> dict[int, dict[TopicPartition, bool]]:
        taken, self.stops = self.stops, {}
        return taken


def seed_topics(ctx: ControllerContext, store: InMemoryPartitionStateStore) -> None:
    """Topic d (d-0 on 1,2,3; d-1 on 2,3) and topic k (k-0 on 1,2) with their leaders and
    ISRs, in the controller's context and in the partition state store alike."""
    ctx.set_topic(TopicAssignment("d", uuid.uuid4(), {0: (1, 2, 3), 1: (2, 3)}))
    ctx.set_topic(TopicAssignment("k", uuid.uuid4(), {0: (1, 2)}))
    for tp, lai in {
        D0: LeaderAndIsr(1, 3, (1, 2, 3)),
        D1: LeaderAndIsr(2, 1, (2, 3)),
        K0: LeaderAndIsr(1, 0, (1, 2)),
    }.items():
        st = LeaderIsrAndControllerEpoch(lai, 1)
        ctx.put_leadership(tp, st)
        store.states[tp] = st


def make_manager(
    enabled: bool = True, dead: Collection[int] = ()
) -> tuple[TopicDeletionManager, ControllerContext, FakeDeletionClient]:
    """Brokers {1, 2, 3} (``dead`` ones gone, their replicas Offline as after their
    death): topic d (d-0 on 1,2,3; d-1 on 2,3) and topic k (k-0 on 1,2)."""
    ctx = ControllerContext()
    ctx.epoch, ctx.epoch_zk_version = 1, EPOCH_ZK_VERSION
    ctx.add_live_brokers(broker(b) for b in (1, 2, 3))
    store = InMemoryPartitionStateStore(epoch_zk_version=EPOCH_ZK_VERSION)
    seed_topics(ctx, store)
    partition_sm = PartitionStateMachine(ctx, store)
    replica_sm = ReplicaStateMachine(ctx, store)
    partition_sm.initialize_states()
    replica_sm.initialize_states()
    ctx.remove_live_brokers(dead)
    for pr in ctx.replicas_on_brokers(dead):
        ctx.replica_states[pr] = R.OFFLINE
    client = FakeDeletionClient()
    return TopicDeletionManager(ctx, replica_sm, partition_sm, client, enabled), ctx, client


def states(ctx: ControllerContext, topic: str) -> dict[PartitionReplica, ReplicaState]:
    return {pr: ctx.replica_state(pr) for pr in ctx.replicas_for_topic(topic)}


def replicas(*pairs: tuple[TopicPartition, int]) -> list[PartitionReplica]:
    return [PartitionReplica(tp, b) for tp, b in pairs]


ALL_D = replicas((D0, 1), (D0, 2), (D0, 3), (D1, 2), (D1, 3))


# -- starting ---------------------------------------------------------------------------------


async def test_partitions_go_offline_then_non_existent_and_every_broker_is_told() -> None:
    m, ctx, client = make_manager()
    await m.enqueue({"d"})
    assert ctx.partition_states.get(D0) is None and ctx.partition_states.get(D1) is None
    assert ctx.partition_state(D0) is PartitionState.NON_EXISTENT
    assert ctx.partition_state(K0) is PartitionState.ONLINE  # other topics untouched
    assert ctx.topics_with_deletion_started == {"d"}
    assert client.metadata_updates == [[D0, D1]]
    # the UpdateMetadata built for them says "deleted" (leader -2) for every partition
    _, _, body = build_update_metadata(ctx, 1, client.metadata_updates[0])
    (topic,) = body.topic_states
    assert topic.topic_name == "d"
    assert [p.leader for p in topic.partition_states] == [LEADER_DURING_DELETE] * 2


async def test_live_replicas_go_offline_then_deletion_started_with_stop_replica_delete() -> None:
    m, ctx, client = make_manager()
    await m.enqueue({"d"})
    assert states(ctx, "d") == dict.fromkeys(ALL_D, R.DELETION_STARTED)
    assert states(ctx, "k") == dict.fromkeys(replicas((K0, 1), (K0, 2)), R.ONLINE)
    stops = client.take_stops()
    assert stops == {1: {D0: True}, 2: {D0: True, D1: True}, 3: {D0: True, D1: True}}
    # the request carries Kafka's "deleting" epoch, so a broker deletes whatever it has
    _, _, body = build_stop_replica(ctx, 1, 2, stops[2])
    (topic,) = body.topic_states
    assert [(p.leader_epoch, p.delete_partition) for p in topic.partition_states] == [
        (EPOCH_DURING_DELETE, True),
        (EPOCH_DURING_DELETE, True),
    ]
    assert client.deleted_topics == []  # nothing leaves ZooKeeper before the replicas


async def test_a_second_enqueue_while_replicas_are_being_deleted_sends_nothing_again() -> None:
    m, _, client = make_manager()
    await m.enqueue({"d"})
    client.take_stops()
    await m.enqueue({"d"})
    assert client.take_stops() == {} and client.metadata_updates == [[D0, D1]]


# -- the brokers' answers ---------------------------------------------------------------------


async def test_the_topic_completes_once_every_replica_is_deleted() -> None:
    m, ctx, client = make_manager()
    await m.enqueue({"d"})
    await m.complete_replica_deletion(ALL_D[:4])
    assert [s for s in states(ctx, "d").values()].count(R.DELETION_SUCCESSFUL) == 4
    assert client.deleted_topics == [] and client.muted == []
    await m.complete_replica_deletion(ALL_D[4:])
    # ZooKeeper first (fenced by this controller's epoch), then the context forgets it
    assert client.muted == ["d"]
    assert client.deleted_topics == [("d", EPOCH_ZK_VERSION)]
    assert "d" not in ctx.all_topics() and "d" not in ctx.topic_ids
    assert not any(pr.tp.topic == "d" for pr in ctx.replica_states)
    assert ctx.topics_to_delete == set() and ctx.topics_with_deletion_started == set()
    assert D0 not in ctx.leadership
    assert ctx.all_topics() == {"k"}


async def test_a_failed_replica_is_ineligible_and_deleted_again_when_resumed() -> None:
    m, ctx, client = make_manager()
    await m.enqueue({"d"})
    client.take_stops()
    failed = PartitionReplica(D1, 2)
    await m.fail_replica_deletion([failed])
    assert ctx.replica_state(failed) is R.DELETION_INELIGIBLE
    assert ctx.topics_ineligible_for_deletion == {"d"}
    others = [pr for pr in ALL_D if pr != failed]
    await m.complete_replica_deletion(others)
    # nothing in flight: the ineligible replica is put back to Offline (StopReplica), but
    # the topic stays halted until something resumes it
    assert ctx.replica_state(failed) is R.OFFLINE
    assert client.take_stops() == {2: {D1: False}}
    assert client.deleted_topics == []
    await m.resume_for_topics({"d"})
    assert ctx.replica_state(failed) is R.DELETION_STARTED
    assert client.take_stops() == {2: {D1: True}}  # only the one not deleted yet
    await m.complete_replica_deletion([failed])
    assert client.deleted_topics == [("d", EPOCH_ZK_VERSION)]


async def test_a_replica_on_a_dead_broker_holds_the_topic_until_its_broker_returns() -> None:
    m, ctx, client = make_manager(dead={3})
    await m.enqueue({"d"})
    on_3 = replicas((D0, 3), (D1, 3))
    assert {pr: ctx.replica_state(pr) for pr in on_3} == dict.fromkeys(on_3, R.DELETION_INELIGIBLE)
    assert ctx.topics_ineligible_for_deletion == {"d"}
    assert 3 not in client.take_stops()  # nothing is asked of a dead broker
    await m.complete_replica_deletion([pr for pr in ALL_D if pr.replica != 3])
    assert client.deleted_topics == []
    # the broker comes back
    ctx.add_live_brokers([broker(3)])
    client.take_stops()
    await m.resume_for_topics({"d"})
    assert client.take_stops() == {3: {D0: True, D1: True}}
    await m.complete_replica_deletion(on_3)
    assert client.deleted_topics == [("d", EPOCH_ZK_VERSION)]


async def test_answers_for_replicas_not_being_deleted_change_nothing() -> None:
    m, ctx, client = make_manager()
    await m.complete_replica_deletion(replicas((K0, 1)))
    await m.fail_replica_deletion(replicas((K0, 2)))
    assert states(ctx, "k") == dict.fromkeys(replicas((K0, 1), (K0, 2)), R.ONLINE)
    assert ctx.topics_ineligible_for_deletion == set()
    assert client.stops == {} and client.deleted_topics == []


def test_deletion_answers_reads_only_deleted_partitions_of_started_topics() -> None:
    ctx = ControllerContext()
    ctx.topics_with_deletion_started = {"d"}
    errors = {D0: ErrorCode.NONE, D1: ErrorCode.KAFKA_STORAGE_ERROR, K0: ErrorCode.NONE}
    failed, ok = deletion_answers(ctx, 2, errors, {D0, D1, K0})
    assert (failed, ok) == (replicas((D1, 2)), replicas((D0, 2)))
    # a plain stop of the same partition is not a deletion
    assert deletion_answers(ctx, 2, errors, {D1}) == (replicas((D1, 2)), [])
    assert deletion_answers(ctx, 2, errors, set()) == ([], [])
    # a request refused whole fails every deleted partition
    refused = deletion_answers(ctx, 2, {}, {D0, D1}, ErrorCode.STALE_CONTROLLER_EPOCH)
    assert refused == (replicas((D0, 2), (D1, 2)), [])


# -- obstacles and failover -------------------------------------------------------------------


async def test_an_ineligible_topic_waits_untouched_until_resumed() -> None:
    m, ctx, client = make_manager()
    ctx.topics_to_delete.add("d")
    m.mark_ineligible({"d"}, "reassignment in progress")
    await m.try_topic_deletion()
    assert states(ctx, "d") == dict.fromkeys(ALL_D, R.ONLINE)
    assert client.stops == {} and client.metadata_updates == []
    await m.resume_for_topics({"d"})
    assert states(ctx, "d") == dict.fromkeys(ALL_D, R.DELETION_STARTED)


def test_a_new_controller_finds_queued_topics_it_cannot_delete_yet() -> None:
    ctx = ControllerContext()
    ctx.add_live_brokers(broker(b) for b in (1, 2))
    ctx.set_topic(TopicAssignment("d", uuid.uuid4(), {0: (1, 2, 3)}))  # 3 is not live
    ctx.set_topic(TopicAssignment("m", uuid.uuid4(), {0: (1, 2)}))
    ctx.set_topic(TopicAssignment("k", uuid.uuid4(), {0: (1, 2)}))
    ctx.set_full_assignment(TopicPartition("m", 0), ReplicaAssignment((1, 2), (2,), (1,)))
    assert topics_ineligible_at_failover(ctx, {"d", "m", "k"}) == {"d", "m"}


async def test_after_failover_queued_topics_resume_and_ineligible_ones_wait() -> None:
    m, ctx, _ = make_manager()
    await m.init({"d", "k"}, {"k"})
    assert ctx.topics_to_delete == {"d", "k"}
    await m.try_topic_deletion()
    assert states(ctx, "d") == dict.fromkeys(ALL_D, R.DELETION_STARTED)
    assert states(ctx, "k") == dict.fromkeys(replicas((K0, 1), (K0, 2)), R.ONLINE)


async def test_with_deletion_disabled_requests_are_dropped() -> None:
    m, ctx, client = make_manager(enabled=False)
    await m.init({"d"}, set())
    assert client.deleted_entries == [["d"]]
    assert ctx.topics_to_delete == set()
    await m.enqueue({"d"})
    assert ctx.topics_to_delete == set() and client.stops == {}


# -- through the controller's handlers --------------------------------------------------------


def make_controller(
    delete_topic_enable: bool = True,
) -> tuple[KafkaController, RecordingChannelManager, FakeZk]:
    zk = FakeZk()
    channel = RecordingChannelManager()
    store = InMemoryPartitionStateStore(epoch_zk_version=EPOCH_ZK_VERSION)
    c = KafkaController(
        zk,
        broker(1),
        channel,
        MockClock(),
        ControllerConfig(delete_topic_enable=delete_topic_enable),
        store=store,
        scheduler=None,
    )
    ctx = c.ctx
    ctx.epoch, ctx.epoch_zk_version, c.election.active_controller_id = 1, EPOCH_ZK_VERSION, 1
    ctx.add_live_brokers(broker(b) for b in (1, 2, 3))
    for b in (1, 2, 3):
        channel.add_broker(broker(b))
    seed_topics(ctx, store)
    c.partition_sm.initialize_states()
    c.replica_sm.initialize_states()
    return c, channel, zk


def stop_answer(body: Any, code: int = ErrorCode.NONE) -> StopReplicaResponse:
    S = StopReplicaResponse
    return S(
        error_code=0,
        partition_errors=[
            S.StopReplicaPartitionError(
                topic_name=t.topic_name, partition_index=p.partition_index, error_code=code
            )
            for t in body.topic_states
            for p in t.partition_states
        ],
    )


async def drain(c: KafkaController) -> None:
    """Handle the queued events (the brokers' answers) as the event task would."""
    while c.events.queue_size():
        await c.process(c.events._queue.get_nowait())


async def test_a_queued_topic_is_deleted_end_to_end_by_the_brokers_answers() -> None:
    c, channel, zk = make_controller()
    zk.queued_deletions = ["d", "nonexistent"]
    await c.topics.on_topic_deletion()
    assert zk.deleted_entries == ["nonexistent"]  # unknown topics are dropped, as Kafka does
    sent = channel.take(ApiKey.STOP_REPLICA)
    assert sorted(r.broker_id for r in sent) == [1, 2, 3]
    assert all(
        p.delete_partition for r in sent for t in r.body.topic_states for p in t.partition_states
    )
    updates = channel.take(ApiKey.UPDATE_METADATA)
    assert {
        (t.topic_name, p.leader)
        for r in updates
        for t in r.body.topic_states
        for p in t.partition_states
    } == {("d", LEADER_DURING_DELETE)}
    for r in sent[:-1]:
        r.respond(stop_answer(r.body))
    await drain(c)
    assert zk.deleted_topics == []
    sent[-1].respond(stop_answer(sent[-1].body))
    await drain(c)
    assert zk.deleted_topics == [("d", EPOCH_ZK_VERSION)]
    assert c.ctx.all_topics() == {"k"}


async def test_an_error_answer_and_a_dead_broker_make_replicas_ineligible() -> None:
    c, channel, zk = make_controller()
    zk.queued_deletions = ["d"]
    await c.topics.on_topic_deletion()
    sent = {r.broker_id: r for r in channel.take(ApiKey.STOP_REPLICA)}
    sent[1].respond(stop_answer(sent[1].body, ErrorCode.KAFKA_STORAGE_ERROR))
    await drain(c)
    assert c.ctx.replica_state(PartitionReplica(D0, 1)) is R.DELETION_INELIGIBLE
    # broker 3 dies before answering: its replicas cannot be deleted now either
    await c.brokers.on_broker_failure({3})
    await drain(c)  # its abandoned request's None answer changes nothing more
    assert c.ctx.replica_state(PartitionReplica(D0, 3)) is R.DELETION_INELIGIBLE
    assert c.ctx.replica_state(PartitionReplica(D1, 3)) is R.DELETION_INELIGIBLE
    sent[2].respond(stop_answer(sent[2].body))
    await drain(c)
    assert zk.deleted_topics == []
    channel.take()
    # broker 3 returns: deletion resumes on 1 (retried) and 3
    c.ctx.add_live_brokers([broker(3)])
    channel.add_broker(broker(3))
    await c.brokers.on_broker_startup({3})
    again = {r.broker_id: r for r in channel.take(ApiKey.STOP_REPLICA)}
    assert sorted(again) == [1, 3]
    for r in again.values():
        r.respond(stop_answer(r.body))
    await drain(c)
    assert zk.deleted_topics == [("d", EPOCH_ZK_VERSION)]


async def test_a_topic_being_deleted_ignores_partition_changes_and_gets_no_leaders() -> None:
    c, channel, zk = make_controller()
    zk.queued_deletions = ["d"]
    await c.topics.on_topic_deletion()
    channel.take()
    await c.topics.on_partition_modifications("d")  # would read the znode: must not
    await c.brokers.on_broker_failure({1})
    sent = channel.take(ApiKey.LEADER_AND_ISR)
    assert not any(t.topic_name == "d" for r in sent for t in r.body.topic_states)


async def test_with_deletion_disabled_the_controller_drops_the_requests() -> None:
    c, channel, zk = make_controller(delete_topic_enable=False)
    zk.queued_deletions = ["d"]
    await c.topics.on_topic_deletion()
    assert zk.deleted_entries == ["d"] and c.ctx.topics_to_delete == set()
    assert channel.take(ApiKey.STOP_REPLICA) == []


@pytest.mark.parametrize("response", [None, "refused"])
async def test_a_missing_answer_is_left_to_the_brokers_death(response: str | None) -> None:
    c, channel, zk = make_controller()
    zk.queued_deletions = ["d"]
    await c.topics.on_topic_deletion()
    (to_2,) = [r for r in channel.take(ApiKey.STOP_REPLICA) if r.broker_id == 2]
    if response is None:
        to_2.respond(None)
    else:
        to_2.respond(StopReplicaResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH))
    await drain(c)
    expected = R.DELETION_STARTED if response is None else R.DELETION_INELIGIBLE
    assert c.ctx.replica_state(PartitionReplica(D1, 2)) is expected


async def test_a_topic_with_a_partition_being_reassigned_waits_for_the_reassignment() -> None:
    c, channel, zk = make_controller()
    c.ctx.set_full_assignment(D1, ReplicaAssignment((2, 3, 1), (1,), ()))
    zk.queued_deletions = ["d"]
    await c.topics.on_topic_deletion()
    assert c.ctx.topics_ineligible_for_deletion == {"d"}
    assert channel.take(ApiKey.STOP_REPLICA) == []

    async def reassignment_completes() -> None:
        c.ctx.set_full_assignment(D1, ReplicaAssignment((2, 3)))

    await c.topics.after_reassignment(reassignment_completes())
    assert c.ctx.topics_ineligible_for_deletion == set()
    assert sorted(r.broker_id for r in channel.take(ApiKey.STOP_REPLICA)) == [1, 2, 3]
