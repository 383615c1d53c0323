"""The ISR of a real 3-broker cluster, driven by the leader: followers that fetch join
it and acks=all waits for them; followers that stop fetching are dropped by the leader
once they lag replica.lag.time.max.ms (written to ZooKeeper by the leader itself, its leader
epoch unchanged, then shown by every broker's Metadata through the ISR change
notification), after which min.insync.replicas=2 refuses acks=all; restarted followers
catch up and rejoin.

One module-scoped cluster with replica.lag.time.max.ms=1500, so the leader's shrink
comes seconds before ZooKeeper expires the killed followers' sessions. Tests run in file
order and share the topic; each leaves every broker running. Every wait is a poll with a
deadline.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from protocol import ApiKey, ErrorCode
from protocol.messages import CreateTopicsRequest, FetchRequest, ProduceRequest
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.zk_fixtures import kazoo_session
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(240)

TOPIC = "isr-demo"
LAG_MS = 1500


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("isr-cluster"),
        3,
        overrides=(("replica.lag.time.max.ms", str(LAG_MS)),),
    )


@pytest.fixture(scope="module")
def zk(c: TestCluster) -> Iterator[KazooClient]:
    with kazoo_session(c.zk_connect) as client:
        yield client


def zk_state(zk: KazooClient) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{TOPIC}/partitions/0/state")
    state: dict[str, Any] = json.loads(data)
    return state


def metadata_isr(c: TestCluster, broker: int) -> list[int]:
    (topic,) = c.metadata(broker, [TOPIC]).topics
    (partition,) = topic.partitions
    return sorted(partition.isr_nodes)


def produce(c: TestCluster, broker: int, acks: int, value: bytes) -> Any:
    batch = bytes(build_batch([SimpleRecord(None, value, (), int(time.time() * 1000))]))
    body = ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=TOPIC,
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )
    (part,) = c.request(broker, ApiKey.PRODUCE, 7, body).responses[0].partition_responses
    return part


def metric(c: TestCluster, broker: int, name: str) -> float:
    return c.metric(broker, name) or 0.0


def leader_of(c: TestCluster) -> int:
    leader = c.controller()
    assert leader is not None
    return leader


def test_followers_join_the_isr_and_acks_all_waits_for_them(c: TestCluster) -> None:
    leader = wait_until(c.controller, 30, "a controller")
    followers = [b for b in c.broker_ids if b != leader]
    body = CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name=TOPIC, num_partitions=-1, replication_factor=-1,
                assignments=[CreateTopicsRequest.CreatableReplicaAssignment(
                    partition_index=0, broker_ids=[leader, *followers])],
                configs=[CreateTopicsRequest.CreatableTopicConfig(
                    name="min.insync.replicas", value="2")],
            )
        ],
        timeout_ms=20_000,
    )  # fmt: skip
    assert c.request(leader, ApiKey.CREATE_TOPICS, 7, body).topics[0].error_code == 0
    wait_until(lambda: metadata_isr(c, leader) == [0, 1, 2], 30, "the full ISR in Metadata")
    answer = produce(c, leader, -1, b"replicated")
    assert answer.error_code == ErrorCode.NONE and answer.base_offset == 0


def test_fetch_with_a_replica_id_that_is_no_replica_is_refused(c: TestCluster) -> None:
    fetch = FetchRequest(
        replica_id=7,
        max_wait_ms=0,
        min_bytes=1,
        topics=[FetchRequest.FetchTopic(
            topic=TOPIC,
            partitions=[FetchRequest.FetchPartition(partition=0, partition_max_bytes=1 << 20)],
        )],
    )  # fmt: skip
    response = c.request(leader_of(c), ApiKey.FETCH, 12, fetch)
    (part,) = response.responses[0].partitions
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and len(part.records or b"") == 0


def test_leader_shrinks_the_isr_to_itself_when_its_followers_stop(
    c: TestCluster, zk: KazooClient
) -> None:
    leader = leader_of(c)
    followers = [b for b in c.broker_ids if b != leader]
    before = zk_state(zk)
    assert sorted(before["isr"]) == [0, 1, 2] and before["leader"] == leader
    for follower in followers:
        c.local.kill_broker(follower)
    try:
        # an idle partition keeps followers that hold its whole log (nothing to lag
        # behind): appending puts the stopped ones behind
        assert produce(c, leader, 1, b"written after they stopped").error_code == 0
        # the leader writes the state itself: same leader epoch (a controller's change
        # would start a new one), and counted by the leader's metric
        shrunk = wait_until(
            lambda: (s := zk_state(zk))["isr"] == [leader] and s, 20, "the leader's ISR shrink"
        )
        assert shrunk["leader_epoch"] == before["leader_epoch"]
        assert shrunk["leader"] == leader
        # counted once the write's answer reached the leader's loop, which may come after
        # the znode change this test saw
        wait_until(
            lambda: metric(c, leader, "minikafka_isr_shrinks_total") >= 1, 10, "the shrink counted"
        )
        wait_until(lambda: metadata_isr(c, leader) == [leader], 30, "the ISR in Metadata")
        assert metric(c, leader, "minikafka_under_min_isr_partitions") == 1
        assert metric(c, leader, "minikafka_under_replicated_partitions") == 1
        refused = produce(c, leader, -1, b"needs two copies")
        assert refused.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
        assert produce(c, leader, 1, b"one copy is enough").error_code == ErrorCode.NONE
    finally:
        # their sessions must expire before they can register again
        wait_until(
            lambda: not set(followers) & set(c.registered()),
            c.session_timeout_s + 20,
            "the killed brokers' sessions to expire",
        )
        for follower in followers:
            c.restart(follower)


def test_restarted_followers_catch_up_and_rejoin(c: TestCluster, zk: KazooClient) -> None:
    leader = leader_of(c)
    wait_until(lambda: sorted(zk_state(zk)["isr"]) == [0, 1, 2], 30, "the ISR to expand")
    assert metric(c, leader, "minikafka_isr_expands_total") >= 2
    wait_until(lambda: metadata_isr(c, leader) == [0, 1, 2], 30, "the full ISR in Metadata")
    answer = produce(c, leader, -1, b"replicated again")
    assert answer.error_code == ErrorCode.NONE and answer.base_offset == 3
    assert metric(c, leader, "minikafka_under_replicated_partitions") == 0
