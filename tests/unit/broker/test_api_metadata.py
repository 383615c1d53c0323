"""Metadata, DescribeCluster and DescribeConfigs handlers over a fed MetadataCache."""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis import describe_cluster, describe_configs, metadata
from broker.apis.services import HandlerServices
from broker.config import ConfigSource
from broker.metadata_cache import MetadataCache
from protocol import ApiKey, ErrorCode
from protocol.messages import (
    DescribeClusterRequest,
    DescribeConfigsRequest,
    MetadataRequest,
    UpdateMetadataRequest,
)
from tests.fakes.zk import FakeZk
from tests.unit.broker.broker_helpers import HandlerRequest as Req
from tests.unit.broker.handler_services import family_for, handler_services

U = UpdateMetadataRequest
TOPIC_ID = uuid.UUID("0f0e0d0c-0b0a-0908-0706-050403020100")


def zk_with_t() -> FakeZk:
    """ZooKeeper knows topic t (with an override), as the cache does."""
    zk = FakeZk()
    zk.add_topic("t", {0: (0, 2), 1: (0, 2)}, {"retention.ms": "1234"}, topic_id=TOPIC_ID)
    return zk


def created(ctx: HandlerServices) -> list[str]:
    """The topics this broker created in ZooKeeper (t was there before)."""
    assert isinstance(ctx.topics.zk, FakeZk)
    return sorted(set(ctx.topics.zk.topics) - {"t"})


def make_ctx(auto_create: bool = True, **extra: str) -> HandlerServices:
    """``extra``: more broker properties (dots as underscores)."""
    cache = MetadataCache(0)
    endpoints = [
        U.UpdateMetadataEndpoint(port=9092, host="h0", listener="PLAINTEXT", security_protocol=0),
        U.UpdateMetadataEndpoint(port=9192, host="h0", listener="CONTROLLER", security_protocol=0),
    ]
    brokers = [
        U.UpdateMetadataBroker(id=0, endpoints=endpoints, rack="r0"),
        # broker 1 has no PLAINTEXT listener: invisible to PLAINTEXT clients
        U.UpdateMetadataBroker(id=1, endpoints=endpoints[1:]),
    ]
    partitions = [
        U.UpdateMetadataPartitionState(
            partition_index=p,
            controller_epoch=1,
            leader=leader,
            leader_epoch=3,
            isr=[0],
            zk_version=0,
            replicas=[0, 2],
            offline_replicas=[2],
        )
        for p, leader in ((0, 0), (1, 2))  # broker 2 is not live
    ]
    cache.update_metadata(
        U(
            controller_id=0,
            controller_epoch=1,
            topic_states=[
                U.UpdateMetadataTopicState(
                    topic_name="t", topic_id=TOPIC_ID, partition_states=partitions
                )
            ],
            live_brokers=brokers,
        )
    )
    props = {
        "zookeeper.connect": "z:1",
        "auto.create.topics.enable": "true" if auto_create else "false",
        "log.retention.hours": "24",
        **{k.replace("_", "."): v for k, v in extra.items()},
    }
    return handler_services(props=props, cluster_id="cid", metadata_cache=cache, zk=zk_with_t())


def topics_request(*names: str, auto: bool = True) -> Any:
    return MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
        allow_auto_topic_creation=auto,
    )


async def call(handler: Any, ctx: HandlerServices, request: Req) -> Any:
    return (await handler(family_for(ctx, request.header.api_key), request)).body


async def test_all_topics_with_brokers_on_the_requests_listener() -> None:
    ctx = make_ctx()
    body = await call(metadata.handle, ctx, Req(ApiKey.METADATA, 12, MetadataRequest(topics=None)))
    assert [(b.node_id, b.host, b.port, b.rack) for b in body.brokers] == [(0, "h0", 9092, "r0")]
    assert body.controller_id == 0 and body.cluster_id == "cid"
    (topic,) = body.topics
    assert topic.name == "t" and topic.topic_id == TOPIC_ID and topic.error_code == 0
    p0, p1 = topic.partitions
    assert (p0.error_code, p0.leader_id, p0.leader_epoch) == (ErrorCode.NONE, 0, 3)
    assert p0.replica_nodes == [0, 2] and p0.isr_nodes == [0] and p0.offline_replicas == [2]
    assert (p1.error_code, p1.leader_id) == (ErrorCode.LEADER_NOT_AVAILABLE, -1)
    control = await call(
        metadata.handle, ctx, Req(ApiKey.METADATA, 12, MetadataRequest(topics=None), "CONTROLLER")
    )
    assert sorted(b.node_id for b in control.brokers) == [0, 1]


async def test_an_empty_topic_list_asks_for_nothing() -> None:
    ctx = make_ctx()
    body = await call(metadata.handle, ctx, Req(ApiKey.METADATA, 9, MetadataRequest(topics=[])))
    assert body.topics == [] and len(body.brokers) == 1


async def test_unknown_topics_are_auto_created_when_allowed() -> None:
    ctx = make_ctx()
    body = await call(metadata.handle, ctx, Req(ApiKey.METADATA, 9, topics_request("new", "t")))
    codes = {t.name: t.error_code for t in body.topics}
    assert codes == {"t": ErrorCode.NONE, "new": ErrorCode.LEADER_NOT_AVAILABLE}
    assert created(ctx) == ["new"]


async def test_no_auto_creation_when_the_request_or_the_broker_forbids_it() -> None:
    for ctx, auto in ((make_ctx(), False), (make_ctx(auto_create=False), True)):
        request = Req(ApiKey.METADATA, 9, topics_request("new", auto=auto))
        body = await call(metadata.handle, ctx, request)
        assert [t.error_code for t in body.topics] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        assert created(ctx) == []


async def test_internal_topics_get_their_own_settings_or_none() -> None:
    ctx = make_ctx(minikafka_transactions_enable="false")
    request = Req(ApiKey.METADATA, 9, topics_request("__consumer_offsets", "__transaction_state"))
    body = await call(metadata.handle, ctx, request)
    codes = {t.name: (t.error_code, t.is_internal) for t in body.topics}
    assert codes == {
        # offsets.topic.replication.factor is 3 by default; two brokers are live
        "__consumer_offsets": (ErrorCode.INVALID_REPLICATION_FACTOR, True),
        "__transaction_state": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True),
    }
    assert created(ctx) == []


async def test_the_transaction_topic_is_created_while_transactions_are_offered() -> None:
    ctx = make_ctx(minikafka_transactions_enable="true")
    request = Req(ApiKey.METADATA, 9, topics_request("__transaction_state"))
    body = await call(metadata.handle, ctx, request)
    # transaction.state.log.replication.factor is 3 by default; two brokers are live
    assert body.topics[0].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    ctx = make_ctx(
        minikafka_transactions_enable="true",
        transaction_state_log_replication_factor="1",
        transaction_state_log_num_partitions="5",
    )
    body = await call(metadata.handle, ctx, request)
    assert (body.topics[0].error_code, body.topics[0].is_internal) == (
        ErrorCode.LEADER_NOT_AVAILABLE, True,
    )  # fmt: skip
    assert created(ctx) == ["__transaction_state"]
    assert isinstance(ctx.topics.zk, FakeZk)
    assert len(ctx.topics.zk.topics["__transaction_state"][0].partitions) == 5


async def test_auto_creation_refuses_bad_names() -> None:
    ctx = make_ctx()
    body = await call(metadata.handle, ctx, Req(ApiKey.METADATA, 9, topics_request("bad/name")))
    assert body.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


async def test_topics_by_id_from_v10() -> None:
    ctx = make_ctx()
    unknown = uuid.uuid4()
    request = MetadataRequest(
        topics=[
            MetadataRequest.MetadataRequestTopic(topic_id=TOPIC_ID, name=None),
            MetadataRequest.MetadataRequestTopic(topic_id=unknown, name=None),
        ]
    )
    body = await call(metadata.handle, ctx, Req(ApiKey.METADATA, 12, request))
    assert [(t.name, t.error_code) for t in body.topics] == [
        ("t", ErrorCode.NONE),
        (None, ErrorCode.UNKNOWN_TOPIC_ID),
    ]


async def test_describe_cluster() -> None:
    ctx = make_ctx()
    body = await call(
        describe_cluster.handle, ctx, Req(ApiKey.DESCRIBE_CLUSTER, 1, DescribeClusterRequest())
    )
    assert (body.error_code, body.cluster_id, body.controller_id) == (0, "cid", 0)
    assert [(b.broker_id, b.host, b.port) for b in body.brokers] == [(0, "h0", 9092)]
    kraft = DescribeClusterRequest(endpoint_type=2)
    body = await call(describe_cluster.handle, ctx, Req(ApiKey.DESCRIBE_CLUSTER, 1, kraft))
    assert body.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE


def _resource(kind: int, name: str, keys: list[str] | None = None) -> Any:
    return DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=kind, resource_name=name, configuration_keys=keys
    )


async def test_describe_configs_reads_the_topic_configs_the_broker_shares() -> None:
    ctx = make_ctx()
    request = DescribeConfigsRequest(
        resources=[_resource(describe_configs.TOPIC, "t", ["retention.ms"])]
    )
    await call(describe_configs.handle, ctx, Req(ApiKey.DESCRIBE_CONFIGS, 4, request))
    assert ctx.configs.topic_configs.get("t") == {"retention.ms": "1234"}  # read once, then known
    ctx.configs.topic_configs.set("t", {"retention.ms": "99"})
    body = await call(describe_configs.handle, ctx, Req(ApiKey.DESCRIBE_CONFIGS, 4, request))
    assert body.results[0].configs[0].value == "99"


async def test_describe_configs_topic_broker_and_errors() -> None:
    ctx = make_ctx()
    request = DescribeConfigsRequest(
        resources=[
            _resource(describe_configs.TOPIC, "t", ["retention.ms", "segment.bytes"]),
            _resource(describe_configs.BROKER, "0", ["log.retention.hours", "broker.id"]),
            _resource(describe_configs.TOPIC, "missing"),
            _resource(describe_configs.BROKER, "7"),
        ],
        include_synonyms=True,
    )
    body = await call(describe_configs.handle, ctx, Req(ApiKey.DESCRIBE_CONFIGS, 4, request))
    topic, broker, missing, other = body.results
    entries = {e.name: e for e in topic.configs}
    assert entries["retention.ms"].value == "1234"
    assert entries["retention.ms"].config_source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert entries["retention.ms"].synonyms[0].name == "retention.ms"
    assert entries["segment.bytes"].config_source == ConfigSource.DEFAULT_CONFIG
    by_name = {e.name: e for e in broker.configs}
    assert by_name["log.retention.hours"].value == "24"
    assert by_name["log.retention.hours"].config_source == ConfigSource.STATIC_BROKER_CONFIG
    assert by_name["broker.id"].read_only
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert other.error_code == ErrorCode.INVALID_REQUEST
    every = DescribeConfigsRequest(resources=[_resource(describe_configs.TOPIC, "t")])
    body = await call(describe_configs.handle, ctx, Req(ApiKey.DESCRIBE_CONFIGS, 1, every))
    assert len(body.results[0].configs) > 10


async def test_v0_empty_list_means_every_topic_and_lists_only_live_replicas() -> None:
    ctx = make_ctx()
    body = await call(metadata.handle, ctx, Req(ApiKey.METADATA, 0, MetadataRequest(topics=[])))
    (topic,) = body.topics
    p0, p1 = topic.partitions
    # broker 2 is not live: v0 leaves it out and says the replica is missing
    assert (p0.error_code, p0.leader_id, p0.replica_nodes, p0.isr_nodes) == (
        ErrorCode.REPLICA_NOT_AVAILABLE,
        0,
        [0],
        [0],
    )
    assert (p1.error_code, p1.leader_id) == (ErrorCode.LEADER_NOT_AVAILABLE, -1)
    named = await call(metadata.handle, ctx, Req(ApiKey.METADATA, 0, topics_request("t")))
    assert [t.name for t in named.topics] == ["t"]


async def test_describe_configs_v0_says_whether_each_value_is_a_default() -> None:
    ctx = make_ctx()
    request = DescribeConfigsRequest(
        resources=[_resource(describe_configs.TOPIC, "t", ["retention.ms", "segment.bytes"])]
    )
    body = await call(describe_configs.handle, ctx, Req(ApiKey.DESCRIBE_CONFIGS, 0, request))
    entries = {e.name: e for e in body.results[0].configs}
    assert not entries["retention.ms"].is_default  # the topic's override
    assert entries["segment.bytes"].is_default
