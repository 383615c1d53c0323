"""A 3-broker cluster of real processes and a real ZooKeeper: election, topic creation,
failover, recovery, fencing and graceful shutdown.

One cluster is shared by the module (tests.integration.cluster.cluster3). Tests run in
file order and each leaves all three brokers running. Requests go over TCP with our own
protocol package. Every wait is a poll with a deadline.
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import time
import uuid
from typing import Any

import pytest

from protocol import ApiKey, ErrorCode
from protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DescribeClusterRequest,
    FetchRequest,
    ListOffsetsRequest,
    ProduceRequest,
)
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from tests.integration.cluster import TICK_MS, TestCluster
from tests.polling import wait_until

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def c(cluster3: TestCluster) -> TestCluster:
    """The module's shared cluster; each test leaves its three brokers running."""
    return cluster3


def create_topic(
    c: TestCluster, name: str, partitions: int, rf: int, *, broker: int | None = None,
    version: int = 7,
) -> Any:  # fmt: skip
    topic = CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf
    )
    body = CreateTopicsRequest(topics=[topic], timeout_ms=20_000, validate_only=False)
    target = c.controller() if broker is None else broker
    assert target is not None
    return c.request(target, ApiKey.CREATE_TOPICS, version, body).topics[0]


def all_caches_agree(c: TestCluster, brokers: int = 3) -> int | None:
    """The controller id when every broker's Metadata lists all brokers and names the
    controller that ZooKeeper names."""
    controller = c.controller()
    for i in c.broker_ids:
        md = c.metadata(i)
        if len(md.brokers) != brokers or md.controller_id != controller:
            raise AssertionError(
                f"broker {i} sees brokers {[b.node_id for b in md.brokers]} and controller "
                f"{md.controller_id}; ZooKeeper names {controller}"
            )
    return controller


def leaders(c: TestCluster, i: int, topic: str) -> dict[int, int]:
    (t,) = c.metadata(i, [topic]).topics
    return {p.partition_index: p.leader_id for p in t.partitions}


def test_three_brokers_elect_exactly_one_controller(c: TestCluster) -> None:
    assert c.registered() == [0, 1, 2]
    controller = wait_until(lambda: all_caches_agree(c), 30, "metadata on every broker")
    assert controller in (0, 1, 2)
    active = [c.metric(i, "minikafka_controller_active") for i in c.broker_ids]
    assert active.count(1.0) == 1 and active.index(1.0) == controller
    md = c.metadata(0, version=1)  # the oldest version admin clients use still names it
    assert md.controller_id == controller
    described = c.request(1, ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest())
    assert described.controller_id == controller
    assert sorted(b.broker_id for b in described.brokers) == [0, 1, 2]
    assert len({c.metadata(i).cluster_id for i in c.broker_ids}) == 1


def test_create_topics_reaches_every_brokers_metadata(c: TestCluster) -> None:
    controller = wait_until(lambda: all_caches_agree(c), 30, "metadata on every broker")
    other = next(i for i in c.broker_ids if i != controller)
    refused = create_topic(c, "orders", 6, 2, broker=other)
    assert refused.error_code == ErrorCode.NOT_CONTROLLER

    result = create_topic(c, "orders", 6, 2)
    assert result.error_code == ErrorCode.NONE, result.error_message
    assert result.topic_id != uuid.UUID(int=0)
    assert (result.num_partitions, result.replication_factor) == (6, 2)
    # the response waited for every live broker's cache: no polling needed here
    for i in c.broker_ids:
        (topic,) = c.metadata(i, ["orders"]).topics
        assert topic.error_code == ErrorCode.NONE
        assert topic.topic_id == result.topic_id
        assert len(topic.partitions) == 6
        for p in topic.partitions:
            assert p.error_code == ErrorCode.NONE
            assert p.leader_id in p.replica_nodes and len(p.replica_nodes) == 2
            assert p.leader_id in (0, 1, 2)
    # leaders are spread: every broker leads two of the six partitions
    led = list(leaders(c, 0, "orders").values())
    assert sorted(led.count(b) for b in (0, 1, 2)) == [2, 2, 2]

    again = create_topic(c, "orders", 1, 1)
    assert again.error_code == ErrorCode.TOPIC_ALREADY_EXISTS

    grow = CreatePartitionsRequest(
        topics=[CreatePartitionsRequest.CreatePartitionsTopic(name="orders", count=8)],
        timeout_ms=20_000,
        validate_only=False,
    )
    assert controller is not None
    (grown,) = c.request(controller, ApiKey.CREATE_PARTITIONS, 3, grow).results
    assert grown.error_code == ErrorCode.NONE, grown.error_message
    for i in c.broker_ids:  # the response waited for every cache here too
        assert sorted(leaders(c, i, "orders")) == list(range(8))
        assert all(leader >= 0 for leader in leaders(c, i, "orders").values())
    old_version = create_topic(c, "orders-v4", 2, 3, version=4)
    assert old_version.error_code == ErrorCode.NONE


def test_confluent_admin_client_creates_and_describes(c: TestCluster) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # type: ignore[attr-defined]

    controller = wait_until(lambda: all_caches_agree(c), 30, "metadata on every broker")
    admin = AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic("admin-made", num_partitions=4, replication_factor=3,
                  config={"retention.ms": "3600000"})],
        request_timeout=30,
    )  # fmt: skip
    futures["admin-made"].result(timeout=60)
    metadata = admin.list_topics(timeout=30)
    assert metadata.controller_id == controller
    assert sorted(metadata.brokers) == [0, 1, 2]
    partitions = metadata.topics["admin-made"].partitions
    assert sorted(partitions) == [0, 1, 2, 3]
    assert all(len(p.replicas) == 3 and p.leader in (0, 1, 2) for p in partitions.values())
    described = admin.describe_configs([ConfigResource("topic", "admin-made")])
    (config,) = [f.result(timeout=30) for f in described.values()]
    assert config["retention.ms"].value == "3600000"
    cluster = admin.describe_cluster(request_timeout=30).result(timeout=60)
    assert cluster.controller.id == controller and len(cluster.nodes) == 3
    again = admin.create_topics([NewTopic("admin-made", 1, 1)], request_timeout=30)
    with pytest.raises(Exception, match=r"TOPIC_ALREADY_EXISTS|already exists"):
        again["admin-made"].result(timeout=60)


def test_kill_controller_fails_over_with_a_higher_epoch(c: TestCluster) -> None:
    old = wait_until(lambda: all_caches_agree(c), 30, "metadata on every broker")
    assert old is not None
    epoch = c.controller_epoch()
    budget = c.session_timeout_s + TICK_MS / 1000 + 1.0
    c.local.kill_broker(old)
    wait_until(
        lambda: c.controller() not in (None, old),
        budget,
        "a new controller within session timeout + tickTime + 1 s",
    )
    new = c.controller()
    assert new != old
    assert c.controller_epoch() > epoch
    c.restart(old)
    wait_until(lambda: all_caches_agree(c) == new, 30, "every cache to see the restarted broker")


def _produce(c: TestCluster, broker: int, topic: str, partition: int, values: list[bytes]) -> int:
    batch = bytes(build_batch([SimpleRecord(None, v, (), int(time.time() * 1000)) for v in values]))
    body = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=partition, records=batch)
                ],
            )
        ],
    )
    response = c.request(broker, ApiKey.PRODUCE, 7, body)
    (part,) = response.responses[0].partition_responses
    assert part.error_code == ErrorCode.NONE
    return int(part.base_offset)


def _log_end(c: TestCluster, broker: int, topic: str, partition: int) -> tuple[int, int]:
    body = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(
                        partition_index=partition, current_leader_epoch=-1, timestamp=-1
                    )
                ],
            )
        ],
    )
    (part,) = c.request(broker, ApiKey.LIST_OFFSETS, 5, body).topics[0].partitions
    return int(part.error_code), int(part.offset)


def test_killed_broker_recovers_and_serves_its_partitions(c: TestCluster) -> None:
    controller = wait_until(lambda: all_caches_agree(c), 30, "metadata on every broker")
    result = create_topic(c, "rf1", 3, 1)
    assert result.error_code == ErrorCode.NONE
    placement = leaders(c, 0, "rf1")
    victim = next(b for b in c.broker_ids if b != controller)
    partition = next(p for p, leader in placement.items() if leader == victim)
    assert _produce(c, victim, "rf1", partition, [b"a", b"b", b"c"]) == 0
    assert _produce(c, victim, "rf1", partition, [b"d", b"e"]) == 3

    c.local.kill_broker(victim)
    watcher = next(b for b in c.broker_ids if b != victim)
    wait_until(
        lambda: leaders(c, watcher, "rf1")[partition] == -1,
        c.session_timeout_s + 10,
        "the partition to go offline (its only replica is dead)",
    )
    c.restart(victim)
    wait_until(
        lambda: leaders(c, watcher, "rf1")[partition] == victim,
        30,
        "the restarted broker to lead its partition again",
    )
    assert "recover" in c.log_text(victim).lower()
    # the controller sent the restarted broker the whole cluster's metadata
    known = wait_until(lambda: {t.name for t in c.metadata(victim).topics}, 30, "a full cache")
    assert {"orders", "orders-v4", "rf1"} <= known
    assert _log_end(c, victim, "rf1", partition) == (ErrorCode.NONE, 5)
    assert _produce(c, victim, "rf1", partition, [b"f"]) == 5
    wait_until(lambda: all_caches_agree(c), 30, "metadata on every broker")


def test_paused_controller_is_fenced_and_resigns(c: TestCluster) -> None:
    old = wait_until(lambda: all_caches_agree(c), 30, "metadata on every broker")
    assert old is not None
    epoch = c.controller_epoch()
    os.kill(c.pid(old), signal.SIGSTOP)
    try:
        wait_until(
            lambda: c.controller() not in (None, old),
            c.session_timeout_s + 10,
            "another controller while the old one is paused",
        )
        new = c.controller()
        new_epoch = c.controller_epoch()
        assert new_epoch > epoch
    finally:
        os.kill(c.pid(old), signal.SIGCONT)
    # resumed: it finds its session expired, stops acting as controller and registers again
    wait_until(
        lambda: c.metric(old, "minikafka_controller_active") == 0.0,
        30,
        "the resumed broker to give up the controller role",
    )
    wait_until(lambda: old in c.registered(), 30, "the resumed broker to register again")
    assert c.controller() == new
    assert c.controller_epoch() == new_epoch  # the zombie wrote nothing that bumped it
    active = [c.metric(i, "minikafka_controller_active") for i in c.broker_ids]
    assert active.count(1.0) == 1
    assert "resign" in c.log_text(old).lower()
    wait_until(lambda: all_caches_agree(c) == new, 30, "every cache to agree again")


def test_sigterm_answers_a_waiting_long_poll_before_the_broker_goes(c: TestCluster) -> None:
    controller = wait_until(lambda: all_caches_agree(c), 30, "metadata on every broker")
    victim = next(b for b in c.broker_ids if b != controller)
    body = CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name="long-poll-at-shutdown", num_partitions=-1, replication_factor=-1,
                assignments=[CreateTopicsRequest.CreatableReplicaAssignment(
                    partition_index=0, broker_ids=[victim])],
            )
        ],
        timeout_ms=20_000,
    )  # fmt: skip
    assert c.request(controller, ApiKey.CREATE_TOPICS, 7, body).topics[0].error_code == 0
    fetch = FetchRequest(
        max_wait_ms=120_000,  # far longer than any shutdown: only the broker can end it
        min_bytes=1,
        topics=[FetchRequest.FetchTopic(
            topic="long-poll-at-shutdown",
            partitions=[FetchRequest.FetchPartition(partition=0, partition_max_bytes=1 << 20)],
        )],
    )  # fmt: skip
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = pool.submit(c.request, victim, ApiKey.FETCH, 12, fetch, 150)
        wait_until(
            lambda: (c.metric(victim, 'minikafka_purgatory_size{purgatory="Fetch"}') or 0) > 0
            or answer.done(),
            30, "the fetch to wait in the purgatory",
        )  # fmt: skip
        assert not answer.done(), answer.result()
        assert c.local.stop_broker(victim, grace_s=60) == 0
        response = answer.result(timeout=30)
    (partition,) = response.responses[0].partitions
    assert partition.error_code == 0 and bytes(partition.records or b"") == b""
    c.restart(victim)
    wait_until(lambda: all_caches_agree(c), 30, "every cache to see the restarted broker")


def test_sigterm_shuts_a_broker_down_cleanly(c: TestCluster) -> None:
    controller = wait_until(lambda: all_caches_agree(c), 30, "metadata on every broker")
    victim = next(b for b in c.broker_ids if b != controller)
    status = c.local.stop_broker(victim, grace_s=60)
    assert status == 0
    assert victim not in c.registered()
    log_dir = c.layout.log_dir(victim)
    assert (log_dir / ".kafka_cleanshutdown").exists()
    assert (log_dir / "recovery-point-offset-checkpoint").exists()
    assert "shut down completed" in c.log_text(victim)
    c.restart(victim)
    wait_until(lambda: all_caches_agree(c), 30, "every cache to see the restarted broker")
