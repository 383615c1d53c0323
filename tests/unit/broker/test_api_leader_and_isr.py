"""LeaderAndIsr and StopReplica: thin handlers over the ReplicaManager (a fake here).

The fakes subclass the services they stand in for (without their set-up; ZooKeeper is the
shared tests.fakes.zk.FakeZk), so that the context is typed as in the broker and a fake's
method must keep its original's signature.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

from broker.apis import leader_and_isr, stop_replica
from broker.apis.services import ReplicaAccess
from broker.replica_manager import ReplicaManager
from protocol import ApiKey, ErrorCode
from protocol.messages import LeaderAndIsrRequest, StopReplicaRequest
from protocol.values import TopicPartition
from storage import LogManager, TopicConfigs
from tests.fakes.zk import FakeZk
from tests.unit.broker.broker_helpers import HandlerRequest as Req
from tests.unit.broker.handler_services import handler_services
from tests.unit.controller_double import controller_double

L = LeaderAndIsrRequest
TOPIC_ID = uuid.UUID(int=42)


class FakeReplicaManager(ReplicaManager):
    def __init__(self, controller_epoch: int = 3) -> None:
        self.controller_epoch = controller_epoch
        self.calls: list[tuple[str, Any]] = []

    def is_stale_controller_epoch(self, epoch: int) -> bool:
        return epoch < self.controller_epoch

    async def become_leader_or_follower(
        self,
        controller_id: int,
        controller_epoch: int,
        states: Iterable[Any],
        topic_ids: Mapping[str, uuid.UUID],
        live_leaders: Sequence[Any] = (),
    ) -> dict[TopicPartition, int]:
        states = list(states)
        self.calls.append(("lai", (controller_id, controller_epoch, states, dict(topic_ids))))
        return {
            TopicPartition(s.topic_name, s.partition_index): (
                ErrorCode.NONE if s.partition_index == 0 else ErrorCode.KAFKA_STORAGE_ERROR
            )
            for s in states
        }

    async def stop_replicas(
        self,
        controller_epoch: int,
        partitions: Iterable[tuple[str, int, bool]],
        leader_epochs: Mapping[TopicPartition, int] | None = None,
        controller_id: int = -1,
    ) -> dict[TopicPartition, int]:
        entries = list(partitions)
        self.calls.append(("stop", (entries, dict(leader_epochs or {}))))
        return {TopicPartition(t, p): ErrorCode.NONE for t, p, _ in entries}


def zk_with_t() -> FakeZk:
    zk = FakeZk()
    zk.add_topic("t", {0: (0,), 1: (0,)}, {"segment.bytes": "1048576"}, topic_id=TOPIC_ID)
    return zk


class FakeLogManager(LogManager):
    """Records the overrides it is told of, as the LogManager listens to TopicConfigs."""

    def __init__(self, topic_configs: TopicConfigs) -> None:
        self.configs: dict[str, dict[str, str]] = {}
        topic_configs.listen(
            lambda topic: self.update_topic_config(topic, topic_configs.overrides(topic))
        )

    def update_topic_config(self, topic: str, overrides: Mapping[str, str]) -> None:
        self.configs[topic] = dict(overrides)


def make_ctx(topic_configs: TopicConfigs | None = None) -> ReplicaAccess:
    return handler_services(
        props={"zookeeper.connect": "z:1"},
        replica_manager=FakeReplicaManager(),
        controller=controller_double(broker_epoch=100),
        zk=zk_with_t(),
        topic_configs=topic_configs,
    ).replicas


def rm_of(ctx: ReplicaAccess) -> FakeReplicaManager:
    assert isinstance(ctx.replica_manager, FakeReplicaManager)
    return ctx.replica_manager


def lai_body(controller_epoch: int = 3, broker_epoch: int = 100) -> Any:
    states = [
        L.LeaderAndIsrPartitionState(
            partition_index=p,
            controller_epoch=controller_epoch,
            leader=0,
            leader_epoch=1,
            isr=[0],
            partition_epoch=0,
            replicas=[0],
            adding_replicas=[],
            removing_replicas=[],
        )
        for p in (0, 1)
    ]
    return L(
        controller_id=1,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        type=0,
        topic_states=[
            L.LeaderAndIsrTopicState(topic_name="t", topic_id=TOPIC_ID, partition_states=states)
        ],
        live_leaders=[L.LeaderAndIsrLiveLeader(broker_id=0, host_name="h", port=1)],
    )


async def test_leader_and_isr_v5_passes_named_states_and_groups_errors_by_topic_id() -> None:
    topic_configs = TopicConfigs()
    log_manager = FakeLogManager(topic_configs)
    ctx = make_ctx(topic_configs)
    response = await leader_and_isr.handle(ctx, Req(ApiKey.LEADER_AND_ISR, 5, lai_body()))
    assert response.body.error_code == ErrorCode.NONE
    (topic,) = response.body.topics
    assert topic.topic_id == TOPIC_ID
    assert [(e.partition_index, e.error_code) for e in topic.partition_errors] == [
        (0, ErrorCode.NONE),
        (1, ErrorCode.KAFKA_STORAGE_ERROR),
    ]
    ((kind, (controller_id, epoch, states, ids)),) = rm_of(ctx).calls
    assert (kind, controller_id, epoch, ids) == ("lai", 1, 3, {"t": TOPIC_ID})
    assert [(s.topic_name, s.partition_index) for s in states] == [("t", 0), ("t", 1)]
    # the topic's overrides were loaded before its logs are made
    assert log_manager.configs == {"t": {"segment.bytes": "1048576"}}


async def test_leader_and_isr_v4_lists_errors_by_name() -> None:
    ctx = make_ctx()
    response = await leader_and_isr.handle(ctx, Req(ApiKey.LEADER_AND_ISR, 4, lai_body()))
    errors = [(e.topic_name, e.partition_index) for e in response.body.partition_errors]
    assert errors == [("t", 0), ("t", 1)]


@pytest.mark.parametrize(
    ("controller_epoch", "broker_epoch", "code"),
    [(2, 100, ErrorCode.STALE_CONTROLLER_EPOCH), (3, 99, ErrorCode.STALE_BROKER_EPOCH)],
)
async def test_stale_requests_are_refused_whole(
    controller_epoch: int, broker_epoch: int, code: int
) -> None:
    ctx = make_ctx()
    body = lai_body(controller_epoch, broker_epoch)
    response = await leader_and_isr.handle(ctx, Req(ApiKey.LEADER_AND_ISR, 5, body))
    assert response.body.error_code == code
    assert rm_of(ctx).calls == []


async def test_stop_replica_v3_passes_delete_flags_and_leader_epochs() -> None:
    ctx = make_ctx()
    S = StopReplicaRequest
    body = S(
        controller_id=1,
        controller_epoch=3,
        broker_epoch=100,
        topic_states=[
            S.StopReplicaTopicState(
                topic_name="t",
                partition_states=[
                    S.StopReplicaPartitionState(
                        partition_index=0, leader_epoch=4, delete_partition=True
                    ),
                    S.StopReplicaPartitionState(
                        partition_index=1, leader_epoch=-2, delete_partition=False
                    ),
                ],
            )
        ],
    )
    response = await stop_replica.handle(ctx, Req(ApiKey.STOP_REPLICA, 3, body))
    assert response.body.error_code == ErrorCode.NONE
    assert [(e.topic_name, e.partition_index) for e in response.body.partition_errors] == [
        ("t", 0),
        ("t", 1),
    ]
    ((_, (entries, epochs)),) = rm_of(ctx).calls
    assert entries == [("t", 0, True), ("t", 1, False)]
    assert epochs == {TopicPartition("t", 0): 4, TopicPartition("t", 1): -2}


async def test_stop_replica_v1_uses_the_request_wide_delete_flag() -> None:
    ctx = make_ctx()
    S = StopReplicaRequest
    body = S(
        controller_id=1,
        controller_epoch=3,
        broker_epoch=100,
        delete_partitions=True,
        topics=[S.StopReplicaTopicV1(name="t", partition_indexes=[2, 5])],
    )
    await stop_replica.handle(ctx, Req(ApiKey.STOP_REPLICA, 1, body))
    ((_, (entries, epochs)),) = rm_of(ctx).calls
    assert entries == [("t", 2, True), ("t", 5, True)] and epochs == {}


async def test_stop_replica_from_a_stale_controller() -> None:
    ctx = make_ctx()
    body = StopReplicaRequest(
        controller_id=1, controller_epoch=1, broker_epoch=100, topic_states=[]
    )
    response = await stop_replica.handle(ctx, Req(ApiKey.STOP_REPLICA, 3, body))
    assert response.body.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
