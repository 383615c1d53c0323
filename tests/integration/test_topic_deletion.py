"""Deleting topics on a real cluster: three broker processes, a real ZooKeeper, real clients.

A deleted topic must vanish from ZooKeeper (/brokers/topics, /config/topics,
/admin/delete_topics), from every broker's metadata and from every log directory (the
``-delete`` renames included, removed by the delete-logs task), also when a replica's
broker is down while it is deleted (the deletion waits for it) and when the controller
dies (its successor finishes). The module's cluster runs with auto.create.topics.enable
false, so that clients still using a deleted topic see it gone; a one-broker cluster with
the shipped default (true) shows a producer re-creating it. Files of deleted logs go
at once (log.segment.delete.delay.ms 0, and the delete-logs task runs from the start);
the ZooKeeper session is short so that a killed
controller is replaced soon. A consumer group subscribed to a topic that is deleted loses
its commits of it (OffsetFetch stops listing it) while its confluent-kafka consumer polls
on without a crash. Every wait is a poll with a deadline.
"""

from __future__ import annotations

import base64
import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    NewTopic,
)
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic
from kafka.errors import TopicAlreadyExistsError
from kazoo.client import KazooClient

from protocol import ApiKey, ErrorCode
from protocol.messages import FetchRequest, MetadataRequest, OffsetFetchRequest, ProduceRequest
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.group_clients import coordinator
from tests.integration.zk_fixtures import kazoo_session
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(240)

SESSION_TIMEOUT_MS = 4000
OVERRIDES = (
    ("auto.create.topics.enable", "false"),
    ("log.segment.delete.delay.ms", "0"),
    ("log.initial.task.delay.ms", "0"),
    ("zookeeper.session.timeout.ms", str(SESSION_TIMEOUT_MS)),
    ("replica.fetch.wait.max.ms", "200"),
)
#: a deletion that waits for nothing: several controller round trips on a loaded machine
DELETION_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    directory = tmp_path_factory.mktemp("deletion")
    with contextlib.contextmanager(start_cluster)(zookeeper, directory, 3, OVERRIDES) as c:
        yield c


@pytest.fixture(scope="module")
def zk(cluster: TestCluster) -> Iterator[KazooClient]:
    with kazoo_session(cluster.zk_connect) as client:
        yield client


def admin(cluster: TestCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.layout.bootstrap_servers})


def create(cluster: TestCluster, topic: NewTopic) -> None:
    client = admin(cluster)  # referenced until its answer is in
    client.create_topics([topic], operation_timeout=20)[topic.topic].result(timeout=30)


def delete(cluster: TestCluster, topic: str) -> None:
    """DeleteTopics through confluent-kafka's AdminClient; returns once it answered."""
    client = admin(cluster)
    client.delete_topics([topic], operation_timeout=20)[topic].result(timeout=30)


# -- what "gone" means -----------------------------------------------------------------------


def znodes_of(zk: KazooClient, topic: str) -> list[str]:
    paths = (f"/brokers/topics/{topic}", f"/config/topics/{topic}", f"/admin/delete_topics/{topic}")
    return [p for p in paths if zk.exists(p) is not None]


def listed_by(cluster: TestCluster, topic: str) -> list[int]:
    """The brokers whose Metadata (all topics) still lists ``topic``."""
    return [
        i
        for i in cluster.broker_ids
        if cluster.is_running(i) and any(t.name == topic for t in cluster.metadata(i).topics)
    ]


def dirs_of(cluster: TestCluster, topic: str, brokers: list[int] | None = None) -> list[Path]:
    """Log directories of ``topic``'s partitions, live or renamed for deletion."""
    found = []
    for i in cluster.broker_ids if brokers is None else brokers:
        found += [
            d
            for d in cluster.layout.log_dir(i).iterdir()
            if d.is_dir() and d.name.rsplit(".", 1)[0].rsplit("-", 1)[0] == topic
        ]
    return found


def traces(cluster: TestCluster, zk: KazooClient, topic: str) -> dict[str, list[Any]]:
    """Every trace of ``topic`` left; empty lists when it is wholly gone."""
    return {
        "znodes": znodes_of(zk, topic),
        "metadata": listed_by(cluster, topic),
        "dirs": dirs_of(cluster, topic),
    }


def wait_gone(cluster: TestCluster, zk: KazooClient, topic: str) -> None:
    wait_until(
        lambda: not any(traces(cluster, zk, topic).values()),
        timeout=DELETION_TIMEOUT_S,
        what=f"every trace of {topic} to go ({traces(cluster, zk, topic)})",
    )


def produce_some(cluster: TestCluster, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.layout.bootstrap_servers, "acks": "all"})
    for n in range(count):
        producer.produce(topic, value=f"v{n}".encode(), partition=n % 2)
    assert producer.flush(30) == 0


def topic_id(zk: KazooClient, topic: str) -> str:
    data, _ = zk.get(f"/brokers/topics/{topic}")
    return str(json.loads(data)["topic_id"])


def a_non_controller(cluster: TestCluster) -> int:
    controller = wait_until(cluster.controller, what="a controller")
    return next(i for i in cluster.broker_ids if i != controller)


# -- tests -----------------------------------------------------------------------------------


def test_a_deleted_topic_leaves_no_trace_and_its_name_starts_afresh(
    cluster: TestCluster, zk: KazooClient
) -> None:
    topic = "gone"
    create(cluster, NewTopic(topic, 2, 3, config={"retention.ms": "123456"}))
    produce_some(cluster, topic, 20)
    old_id = topic_id(zk, topic)
    assert dirs_of(cluster, topic)

    delete(cluster, topic)
    # answered once the controller's cache dropped it: no client finds it there any more
    controller = wait_until(cluster.controller, what="a controller")
    assert not any(t.name == topic for t in cluster.metadata(controller).topics)
    wait_gone(cluster, zk, topic)

    # the same name again: a new topic, empty, and without the old override
    kp = KafkaAdminClient(bootstrap_servers=cluster.layout.bootstrap_servers)
    try:
        kp.create_topics([KpNewTopic(topic, 2, 3)], timeout_ms=20_000)
    finally:
        kp.close()
    assert topic_id(zk, topic) != old_id
    client = admin(cluster)
    described = client.describe_configs([ConfigResource("topic", topic)])
    (configs,) = [f.result(timeout=30) for f in described.values()]
    assert configs["retention.ms"].value != "123456"
    assert configs["retention.ms"].is_default
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.layout.bootstrap_servers,
            "group.id": "fresh-check",
            "enable.auto.commit": False,
        }
    )
    try:
        for p in (0, 1):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)
            assert (low, high) == (0, 0)
    finally:
        consumer.close()


def test_a_replica_on_a_dead_broker_holds_the_deletion_until_it_returns(
    cluster: TestCluster, zk: KazooClient
) -> None:
    topic = "held"
    create(cluster, NewTopic(topic, 2, 3))
    produce_some(cluster, topic, 10)
    victim = a_non_controller(cluster)
    others = [i for i in cluster.broker_ids if i != victim]
    cluster.local.kill_broker(victim)
    wait_until(
        lambda: all(victim not in {b.node_id for b in cluster.metadata(i).brokers} for i in others),
        what=f"every live broker to see broker {victim} gone",
    )
    try:
        live = [f"127.0.0.1:{cluster.layout.client_ports[i]}" for i in others]
        kp = KafkaAdminClient(bootstrap_servers=live)
        try:
            kp.delete_topics([topic], timeout_ms=20_000)
            # the live brokers delete their replicas; the topic itself waits for the dead one
            wait_until(
                lambda: not dirs_of(cluster, topic, others) and not listed_by(cluster, topic),
                timeout=DELETION_TIMEOUT_S,
                what="the live brokers to delete their replicas",
            )
            # nothing of it has left ZooKeeper: the deletion is still pending
            assert len(znodes_of(zk, topic)) == 3
            assert dirs_of(cluster, topic, [victim])  # the dead broker's files are untouched
            # pending deletion: the name is still taken
            with pytest.raises(TopicAlreadyExistsError):
                kp.create_topics([KpNewTopic(topic, 1, 1)], timeout_ms=10_000)
        finally:
            kp.close()
    finally:
        cluster.restart(victim)
    wait_gone(cluster, zk, topic)


def test_a_deletion_queued_while_the_controller_is_dead_completes_under_the_next(
    cluster: TestCluster, zk: KazooClient
) -> None:
    controller = wait_until(cluster.controller, what="a controller")
    others = [i for i in cluster.broker_ids if i != controller]
    topic = "orphan"
    # replicas only on the brokers that survive, so nothing waits for the dead controller
    create(cluster, NewTopic(topic, 2, replica_assignment=[others, others[::-1]]))
    produce_some(cluster, topic, 10)
    cluster.local.kill_broker(controller)
    try:
        # queued the way Kafka's ZooKeeper-era tools did, while no controller can see it
        zk.create(f"/admin/delete_topics/{topic}", b"", makepath=True)
        wait_until(lambda: cluster.controller() in others, timeout=30, what="a new controller")
        wait_gone(cluster, zk, topic)
    finally:
        cluster.restart(controller)


def test_clients_of_a_deleted_topic_get_errors_and_nothing_crashes(
    cluster: TestCluster, zk: KazooClient
) -> None:
    topic = "stale"
    create(cluster, NewTopic(topic, 2, 2))
    produce_some(cluster, topic, 10)
    old_id = topic_id(zk, topic)
    reader = KafkaConsumer(bootstrap_servers=cluster.layout.bootstrap_servers)
    reader.assign([KpTopicPartition(topic, 0), KpTopicPartition(topic, 1)])
    reader.seek_to_beginning()
    read: list[object] = []

    def read_all() -> bool:
        for records in reader.poll(timeout_ms=200).values():
            read.extend(records)
        return len(read) == 10

    wait_until(read_all, timeout=20, what="the reader to read the ten records")
    delete(cluster, topic)
    wait_gone(cluster, zk, topic)

    for i in cluster.broker_ids:
        produced = cluster.request(i, ApiKey.PRODUCE, 9, produce_body(topic))
        (partition,) = produced.responses[0].partition_responses
        assert partition.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        fetched = cluster.request(i, ApiKey.FETCH, 12, fetch_body(topic))
        assert fetched.responses[0].partitions[0].error_code == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
        by_id = cluster.request(i, ApiKey.METADATA, 12, metadata_by_id(old_id))
        assert by_id.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID

    # a real producer and consumer still pointed at it: errors, not hangs or crashes
    errors: list[KafkaError | None] = []
    producer = Producer(
        {
            "bootstrap.servers": cluster.layout.bootstrap_servers,
            "message.timeout.ms": 3000,
            "topic.metadata.propagation.max.ms": 1000,
        }
    )
    producer.produce(topic, b"late", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(20)
    assert errors and errors[0] is not None
    assert errors[0].code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC)
    # a consumer that was reading it keeps polling: nothing more arrives, nothing raises
    for _ in range(5):
        assert not reader.poll(timeout_ms=200)
    reader.close()
    assert all(cluster.is_running(i) for i in cluster.broker_ids)
    assert not listed_by(cluster, topic)


def committed_topics(cluster: TestCluster, group: str) -> set[str]:
    """The topics of ``group``'s committed offsets, as OffsetFetch v8 (all topics) from
    its coordinator answers."""
    body = OffsetFetchRequest(
        groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)],
        require_stable=False,
    )
    (answer,) = cluster.request(coordinator(cluster, group), ApiKey.OFFSET_FETCH, 8, body).groups
    assert answer.error_code == ErrorCode.NONE, f"OffsetFetch: error {answer.error_code}"
    return {t.name for t in answer.topics}


def test_a_subscribed_group_loses_the_topics_commits_and_its_consumer_carries_on(
    cluster: TestCluster, zk: KazooClient
) -> None:
    topic, group = "subscribed", "readers-of-subscribed"
    create(cluster, NewTopic(topic, 2, 3))
    produce_some(cluster, topic, 10)
    client_errors: list[KafkaError] = []
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.layout.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 1000,
            "error_cb": client_errors.append,
        }
    )
    try:
        consumer.subscribe([topic])
        read: list[bytes] = []

        def read_all() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                read.append(message.value() or b"")
            return len(read) == 10

        wait_until(read_all, timeout=45, what="the group's consumer to read the ten records")
        consumer.commit(asynchronous=False)
        assert committed_topics(cluster, group) == {topic}

        delete(cluster, topic)
        wait_gone(cluster, zk, topic)
        # the coordinator forgot the group's commits of the deleted topic
        wait_until(
            lambda: topic not in committed_topics(cluster, group),
            timeout=DELETION_TIMEOUT_S,
            what=f"OffsetFetch of {group} to stop listing {topic}",
        )
        # the consumer keeps polling a topic that is gone: nothing more arrives, nothing raises
        for _ in range(10):
            message = consumer.poll(0.2)
            assert message is None or message.error() is not None
    finally:
        consumer.close()
    assert all(not e.fatal() for e in client_errors)
    assert all(cluster.is_running(i) for i in cluster.broker_ids)
    for i in cluster.broker_ids:
        assert not any(t.name == topic for t in cluster.metadata(i).topics)
    assert committed_topics(cluster, group) == set()


def produce_body(topic: str) -> ProduceRequest:
    P = ProduceRequest
    batch = bytes(build_batch([SimpleRecord(None, b"x", (), int(time.time() * 1000))]))
    return P(
        transactional_id=None,
        acks=1,
        timeout_ms=5000,
        topic_data=[
            P.TopicProduceData(
                name=topic,
                partition_data=[P.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )


def fetch_body(topic: str) -> FetchRequest:
    F = FetchRequest
    return F(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        topics=[
            F.FetchTopic(
                topic=topic,
                partitions=[
                    F.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)
                ],
            )
        ],
    )


def metadata_by_id(topic_id_b64: str) -> MetadataRequest:
    raw = base64.urlsafe_b64decode(topic_id_b64 + "=" * (-len(topic_id_b64) % 4))
    M = MetadataRequest
    return M(
        topics=[M.MetadataRequestTopic(topic_id=uuid.UUID(bytes=raw), name=None)],
        allow_auto_topic_creation=False,
    )


# -- auto.create.topics.enable true (the shipped default) -----------------------------------


@pytest.fixture(scope="module")
def auto_creating(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    directory = tmp_path_factory.mktemp("deletion-auto-create")
    overrides = (("auto.create.topics.enable", "true"), ("log.segment.delete.delay.ms", "0"))
    with contextlib.contextmanager(start_cluster)(zookeeper, directory, 1, overrides) as c:
        yield c


def test_a_producer_that_keeps_writing_re_creates_the_topic(auto_creating: TestCluster) -> None:
    cluster = auto_creating
    topic = "phoenix"
    producer = Producer(
        {
            "bootstrap.servers": cluster.layout.bootstrap_servers,
            "topic.metadata.refresh.interval.ms": 500,
            "message.timeout.ms": 10_000,
        }
    )
    delivered: list[tuple[KafkaError | None, int | None]] = []

    def send() -> None:
        producer.produce(
            topic, b"v", on_delivery=lambda err, msg: delivered.append((err, msg.offset()))
        )
        producer.flush(15)

    send()
    assert delivered[-1][0] is None
    before = len(delivered)
    with kazoo_session(cluster.zk_connect) as zk:
        first_id = topic_id(zk, topic)
        delete(cluster, topic)

        def re_created() -> bool:
            send()
            found = zk.exists(f"/brokers/topics/{topic}") is not None
            return found and topic_id(zk, topic) != first_id and delivered[-1][0] is None

        wait_until(re_created, timeout=DELETION_TIMEOUT_S, what="the topic to come back")
        # the records written since went to a new log, which starts at offset 0
        assert 0 in [off for err, off in delivered[before:] if err is None]
