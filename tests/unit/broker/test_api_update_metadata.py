"""UpdateMetadata: fencing, the cache update, and waking DelayedCreateTopics."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from broker.apis import update_metadata
from broker.apis.services import ReplicaAccess
from broker.delayed.create_topics import DelayedCreateTopics, topic_key
from broker.replica_manager import ReplicaManager
from protocol import ApiKey, ErrorCode, make_request
from protocol.messages import UpdateMetadataRequest as U
from protocol.values import TopicPartition
from tests.unit.broker.handler_services import handler_services
from timer import DelayedOperationPurgatory
from timer.clock import MockClock


class FakeReplicaManager(ReplicaManager):
    """Stands in for the replica manager (a subclass without its set-up, so typed as one)."""

    def __init__(self) -> None:
        self.controller_epoch = 5
        self.live_broker_checks = 0

    def is_stale_controller_epoch(self, epoch: int) -> bool:
        return epoch < self.controller_epoch

    def live_brokers_changed(self) -> None:
        self.live_broker_checks += 1


class Req:
    def __init__(self, body: Any) -> None:
        self.header = make_request(ApiKey.UPDATE_METADATA, 7, 1, "controller", body).header
        self.body = body


class FakeGroupStore:
    """Records the partitions whose commits go with them."""

    def __init__(self) -> None:
        self.deleted: list[TopicPartition] = []

    def on_partitions_deleted(self, partitions: Iterable[TopicPartition]) -> None:
        self.deleted.extend(partitions)


def make_ctx() -> ReplicaAccess:
    clock = MockClock()
    return handler_services(
        props={"zookeeper.connect": "z:1"},
        clock=clock,
        replica_manager=FakeReplicaManager(),
        broker_epoch=50,
        topic_purgatory=DelayedOperationPurgatory("topic", clock=clock, reaper_enabled=False),
        group_store=FakeGroupStore(),
    ).replicas


def body(controller_epoch: int = 5, broker_epoch: int = 50, leader: int = 0) -> Any:
    state = U.UpdateMetadataPartitionState(
        partition_index=0, controller_epoch=controller_epoch, leader=leader, leader_epoch=0,
        isr=[0], zk_version=0, replicas=[0], offline_replicas=[],
    )  # fmt: skip
    return U(
        controller_id=0,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        topic_states=[U.UpdateMetadataTopicState(topic_name="t", partition_states=[state])],
        live_brokers=[U.UpdateMetadataBroker(id=0, endpoints=[])],
    )


async def test_update_feeds_the_cache_and_completes_waiting_creations() -> None:
    ctx = make_ctx()
    done: list[set[str]] = []
    op = DelayedCreateTopics(10_000, {"t": [0]}, ctx.metadata_cache.has_leaders, done.append)
    purgatory = ctx.topic_purgatory
    assert not purgatory.try_complete_else_watch(op, [topic_key("t")])
    response = await update_metadata.handle(ctx, Req(body()))
    assert response.body.error_code == ErrorCode.NONE
    assert ctx.metadata_cache.leader("t", 0) == 0
    assert done == [set()]
    # the live brokers may have changed: waiting DeleteRecords are checked again
    assert isinstance(ctx.replica_manager, FakeReplicaManager)
    assert ctx.replica_manager.live_broker_checks == 1


async def test_a_newer_controller_epoch_fences_the_older_controller() -> None:
    ctx = make_ctx()
    await update_metadata.handle(ctx, Req(body(controller_epoch=6)))
    response = await update_metadata.handle(ctx, Req(body(controller_epoch=5)))
    assert response.body.error_code == ErrorCode.STALE_CONTROLLER_EPOCH


async def test_stale_controller_and_broker_epochs_change_nothing() -> None:
    ctx = make_ctx()
    for stale, code in (
        (body(controller_epoch=4), ErrorCode.STALE_CONTROLLER_EPOCH),
        (body(broker_epoch=49), ErrorCode.STALE_BROKER_EPOCH),
    ):
        response = await update_metadata.handle(ctx, Req(stale))
        assert response.body.error_code == code
    assert ctx.metadata_cache.updates == 0
    # -1: a version without broker epochs is never stale
    response = await update_metadata.handle(ctx, Req(body(broker_epoch=-1)))
    assert response.body.error_code == ErrorCode.NONE


async def test_a_deleted_topic_s_overrides_are_forgotten() -> None:
    ctx = make_ctx()
    await update_metadata.handle(ctx, Req(body()))
    ctx.topic_configs.set("t", {"retention.ms": "1"})
    await update_metadata.handle(ctx, Req(body(leader=-2)))  # LeaderDuringDelete
    assert not ctx.topic_configs.knows("t")


async def test_overrides_are_forgotten_even_when_the_cache_never_had_the_topic() -> None:
    ctx = make_ctx()
    ctx.topic_configs.set("t", {"retention.ms": "1"})  # read by a DescribeConfigs, say
    await update_metadata.handle(ctx, Req(body(leader=-2)))
    assert not ctx.topic_configs.knows("t")


async def test_a_live_topic_keeps_its_overrides() -> None:
    ctx = make_ctx()
    ctx.topic_configs.set("t", {"retention.ms": "1"})
    await update_metadata.handle(ctx, Req(body()))
    assert ctx.topic_configs.overrides("t") == {"retention.ms": "1"}
