"""The authorizer in force on a real two-broker cluster, with Kafka's clients over
SASL/PLAIN: what a user may do follows its ACLs, with Kafka's error codes.

- alice may write one topic: she cannot read it, cannot write another, cannot create or
  delete topics;
- a prefixed ACL covers a topic created after it;
- a DENY overrides an ALLOW;
- the super user ``admin`` needs no ACL;
- a consumer group needs READ on the group and on its topics;
- Metadata lists only the topics a user may describe;
- a denial is logged on kafka.authorizer.logger and counted per API and resource type;
- followers (on the brokers' own, super-user principal) keep replicating meanwhile;
- CreateTopics answers a topic's configs only to who may DESCRIBE_CONFIGS it (KIP-525);
- OffsetFetch v0 (offsets in ZooKeeper) needs DESCRIBE on the group and on each topic.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
)
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType
from confluent_kafka.cimpl import NewTopic
from kafka import KafkaConsumer
from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

from client.client import KafkaClient
from protocol import ApiKey, ErrorCode
from protocol.messages import (
    CreateTopicsRequest,
    DescribeAclsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from tests.integration.acl_cluster import AclCluster, start_acl_cluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(120)

WRITABLE = "authz-writable"
OTHER = "authz-other"


def acl(
    rtype: ResourceType,
    name: str,
    principal: str,
    op: AclOperation,
    perm: AclPermissionType = AclPermissionType.ALLOW,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, "*", op, perm)


@pytest.fixture(scope="module")
def c(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    for cluster in start_acl_cluster(zookeeper, tmp_path_factory.mktemp("authz")):
        root = AdminClient(cluster.librdkafka("admin"))
        for future in root.create_topics([NewTopic(t, 2, 2) for t in (WRITABLE, OTHER)]).values():
            future.result(timeout=30)
        grant(cluster, [acl(ResourceType.TOPIC, WRITABLE, "User:alice", AclOperation.WRITE)])
        yield cluster


def grant(c: AclCluster, bindings: list[AclBinding]) -> None:
    root = AdminClient(c.librdkafka("admin"))
    for future in root.create_acls(bindings).values():
        assert future.result(timeout=15) is None
    # in force on both brokers: each answers DescribeAcls from its own cache (asked on its
    # PLAINTEXT listener, whose principal is a super user here)
    for b in bindings:
        request = DescribeAclsRequest(
            resource_type_filter=wire(b.restype),
            resource_name_filter=b.name,
            pattern_type_filter=wire(b.resource_pattern_type),
            principal_filter=b.principal,
            host_filter=b.host,
            operation=wire(b.operation),
            permission_type=wire(b.permission_type),
        )
        for broker in c.broker_ids:

            def applied(broker: int = broker, request: DescribeAclsRequest = request) -> bool:
                answer = c.request(broker, ApiKey.DESCRIBE_ACLS, 1, request)
                return len(answer.resources) == 1

            wait_until(applied, timeout=3.0, what=f"broker {broker} applies {b}")


def wire(value: Any) -> int:
    """A confluent-kafka enum's Kafka code (they share Kafka's numbering)."""
    return int(value.value)


def produce(c: AclCluster, user: str, topic: str) -> KafkaError | None:
    """Deliver one record as ``user``; the delivery error (None: delivered)."""
    producer = Producer({**c.librdkafka(user), "message.timeout.ms": 8000, "retries": 0})
    outcome: list[KafkaError | None] = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(15)
    assert outcome, "no delivery report"
    return outcome[0]


def code(error: KafkaError | None) -> int | None:
    return None if error is None else error.code()


def test_a_writer_of_one_topic(c: AclCluster) -> None:
    assert produce(c, "alice", WRITABLE) is None
    assert code(produce(c, "alice", OTHER)) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    consumer = KafkaConsumer(
        WRITABLE,
        **c.kafka_python("alice"),
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            consumer.poll(timeout_ms=5000)
            consumer.poll(timeout_ms=5000)
    finally:
        consumer.close()
    admin = AdminClient(c.librdkafka("alice"))
    (created,) = admin.create_topics([NewTopic("alices-new", 1, 1)]).values()
    with pytest.raises(KafkaException) as refused:
        created.result(timeout=15)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    (deleted,) = admin.delete_topics([WRITABLE]).values()
    with pytest.raises(KafkaException) as refused:
        deleted.result(timeout=15)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # the topic is still there
    assert WRITABLE in AdminClient(c.librdkafka("admin")).list_topics(timeout=10).topics


def test_metadata_lists_only_describable_topics(c: AclCluster) -> None:
    listed = AdminClient(c.librdkafka("alice")).list_topics(timeout=10).topics
    assert WRITABLE in listed
    assert OTHER not in listed
    everything = AdminClient(c.librdkafka("admin")).list_topics(timeout=10).topics
    assert {WRITABLE, OTHER} <= set(everything)


def test_a_prefixed_acl_covers_a_new_topic(c: AclCluster) -> None:
    prefix = f"bobs-{uuid.uuid4().hex[:6]}-"
    grant(
        c,
        [
            acl(
                ResourceType.TOPIC,
                prefix,
                "User:bob",
                AclOperation.ALL,
                pattern=ResourcePatternType.PREFIXED,
            )
        ],
    )
    admin = AdminClient(c.librdkafka("bob"))
    (created,) = admin.create_topics([NewTopic(prefix + "later", 1, 1)]).values()
    assert created.result(timeout=30) is None
    wait_until(
        lambda: produce(c, "bob", prefix + "later") is None,
        timeout=15,
        what="bob writes his new topic",
    )
    assert code(produce(c, "bob", OTHER)) == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_deny_overrides_allow_and_super_users_bypass(c: AclCluster) -> None:
    topic = f"denied-{uuid.uuid4().hex[:6]}"
    AdminClient(c.librdkafka("admin")).create_topics([NewTopic(topic, 1, 1)])
    wait_until(lambda: produce(c, "admin", topic) is None, timeout=15, what="topic ready")
    grant(
        c,
        [
            acl(ResourceType.TOPIC, "*", "User:carol", AclOperation.WRITE),
            acl(
                ResourceType.TOPIC, topic, "User:carol", AclOperation.WRITE, AclPermissionType.DENY
            ),
            acl(ResourceType.TOPIC, topic, "User:*", AclOperation.ALL, AclPermissionType.DENY),
        ],
    )
    assert code(produce(c, "carol", topic)) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce(c, "carol", WRITABLE) is None
    # the super user passes the deny on User:*
    assert produce(c, "admin", topic) is None


def consume_one(c: AclCluster, user: str, topic: str, group: str) -> KafkaError | bytes:
    consumer = Consumer(
        {
            **c.librdkafka(user),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                return error
            consumer.commit(message=msg, asynchronous=False)
            return msg.value() or b""
        raise AssertionError("nothing consumed")
    finally:
        consumer.close()


def test_a_consumer_group_needs_read_on_the_group_and_the_topic(c: AclCluster) -> None:
    group = f"g-{uuid.uuid4().hex[:6]}"
    assert produce(c, "admin", WRITABLE) is None
    grant(c, [acl(ResourceType.TOPIC, WRITABLE, "User:bob", AclOperation.READ)])
    refused = consume_one(c, "bob", WRITABLE, group)
    assert isinstance(refused, KafkaError)
    assert refused.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    grant(c, [acl(ResourceType.GROUP, group, "User:bob", AclOperation.READ)])
    assert consume_one(c, "bob", WRITABLE, group) == b"v"
    # READ on the group alone is not enough for another topic
    other_group = f"g-{uuid.uuid4().hex[:6]}"
    grant(c, [acl(ResourceType.GROUP, other_group, "User:carol", AclOperation.READ)])
    consumer = KafkaConsumer(
        OTHER,
        **c.kafka_python("carol"),
        group_id=other_group,
        auto_offset_reset="earliest",
    )
    try:
        with pytest.raises((TopicAuthorizationFailedError, GroupAuthorizationFailedError)):
            for _ in range(5):
                consumer.poll(timeout_ms=2000)
    finally:
        consumer.close()


def test_denials_are_logged_and_counted_and_followers_keep_up(c: AclCluster) -> None:
    # bob may read (so describe) OTHER, not write it: the Produce itself is refused
    grant(c, [acl(ResourceType.TOPIC, OTHER, "User:bob", AclOperation.READ)])
    assert code(produce(c, "bob", OTHER)) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    logged = "\n".join(c.log_text(i) for i in c.broker_ids)
    assert "Principal = User:bob is Denied Operation = Write from host = 127.0.0.1" in logged
    assert f"on resource = Topic:LITERAL:{OTHER} for request = Produce" in logged
    counts = [
        c.metric(i, 'minikafka_authorization_denials_total{api="Produce",resource_type="topic"}')
        for i in c.broker_ids
    ]
    assert sum(n or 0 for n in counts) >= 1
    # both replicas of every partition in sync: the followers' fetches were authorized
    metadata = c.metadata(0, [WRITABLE, OTHER])
    for topic in metadata.topics:
        for partition in topic.partitions:
            assert sorted(partition.isr_nodes) == [0, 1], (topic.name, partition)


def test_metadata_reports_what_a_user_may_do(c: AclCluster) -> None:
    """Metadata v8+'s authorized-operations fields hold alice's rights: WRITE (and the
    DESCRIBE it implies) on her topic, nothing on the cluster."""

    async def ask() -> Any:
        async with KafkaClient(c.sasl_bootstrap, c.client_config("alice")) as client:
            body = MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=WRITABLE)],
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=True,
                include_topic_authorized_operations=True,
            )
            return await client.request(None, ApiKey.METADATA, body, version=10)

    answer = asyncio.run(ask())
    (topic,) = answer.topics
    assert topic.topic_authorized_operations == (1 << AclOperation.WRITE.value) | (
        1 << AclOperation.DESCRIBE.value
    )
    assert answer.cluster_authorized_operations == 0


def test_idempotent_and_transactional_producers(c: AclCluster) -> None:
    """KIP-679: WRITE on a topic lets alice's idempotent producer get a producer id; a
    transactional id needs WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED before)."""
    idempotent = Producer({**c.librdkafka("alice"), "enable.idempotence": True})
    delivered: list[KafkaError | None] = []
    idempotent.produce(WRITABLE, b"i", on_delivery=lambda err, msg: delivered.append(err))
    idempotent.flush(20)
    assert delivered == [None]
    tx_id = f"tx-{uuid.uuid4().hex[:6]}"
    config = {**c.librdkafka("alice"), "transactional.id": tx_id, "transaction.timeout.ms": 10000}
    refused = Producer(config)
    with pytest.raises(KafkaException) as failure:
        refused.init_transactions(20)
    assert failure.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(c, [acl(ResourceType.TRANSACTIONAL_ID, tx_id, "User:alice", AclOperation.WRITE)])
    producer = Producer(config)
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(WRITABLE, b"t")
    producer.commit_transaction(30)


def test_create_topics_shows_configs_only_to_who_may_describe_them(c: AclCluster) -> None:
    """KIP-525: alice may create both topics but read the configs of one only; the other
    is created all the same, answered without configs and with a config error."""
    prefix = f"kip525-{uuid.uuid4().hex[:6]}"
    seen, hidden = f"{prefix}-seen", f"{prefix}-hidden"
    grant(
        c,
        [
            acl(ResourceType.TOPIC, seen, "User:alice", AclOperation.CREATE),
            acl(ResourceType.TOPIC, seen, "User:alice", AclOperation.DESCRIBE_CONFIGS),
            acl(ResourceType.TOPIC, hidden, "User:alice", AclOperation.CREATE),
        ],
    )
    Creatable = CreateTopicsRequest.CreatableTopic
    body = CreateTopicsRequest(
        topics=[Creatable(name=n, num_partitions=1, replication_factor=2) for n in (seen, hidden)],
        timeout_ms=20_000,
    )

    async def create() -> Any:
        async with KafkaClient(c.sasl_bootstrap, c.client_config("alice")) as client:
            deadline = time.monotonic() + 20
            while True:  # to the controller, which may have moved since the metadata
                view = await client.refresh_metadata([])
                answer = await client.request(
                    view.controller_id, ApiKey.CREATE_TOPICS, body, version=7
                )
                codes = {t.error_code for t in answer.topics}
                if codes != {ErrorCode.NOT_CONTROLLER} or time.monotonic() > deadline:
                    return answer

    results = {t.name: t for t in asyncio.run(create()).topics}
    assert results[seen].error_code == ErrorCode.NONE
    assert results[seen].topic_config_error_code == ErrorCode.NONE
    assert (results[seen].num_partitions, results[seen].replication_factor) == (1, 2)
    assert any(e.name == "cleanup.policy" for e in results[seen].configs)
    assert results[hidden].error_code == ErrorCode.NONE
    assert results[hidden].topic_config_error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert (results[hidden].num_partitions, results[hidden].configs) == (-1, [])
    assert {seen, hidden} <= set(AdminClient(c.librdkafka("admin")).list_topics(timeout=10).topics)


def test_offset_fetch_v0_is_authorized(c: AclCluster) -> None:
    """OffsetFetch v0 reads ZooKeeper, not the coordinator, under the same ACLs: DESCRIBE
    on the group, then on each topic (alice describes WRITABLE, her topic, not OTHER)."""
    group = f"zk-{uuid.uuid4().hex[:6]}"
    Commit = OffsetCommitRequest
    commit = Commit(
        group_id=group,
        topics=[
            Commit.OffsetCommitRequestTopic(
                name=name,
                partitions=[
                    Commit.OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=7, committed_metadata=""
                    )
                ],
            )
            for name in (WRITABLE, OTHER)
        ],
    )
    stored = c.request(0, ApiKey.OFFSET_COMMIT, 0, commit)  # PLAINTEXT: a super user
    assert {p.error_code for t in stored.topics for p in t.partitions} == {ErrorCode.NONE}
    Topic = OffsetFetchRequest.OffsetFetchRequestTopic
    fetch = OffsetFetchRequest(
        group_id=group,
        topics=[Topic(name=name, partition_indexes=[0]) for name in (WRITABLE, OTHER)],
    )

    async def fetch_as_alice() -> dict[str, tuple[int, int]]:
        async with KafkaClient(c.sasl_bootstrap, c.client_config("alice")) as client:
            answer = await client.request(None, ApiKey.OFFSET_FETCH, fetch, version=0)
        return {
            t.name: (p.committed_offset, p.error_code) for t in answer.topics for p in t.partitions
        }

    assert asyncio.run(fetch_as_alice()) == dict.fromkeys(
        (WRITABLE, OTHER), (-1, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    )
    grant(c, [acl(ResourceType.GROUP, group, "User:alice", AclOperation.DESCRIBE)])
    assert asyncio.run(fetch_as_alice()) == {
        WRITABLE: (7, ErrorCode.NONE),
        OTHER: (-1, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    }
