"""The classic group protocol end to end, briefly: real consumers subscribe with a group
id on a one-broker cluster, share a topic's partitions, consume every record once and
commit; the commits are read back and DescribeGroups shows the group. (The real-client
group suite is elsewhere; this is the group coordinator's own smoke test.)

One broker for the module, __consumer_offsets with 3 partitions and 1 replica, no initial
rebalance delay. Waits poll with a deadline.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from protocol import ApiKey, ErrorCode
from protocol.messages import DescribeGroupsRequest, FindCoordinatorRequest
from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(180)

PARTITIONS = 4
RECORDS = 40


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("groups"),
        1,
        overrides=(
            ("offsets.topic.num.partitions", "3"),
            ("offsets.topic.replication.factor", "1"),
            ("group.initial.rebalance.delay.ms", "0"),
        ),
    )


def produce(c: TestCluster, topic: str) -> set[bytes]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": c.layout.bootstrap_servers})
    values = {f"v{i}".encode() for i in range(RECORDS)}
    for i, value in enumerate(sorted(values)):
        producer.produce(topic, value, partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return values


def describe(c: TestCluster, group: str) -> Any:
    find = c.request(0, ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key=group, key_type=0))
    assert find.error_code == ErrorCode.NONE
    body = c.request(0, ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[group]))
    return body.groups[0]


def test_two_confluent_consumers_share_a_topic_and_commit(c: TestCluster) -> None:
    from confluent_kafka import Consumer, TopicPartition

    topic, group = "gc-shared", "gc-confluent"
    values = produce(c, topic)
    config = {
        "bootstrap.servers": c.layout.bootstrap_servers,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 10_000,
    }
    consumers = [Consumer(config), Consumer(config)]
    seen: list[bytes] = []
    try:
        for consumer in consumers:
            consumer.subscribe([topic])

        def poll_all() -> bool:
            for consumer in consumers:
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    value = message.value()
                    assert value is not None
                    seen.append(value)
                    consumer.commit(message=message, asynchronous=False)
            return len(seen) >= RECORDS and all(x.assignment() for x in consumers)

        wait_until(poll_all, timeout=90, what="every record consumed by the group")
        assert sorted(seen) == sorted(values)  # each record once
        owned = [{tp.partition for tp in x.assignment()} for x in consumers]
        assert owned[0] and owned[1] and not owned[0] & owned[1]
        assert owned[0] | owned[1] == set(range(PARTITIONS))

        summary = describe(c, group)
        assert summary.group_state == "Stable"
        assert summary.protocol_type == "consumer"
        assert len(summary.members) == 2
        committed = consumers[0].committed(
            [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30
        )
        assert sum(tp.offset for tp in committed) == RECORDS
    finally:
        for consumer in consumers:
            consumer.close()  # LeaveGroup
    empty = wait_until(
        lambda: (s := describe(c, group)).group_state == "Empty" and s,
        timeout=30,
        what="the group empty once both members left",
    )
    assert empty.members == []


def test_kafka_python_consumer_resumes_from_the_groups_commits(c: TestCluster) -> None:
    from kafka import KafkaConsumer

    topic, group = "gc-resume", "gc-kafka-python"
    values = produce(c, topic)

    def consumer() -> Any:
        return KafkaConsumer(
            topic,
            bootstrap_servers=c.layout.bootstrap_servers,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )

    def read(into: list[bytes], source: Any, until: int) -> bool:
        for records in source.poll(timeout_ms=500, max_records=5).values():
            into.extend(r.value for r in records)
        return len(into) >= until

    first = consumer()
    got: list[bytes] = []
    try:
        wait_until(
            lambda: read(got, first, RECORDS // 2),
            timeout=60,
            what="kafka-python to consume half the records through its group",
        )
        first.commit()  # the positions after what poll returned
    finally:
        first.close()
    assert len(got) < RECORDS
    second = consumer()
    try:
        rest: list[bytes] = []
        wait_until(
            lambda: read(rest, second, RECORDS - len(got)),
            timeout=60,
            what="the second consumer to read what the first left",
        )
        assert sorted(got + rest) == sorted(values)  # resumed at the commits: nothing twice
    finally:
        second.close()
