"""__consumer_offsets on a real cluster: the first FindCoordinator creates the topic with
the offsets.topic.* settings, FindCoordinator (v3 one key, v4 a batch) answers the leader
of the group's partition -- partition 0 for a group id whose Java hashCode is
Integer.MIN_VALUE, as Kafka picks it -- and when that leader stops, the coordinator moves
to the partition's new leader, which loads the group's commits from its replica of the log.

One 3-broker cluster for the module, __consumer_offsets with 6 partitions and 3 replicas,
no automatic leader rebalance (leaderships stay where the tests put them). Waits poll
with a deadline; the stopped broker is started again before the test ends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from broker.group.partitioner import partition_for
from protocol import ApiKey, ErrorCode
from protocol.messages import ApiVersionsRequest, FindCoordinatorRequest
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.zk_fixtures import kazoo_session
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(240)

OFFSETS_TOPIC = "__consumer_offsets"
PARTITIONS = 6
#: Java's "polygenelubricants".hashCode() is Integer.MIN_VALUE: Utils.abs makes it 0
MIN_VALUE_GROUP = "polygenelubricants"


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("offsets"),
        3,
        overrides=(
            ("offsets.topic.num.partitions", str(PARTITIONS)),
            ("offsets.topic.replication.factor", "3"),
            ("auto.leader.rebalance.enable", "false"),
            ("group.initial.rebalance.delay.ms", "0"),
        ),
    )


@pytest.fixture(scope="module")
def zk(c: TestCluster) -> Iterator[KazooClient]:
    with kazoo_session(c.zk_connect) as client:
        yield client


def find(c: TestCluster, broker: int, group: str) -> Any:
    """FindCoordinator v3 for ``group``, asked of ``broker``."""
    return c.request(
        broker, ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key=group, key_type=0)
    )


def coordinator(c: TestCluster, broker: int, group: str) -> int:
    """The coordinator ``broker`` names for ``group`` once it names one."""
    body = wait_until(
        lambda: (b := find(c, broker, group)).error_code == ErrorCode.NONE and b,
        timeout=60,
        what=f"a coordinator for {group} from broker {broker}",
        interval=0.2,
    )
    node: int = body.node_id
    assert (body.host, body.port) == ("127.0.0.1", c.layout.client_ports[node])
    return node


def offsets_topic(c: TestCluster, broker: int) -> Any:
    """The offsets topic as ``broker``'s Metadata lists it, once its cache has it."""
    return wait_until(
        lambda: (t := c.metadata(broker, [OFFSETS_TOPIC]).topics[0]).error_code == 0 and t,
        what=f"{OFFSETS_TOPIC} in broker {broker}'s metadata",
        interval=0.1,
    )


def leader_of(c: TestCluster, broker: int, partition: int) -> int:
    leader: int = offsets_topic(c, broker).partitions[partition].leader_id
    return leader


def test_the_first_find_coordinator_creates_the_offsets_topic_with_its_settings(
    c: TestCluster, zk: KazooClient
) -> None:
    group = "orders-service"
    node = coordinator(c, 1, group)
    data, _ = zk.get(f"/brokers/topics/{OFFSETS_TOPIC}")
    assignment = json.loads(data)["partitions"]
    assert len(assignment) == PARTITIONS
    assert all(len(replicas) == 3 for replicas in assignment.values())
    config, _ = zk.get(f"/config/topics/{OFFSETS_TOPIC}")
    assert json.loads(config)["config"] == {
        "cleanup.policy": "compact",
        "segment.bytes": "104857600",
    }
    assert offsets_topic(c, 0).is_internal
    assert node == leader_of(c, 0, partition_for(group, PARTITIONS))


def test_v4_answers_a_batch_and_min_value_lands_on_partition_zero(c: TestCluster) -> None:
    coordinator(c, 0, "warm-up")  # the topic exists and has leaders
    keys = [MIN_VALUE_GROUP, "billing", "shipping"]
    body = c.request(
        2,
        ApiKey.FIND_COORDINATOR,
        4,
        FindCoordinatorRequest(key_type=0, coordinator_keys=keys),
    )
    answers = {a.key: a for a in body.coordinators}
    assert set(answers) == set(keys)
    assert partition_for(MIN_VALUE_GROUP, PARTITIONS) == 0
    for key, answer in answers.items():
        assert answer.error_code == ErrorCode.NONE, key
        assert answer.node_id == leader_of(c, 2, partition_for(key, PARTITIONS)), key
        assert answer.port == c.layout.client_ports[answer.node_id]
    # key type 1 (transactions) is the transaction coordinator's: test_txn_coordinator_cluster


def serves(c: TestCluster, *api_keys: int) -> bool:
    body = c.request(0, ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
        client_software_name="it", client_software_version="1"
    ))  # fmt: skip
    advertised = {a.api_key for a in body.api_keys}
    return all(k in advertised for k in api_keys)


def test_a_leader_move_moves_the_coordinator_and_reloads_the_commits(c: TestCluster) -> None:
    if not serves(c, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH):
        pytest.skip("needs the group protocol's OffsetCommit and OffsetFetch handlers")
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    topic, group = "gstore-moves", "gstore-mover"
    admin = AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=30)
    old = coordinator(c, 0, group)

    def consumer() -> Any:
        return Consumer(
            {
                "bootstrap.servers": c.layout.bootstrap_servers,
                "group.id": group,
                "enable.auto.commit": False,
            }
        )

    # commits from an assign()-mode consumer: generation -1, no membership
    first = consumer()
    try:
        wanted = [TopicPartition(topic, 0, 17), TopicPartition(topic, 1, 42)]
        first.commit(offsets=wanted, asynchronous=False)
        got = first.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=30)
        assert [(tp.partition, tp.offset) for tp in got] == [(0, 17), (1, 42)]
    finally:
        first.close()

    survivor = next(b for b in c.broker_ids if b != old)
    c.local.stop_broker(old)  # a controlled shutdown moves its leaderships away
    try:
        new = wait_until(
            lambda: (n := coordinator(c, survivor, group)) != old and n,
            timeout=60,
            what="the coordinator to move off the stopped broker",
        )
        assert new == leader_of(c, survivor, partition_for(group, PARTITIONS))
        second = consumer()
        try:
            got = second.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], 30)
            assert [(tp.partition, tp.offset) for tp in got] == [(0, 17), (1, 42)]
        finally:
            second.close()
        loaded = c.metric(new, "minikafka_group_committed_offsets")
        assert loaded is not None and loaded >= 2
    finally:
        c.restart(old)
