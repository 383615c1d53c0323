"""FindCoordinator over a fed MetadataCache: the leader of the group's offsets partition
on the request's listener, one key (v0-3) or a batch (v4); COORDINATOR_NOT_AVAILABLE while
the offsets topic is missing (its creation started) or leaderless; transactions refused."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from broker.admin.topics import OFFSETS_TOPIC
from broker.apis import find_coordinator
from broker.apis.services import GroupAccess
from broker.group.manager import GroupMetadataManager, OffsetsConfig
from broker.group.offsets_topic import creation_error
from broker.group.partitioner import partition_for
from broker.metadata_cache import MetadataCache
from broker.partition import Partition
from protocol import ApiKey, ErrorCode
from protocol.messages import FindCoordinatorRequest, UpdateMetadataRequest
from protocol.values import TopicPartition
from tests.unit.broker.broker_helpers import HandlerRequest as Req
from tests.unit.broker.handler_services import handler_services
from timer.clock import MockClock

U = UpdateMetadataRequest
PARTITIONS = 4


def endpoints(broker: int) -> list[Any]:
    return [
        U.UpdateMetadataEndpoint(
            port=9092 + broker, host=f"h{broker}", listener="PLAINTEXT", security_protocol=0
        ),
        U.UpdateMetadataEndpoint(
            port=9192 + broker, host=f"h{broker}", listener="CONTROLLER", security_protocol=0
        ),
    ]


def feed(cache: MetadataCache, leaders: Sequence[int] | None) -> None:
    """Brokers 0 and 1 alive; the offsets topic led by ``leaders`` (None: no topic)."""
    topics = []
    if leaders is not None:
        topics.append(
            U.UpdateMetadataTopicState(
                topic_name=OFFSETS_TOPIC,
                topic_id=uuid.uuid4(),
                partition_states=[
                    U.UpdateMetadataPartitionState(
                        partition_index=p,
                        controller_epoch=1,
                        leader=leader,
                        leader_epoch=0,
                        isr=[0, 1],
                        zk_version=0,
                        replicas=[0, 1],
                    )
                    for p, leader in enumerate(leaders)
                ],
            )
        )
    cache.update_metadata(
        U(
            controller_id=0,
            controller_epoch=1,
            topic_states=topics,
            live_brokers=[U.UpdateMetadataBroker(id=b, endpoints=endpoints(b)) for b in (0, 1)],
        )
    )


class NoReplicas:
    """FindCoordinator never reads or appends a log: a store on top of this proves it."""

    def partition_for(self, tp: TopicPartition) -> Partition | None:
        raise AssertionError("FindCoordinator read a partition")

    def append_records(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("FindCoordinator appended")


class Creations:
    def __init__(self) -> None:
        self.count = 0

    async def create(self) -> int:
        self.count += 1
        return ErrorCode.NONE


def make_ctx(
    leaders: Sequence[int] | None, creations: Creations, props: Mapping[str, str] | None = None
) -> GroupAccess:
    cache = MetadataCache(0)
    feed(cache, leaders)
    store = GroupMetadataManager(
        replicas=NoReplicas(),
        clock=MockClock(),
        config=OffsetsConfig(num_partitions=50),
        topic_partition_count=lambda: cache.num_partitions(OFFSETS_TOPIC),
        create_offsets_topic=creations.create,
    )
    return handler_services(
        props=props, cluster_id="cid", metadata_cache=cache, group_store=store
    ).groups


def group_led_by(broker: int, leaders: Sequence[int]) -> str:
    return next(
        g for i in range(1000) if leaders[partition_for(g := f"g{i}", len(leaders))] == broker
    )


async def call(ctx: GroupAccess, version: int, body: Any, listener: str = "PLAINTEXT") -> Any:
    request = Req(ApiKey.FIND_COORDINATOR, version, body, listener)
    return (await find_coordinator.handle(ctx, request)).body


LEADERS = (0, 1, 1, -1)  # partition 3 has no leader


async def test_v3_answers_the_leader_of_the_groups_partition_on_the_listener() -> None:
    ctx = make_ctx(LEADERS, Creations())
    group = group_led_by(1, LEADERS)
    body = await call(ctx, 3, FindCoordinatorRequest(key=group, key_type=0))
    assert (body.error_code, body.node_id, body.host, body.port) == (0, 1, "h1", 9093)
    assert body.error_message == "NONE"  # Kafka's message of a success: its error's name
    control = await call(ctx, 3, FindCoordinatorRequest(key=group, key_type=0), "CONTROLLER")
    assert (control.node_id, control.port) == (1, 9193)


async def test_v0_has_no_key_type_and_means_a_group() -> None:
    ctx = make_ctx(LEADERS, Creations())
    group = group_led_by(0, LEADERS)
    body = await call(ctx, 0, FindCoordinatorRequest(key=group))
    assert (body.error_code, body.node_id, body.port) == (0, 0, 9092)


async def test_the_partition_count_is_the_existing_topics() -> None:
    # the broker's setting says 50 partitions, the topic has 4: 4 decides
    ctx = make_ctx(LEADERS, Creations())
    assert ctx.store.partition_count() == PARTITIONS


async def test_v4_answers_each_key_of_the_batch() -> None:
    ctx = make_ctx(LEADERS, Creations())
    on_0, on_1 = group_led_by(0, LEADERS), group_led_by(-1, LEADERS)
    body = await call(ctx, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=[on_0, on_1]))
    first, second = body.coordinators
    assert (first.key, first.error_code, first.node_id, first.host) == (on_0, 0, 0, "h0")
    assert first.error_message == "NONE"
    assert (second.key, second.error_code, second.node_id, second.port) == (
        on_1,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        -1,
        -1,
    )


async def test_a_missing_offsets_topic_is_created_and_answered_not_available() -> None:
    creations = Creations()
    ctx = make_ctx(None, creations)
    body = await call(ctx, 3, FindCoordinatorRequest(key="g", key_type=0))
    assert (body.error_code, body.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
    # a second request while the first creation is under way does not start another
    again = await call(ctx, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=["h"]))
    assert again.coordinators[0].error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    creation = ctx.store.offsets_topic_creation
    assert creation is not None and await creation == ErrorCode.NONE
    assert creations.count == 1


async def test_transactions_are_refused_as_the_broker_refuses_them_elsewhere() -> None:
    ctx = make_ctx(LEADERS, Creations(), {"minikafka.transactions.enable": "false"})
    body = await call(ctx, 3, FindCoordinatorRequest(key="tx", key_type=1))
    assert body.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    batch = await call(ctx, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=["a", "b"]))
    assert [c.error_code for c in batch.coordinators] == [
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    ] * 2


async def test_an_unknown_key_type_is_an_invalid_request() -> None:
    ctx = make_ctx(LEADERS, Creations())
    body = await call(ctx, 3, FindCoordinatorRequest(key="g", key_type=7))
    assert body.error_code == ErrorCode.INVALID_REQUEST


def test_the_topic_is_not_created_with_fewer_brokers_than_its_replication_factor() -> None:
    assert creation_error(2, 3) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert creation_error(3, 3) == ErrorCode.NONE
    assert creation_error(1, 1) == ErrorCode.NONE
