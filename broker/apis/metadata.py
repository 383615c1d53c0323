"""Metadata (3), v0-12: brokers, controller, topics and partition leaders from the cache.

The answer comes from this broker's MetadataCache, for the listener the request came in
on (each broker is listed with its endpoint on that listener). Rules clients rely on:

- ``topics`` null (v1+) means every topic; an empty list means none, except in v0,
  which has no null and where the empty list means every topic.
- A topic the cache does not know is created when ``auto.create.topics.enable`` and the
  request allows it (v4+ ``allow_auto_topic_creation``): the answer is then
  LEADER_NOT_AVAILABLE and the client asks again once the controller has elected leaders.
  Otherwise UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID when asked by id, v10+).
- A partition whose leader is not live has leader -1 and LEADER_NOT_AVAILABLE.
- v10+ carry topic ids, never zero for a topic that exists.
- v0 lists only the replicas and ISR members that are live (with an endpoint on the
  listener), and a partition missing any of them answers REPLICA_NOT_AVAILABLE beside
  its leader; v1+ list every id (offline replicas apart, v5+) with no error.

With the authorizer on (``broker.auth``), as Kafka: asked for every topic, the answer
lists only the topics the principal may DESCRIBE (the others are left out silently);
asked by name, a topic it may not describe answers TOPIC_AUTHORIZATION_FAILED whether it
exists or not; auto-creation needs CREATE on the cluster or on the topic (else
TOPIC_AUTHORIZATION_FAILED). The authorized-operations fields hold what the principal
may do.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Sequence

from broker.admin.topics import (
    NO_NUM_PARTITIONS,
    NO_REPLICATION_FACTOR,
    OFFSETS_TOPIC,
    AdminError,
    create_topic,
    existing_topics,
    offsets_topic_settings,
    plan_topic,
)
from broker.apis.request import ListenerRequest
from broker.apis.services import TopicAdmin
from broker.metadata_cache import MetadataCache
from broker.txn import transactions_enabled
from broker.txn.topic import TRANSACTION_TOPIC, txn_topic_settings
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import MetadataRequest, MetadataResponse
from protocol.primitives import ZERO_UUID
from protocol.values import AUTHORIZED_OPERATIONS_OMITTED, INTERNAL_TOPICS

log = logging.getLogger(__name__)

#: the operations a topic supports: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
#: DESCRIBE_CONFIGS, ALTER_CONFIGS (Kafka's AclOperation codes 3-8, 10, 11)
TOPIC_OPERATIONS = tuple(AclOperation(op) for op in (3, 4, 5, 6, 7, 8, 10, 11))
#: the operations the cluster supports
CLUSTER_OPERATIONS = (
    AclOperation.CREATE,
    AclOperation.CLUSTER_ACTION,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
)
#: with no authorizer every operation is allowed
ALL_TOPIC_OPERATIONS = sum(1 << op for op in TOPIC_OPERATIONS)
DESCRIBE = AclOperation.DESCRIBE

Topic = MetadataResponse.MetadataResponseTopic
Partition = MetadataResponse.MetadataResponsePartition
Broker = MetadataResponse.MetadataResponseBroker


async def handle(ctx: TopicAdmin, request: ListenerRequest[MetadataRequest]) -> Response:
    body = request.body
    version = request.header.api_version
    cache = ctx.metadata_cache
    listener = request.listener.upper()
    ops = (
        ALL_TOPIC_OPERATIONS
        if body.include_topic_authorized_operations
        else AUTHORIZED_OPERATIONS_OMITTED
    )

    access = ctx.broker.access
    secured = access.enabled

    def topic_ops(name: str) -> int:
        if not secured or ops == AUTHORIZED_OPERATIONS_OMITTED:
            return ops
        return access.authorized_operations(request, ResourceType.TOPIC, name, TOPIC_OPERATIONS)

    topics: list[Topic] = []
    if body.topics is None or (version == 0 and not body.topics):
        names = cache.topic_names()
        if secured:
            visible = access.allowed(request, DESCRIBE, ResourceType.TOPIC, names, quiet=True)
            names = [n for n in names if n in visible]
        topics = [topic_metadata(cache, name, listener, topic_ops(name), version) for name in names]
    else:
        unknown: list[str] = []
        for requested in body.topics:
            name = requested.name
            if name is None:  # v10+: asked by topic id
                topic_id = requested.topic_id
                name = cache.topic_name(topic_id) if topic_id != ZERO_UUID else None
                if name is None:
                    topics.append(
                        Topic(
                            error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                            name=None,
                            topic_id=topic_id,
                            topic_authorized_operations=ops,
                        )
                    )
                    continue
            if secured and not access.authorize(request, DESCRIBE, ResourceType.TOPIC, name):
                topics.append(denied_topic(name, requested.topic_id, ops))
            elif cache.contains_topic(name):
                topics.append(topic_metadata(cache, name, listener, topic_ops(name), version))
            else:
                unknown.append(name)
        creating = body.allow_auto_topic_creation and ctx.config.get_bool(
            "auto.create.topics.enable"
        )
        if unknown and creating and secured:
            may_create = access.authorize(
                request, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME, quiet=True
            )
            refused = [
                n
                for n in unknown
                if not (
                    may_create
                    or access.authorize(request, AclOperation.CREATE, ResourceType.TOPIC, n)
                )
            ]
            topics.extend(denied_topic(n, ZERO_UUID, ops) for n in refused)
            unknown = [n for n in unknown if n not in refused]
        if unknown:
            if creating:
                topics.extend(await auto_create(ctx, unknown, ops))
            else:
                topics.extend(
                    Topic(
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        name=name,
                        topic_authorized_operations=ops,
                    )
                    for name in unknown
                )

    brokers = []
    for broker in cache.alive_brokers():
        endpoint = broker.endpoint(listener)
        if endpoint is not None:
            brokers.append(
                Broker(node_id=broker.id, host=endpoint[0], port=endpoint[1], rack=broker.rack)
            )
    controller_id = cache.controller_id
    response = MetadataResponse(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=ctx.cluster_id,
        controller_id=-1 if controller_id is None else controller_id,
        topics=topics,
    )
    if version <= 10 and body.include_cluster_authorized_operations:
        # without an authorizer Kafka reports none (the field is not filled in)
        response.cluster_authorized_operations = (
            access.authorized_operations(
                request, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS
            )
            if secured
            else 0
        )
    return make_response(request.header, response)


def denied_topic(name: str, topic_id: uuid.UUID, ops: int) -> Topic:
    """A topic the principal may not see: no partitions, nothing that tells whether it
    exists."""
    return Topic(
        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        name=name,
        topic_id=topic_id,
        is_internal=False,
        partitions=[],
        topic_authorized_operations=ops,
    )


def topic_metadata(cache: MetadataCache, name: str, listener: str, ops: int, version: int) -> Topic:
    partitions = []

    def live(brokers: Sequence[int]) -> list[int]:
        if version > 0:
            return list(brokers)
        return [b for b in brokers if cache.alive_endpoint(b, listener) is not None]

    for index, info in sorted((cache.partitions(name) or {}).items()):
        leader_ok = info.leader >= 0 and cache.alive_endpoint(info.leader, listener) is not None
        replicas, isr = live(info.replicas), live(info.isr)
        error = ErrorCode.NONE if leader_ok else ErrorCode.LEADER_NOT_AVAILABLE
        if error == ErrorCode.NONE and (len(replicas), len(isr)) != (
            len(info.replicas),
            len(info.isr),
        ):
            error = ErrorCode.REPLICA_NOT_AVAILABLE
        partitions.append(
            Partition(
                error_code=error,
                partition_index=index,
                leader_id=info.leader if leader_ok else -1,
                leader_epoch=info.leader_epoch,
                replica_nodes=replicas,
                isr_nodes=isr,
                offline_replicas=list(info.offline_replicas),
            )
        )
    return Topic(
        error_code=ErrorCode.NONE,
        name=name,
        topic_id=cache.topic_id(name),
        is_internal=name in INTERNAL_TOPICS,
        partitions=partitions,
        topic_authorized_operations=ops,
    )


async def auto_create(ctx: TopicAdmin, names: list[str], ops: int) -> list[Topic]:
    """Create each unknown topic with the broker defaults (Kafka's auto.create.topics);
    __consumer_offsets with its own settings, __transaction_state too while transactions
    are offered (``minikafka.transactions.enable``: never otherwise)."""
    results = []
    try:
        existing = set(await existing_topics(ctx.zk))
    except Exception as exc:  # ZooKeeper trouble must not fail the whole Metadata request
        log.warning("auto-create: listing topics failed: %s", exc)
        existing = None
    for name in names:
        error = ErrorCode.LEADER_NOT_AVAILABLE
        partitions, factor = NO_NUM_PARTITIONS, NO_REPLICATION_FACTOR
        configs: dict[str, str] = {}
        if name == OFFSETS_TOPIC:
            partitions, factor, configs = offsets_topic_settings(ctx.config)
        elif name == TRANSACTION_TOPIC and transactions_enabled(ctx.config):
            partitions, factor, configs = txn_topic_settings(ctx.config)
        elif name in INTERNAL_TOPICS:
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        creatable = error == ErrorCode.LEADER_NOT_AVAILABLE
        if creatable and existing is not None and name not in existing:
            try:
                plan = plan_topic(
                    name,
                    partitions,
                    factor,
                    {},
                    configs,
                    live_brokers=ctx.metadata_cache.alive_broker_ids(),
                    existing_topics=existing,
                    default_partitions=ctx.config.get_int("num.partitions"),
                    default_replication_factor=ctx.config.get_int("default.replication.factor"),
                    rng=random.Random(),
                )
                await create_topic(ctx.zk, plan)
                existing.add(name)
                log.info("auto-created topic %s with %d partitions", name, plan.num_partitions)
            except AdminError as exc:
                if exc.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    error = ErrorCode(exc.error_code)
            except Exception as exc:  # a failed write leaves the client to retry
                log.warning("auto-creating topic %s failed: %s", name, exc)
        results.append(
            Topic(
                error_code=error,
                name=name,
                topic_id=uuid.UUID(int=0),
                is_internal=name in INTERNAL_TOPICS,
                topic_authorized_operations=ops,
            )
        )
    return results
