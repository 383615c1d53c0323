"""Partition reassignment on a 4-broker cluster of real processes and a real ZooKeeper.

Reassignments are started with ``minikafka reassign-partitions``, the
AlterPartitionReassignments API and /admin/reassign_partitions; each test checks what
Kafka's ZooKeeper mode leaves behind: the topic znode with the target replicas and no
adding/removing replicas, every broker's Metadata with them and a leader among them, the
removed replicas' log directories gone, the request znode cleared. An ongoing
reassignment is made deterministic by targeting a broker that is stopped (only the
znode path accepts one): it waits, is listed, can be cancelled, survives a controller
failover, and completes when the broker returns.

One cluster is shared by the module; each test leaves its four brokers running. Every
wait is a poll with a deadline.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol import ApiKey, ErrorCode
from protocol.messages import (
    AlterPartitionReassignmentsRequest,
    CreateTopicsRequest,
    ListPartitionReassignmentsRequest,
)
from protocol.values import TopicPartition
from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.main import main as minikafka
from tools.zookeeper_server import ZooKeeperServer
from zk import admin, topics
from zk.session import ZkSession

pytestmark = pytest.mark.timeout(300)

TP = TopicPartition


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    # deleted logs go 0.5 s after their StopReplica, so their directories can be awaited
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("reassign"),
        4,
        overrides=(("log.segment.delete.delay.ms", "500"), ("log.initial.task.delay.ms", "0")),
    )


@pytest.fixture(scope="module")
def zk(c: TestCluster) -> Iterator[ZkSession]:
    """A session of the test's own: the tests read and write znodes with the blocking
    family functions (they poll from plain functions, outside any event loop)."""
    client = ZkSession.connect(c.zk_connect, session_timeout_s=10.0)
    yield client
    client.close()


def create_topic(c: TestCluster, name: str, assignment: dict[int, list[int]]) -> None:
    topic = CreateTopicsRequest.CreatableTopic(
        name=name,
        num_partitions=-1,
        replication_factor=-1,
        assignments=[
            CreateTopicsRequest.CreatableReplicaAssignment(partition_index=p, broker_ids=r)
            for p, r in assignment.items()
        ],
    )
    body = CreateTopicsRequest(topics=[topic], timeout_ms=20_000, validate_only=False)

    def created() -> bool:
        controller = c.controller()
        assert controller is not None
        (result,) = c.request(controller, ApiKey.CREATE_TOPICS, 7, body).topics
        assert result.error_code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS), result
        return True

    wait_until(created, 30, f"topic {name} created")
    wait_until(
        lambda: all(on_every_broker(c, TP(name, p), r) for p, r in assignment.items()),
        30,
        f"{name}'s partitions led",
    )


def on_every_broker(c: TestCluster, tp: TopicPartition, replicas: list[int]) -> bool:
    """Every live broker's Metadata has ``replicas`` for ``tp`` and a leader among them."""
    for i in c.broker_ids:
        if not c.is_running(i):
            continue
        (t,) = c.metadata(i, [tp.topic]).topics
        parts = {p.partition_index: p for p in t.partitions}
        p = parts.get(tp.partition)
        if p is None or list(p.replica_nodes) != replicas or p.leader_id not in replicas:
            return False
    return True


def settled(zk: ZkSession, tp: TopicPartition, replicas: list[int]) -> bool:
    """The topic znode assigns ``replicas`` and nothing is being added or removed."""
    found = topics.get_topic(zk, tp.topic)
    assert found is not None
    assignment, _ = found
    return (
        list(assignment.partitions[tp.partition]) == replicas
        and tp.partition not in assignment.adding_replicas
        and tp.partition not in assignment.removing_replicas
    )


def log_dirs_of(c: TestCluster, tp: TopicPartition) -> set[int]:
    """The brokers holding a directory of ``tp`` (also one renamed for deletion)."""
    return {
        i
        for i in c.broker_ids
        if any(
            d.name.startswith(f"{tp}.") or d.name == str(tp) for d in c.layout.log_dir(i).iterdir()
        )
    }


def complete(c: TestCluster, zk: ZkSession, tp: TopicPartition, target: list[int]) -> None:
    wait_until(lambda: settled(zk, tp, target), 30, f"{tp}'s znode at {target}")
    wait_until(lambda: on_every_broker(c, tp, target), 30, f"{tp}'s metadata at {target}")
    wait_until(lambda: log_dirs_of(c, tp) == set(target), 30, f"{tp}'s logs only on {target}")


def write_plan(path: Path, plan: dict[TopicPartition, list[int]]) -> str:
    partitions = [
        {"topic": tp.topic, "partition": tp.partition, "replicas": r, "log_dirs": ["any"] * len(r)}
        for tp, r in plan.items()
    ]
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return str(path)


def tool(c: TestCluster, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    status = minikafka(
        ["reassign-partitions", "--bootstrap-server", c.layout.bootstrap_servers, *args]
    )
    return status, capsys.readouterr().out


def alter(
    c: TestCluster, targets: dict[TopicPartition, list[int] | None], broker: int | None = None
) -> Any:
    by_topic: dict[str, list[AlterPartitionReassignmentsRequest.ReassignablePartition]] = {}
    for tp, replicas in targets.items():
        by_topic.setdefault(tp.topic, []).append(
            AlterPartitionReassignmentsRequest.ReassignablePartition(
                partition_index=tp.partition, replicas=replicas
            )
        )
    body = AlterPartitionReassignmentsRequest(
        timeout_ms=10_000,
        topics=[
            AlterPartitionReassignmentsRequest.ReassignableTopic(name=t, partitions=ps)
            for t, ps in by_topic.items()
        ],
    )
    target = c.controller() if broker is None else broker
    assert target is not None
    return c.request(target, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, body)


def listed(c: TestCluster, broker: int | None = None) -> Any:
    target = c.controller() if broker is None else broker
    assert target is not None
    body = ListPartitionReassignmentsRequest(timeout_ms=10_000, topics=None)
    return c.request(target, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, body)


def ongoing(c: TestCluster) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
    response = listed(c)
    assert response.error_code == ErrorCode.NONE
    return {
        TP(t.name, p.partition_index): (p.replicas, p.adding_replicas, p.removing_replicas)
        for t in response.topics
        for p in t.partitions
    }


def test_the_tool_moves_a_partition_to_other_brokers(
    c: TestCluster, zk: ZkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tp = TP("tool-moved", 0)
    create_topic(c, tp.topic, {0: [0, 1]})
    assert log_dirs_of(c, tp) == {0, 1}

    plan = write_plan(tmp_path / "plan.json", {tp: [2, 3]})
    status, out = tool(c, capsys, "--execute", "--reassignment-json-file", plan)
    assert status == 0, out
    assert "Current partition replica assignment" in out
    assert '{"topic":"tool-moved","partition":0,"replicas":[0,1],"log_dirs":["any","any"]}' in out
    assert "Successfully started partition reassignment for tool-moved-0" in out

    complete(c, zk, tp, [2, 3])
    status, out = tool(c, capsys, "--verify", "--reassignment-json-file", plan)
    assert status == 0
    assert "Reassignment of partition tool-moved-0 is completed." in out
    assert admin.get_partition_reassignment(zk) is None


def test_the_tool_generates_a_proposal_on_the_listed_brokers(
    c: TestCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topic(c, "to-spread", {0: [0, 1], 1: [1, 0]})
    topics = tmp_path / "topics.json"
    topics.write_text('{"version":1,"topics":[{"topic":"to-spread"}]}')
    status, out = tool(
        c, capsys, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "2,3"
    )
    assert status == 0, out
    current_header, current, _, proposed_header, proposed = out.strip().split("\n")
    assert current_header == "Current partition replica assignment"
    assert json.loads(current)["partitions"] == [
        {"topic": "to-spread", "partition": 0, "replicas": [0, 1], "log_dirs": ["any", "any"]},
        {"topic": "to-spread", "partition": 1, "replicas": [1, 0], "log_dirs": ["any", "any"]},
    ]
    assert proposed_header == "Proposed partition reassignment configuration"
    proposal = json.loads(proposed)["partitions"]
    assert [(e["topic"], e["partition"]) for e in proposal] == [("to-spread", 0), ("to-spread", 1)]
    assert all(sorted(e["replicas"]) == [2, 3] for e in proposal)


def test_the_api_moves_a_partition_and_keeps_a_leader_that_stays(
    c: TestCluster, zk: ZkSession
) -> None:
    tp = TP("api-moved", 0)
    create_topic(c, tp.topic, {0: [1, 2]})
    response = alter(c, {tp: [3, 1]})
    assert response.error_code == ErrorCode.NONE
    assert [
        (p.partition_index, p.error_code) for t in response.responses for p in t.partitions
    ] == [(0, ErrorCode.NONE)]
    complete(c, zk, tp, [3, 1])
    # broker 1 led and is a target: it still leads
    (t,) = c.metadata(0, [tp.topic]).topics
    assert t.partitions[0].leader_id == 1


def test_the_api_answers_kafkas_errors(c: TestCluster, zk: ZkSession) -> None:
    create_topic(c, "api-errors", {0: [0, 1]})
    tp = TP("api-errors", 0)
    response = alter(
        c,
        {
            TP("no-such-topic", 0): [0, 1],
            TP("api-errors", 7): [0, 1],
            tp: [2, 2],
        },
    )
    codes = {
        (t.name, p.partition_index): p.error_code for t in response.responses for p in t.partitions
    }
    assert codes == {
        ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("api-errors", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("api-errors", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    }
    for bad in ([], [0, 99], [-1, 0]):
        (t,) = alter(c, {tp: bad}).responses
        assert t.partitions[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT, bad
    (t,) = alter(c, {tp: None}).responses
    assert t.partitions[0].error_code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert settled(zk, tp, [0, 1])

    controller = c.controller()
    other = next(i for i in c.broker_ids if i != controller)
    assert alter(c, {tp: [1, 0]}, broker=other).error_code == ErrorCode.NOT_CONTROLLER
    assert listed(c, broker=other).error_code == ErrorCode.NOT_CONTROLLER


def test_a_request_in_zookeeper_is_carried_out_and_cleared(c: TestCluster, zk: ZkSession) -> None:
    a, b = TP("zk-moved", 0), TP("zk-moved", 1)
    create_topic(c, a.topic, {0: [0, 1], 1: [1, 2]})
    admin.request_partition_reassignment(zk, {a: [2, 3], b: [1, 2, 3]})
    complete(c, zk, a, [2, 3])
    complete(c, zk, b, [1, 2, 3])
    wait_until(
        lambda: admin.get_partition_reassignment(zk) is None, 30, "the request znode cleared"
    )


def stoppable(c: TestCluster) -> int:
    """A broker that is not the controller."""
    controller = wait_until(c.controller, 30, "a controller")
    return max(i for i in c.broker_ids if i != controller)


def test_a_reassignment_waits_for_a_stopped_broker_is_listed_and_cancelled(
    c: TestCluster, zk: ZkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = stoppable(c)
    others = [i for i in c.broker_ids if i != victim]
    kept, cancelled = TP("waits", 0), TP("waits", 1)
    create_topic(c, kept.topic, {0: others[:2], 1: others[1:3]})
    c.local.stop_broker(victim)
    try:
        wait_until(lambda: victim not in c.registered(), 30, f"broker {victim} gone")
        admin.request_partition_reassignment(
            zk, {kept: [others[0], victim], cancelled: [victim, others[2]]}
        )
        wait_until(lambda: len(ongoing(c)) == 2, 30, "both reassignments listed")
        assert ongoing(c) == {
            kept: ([others[0], victim, others[1]], [victim], [others[1]]),
            cancelled: ([victim, others[2], others[1]], [victim], [others[1]]),
        }
        status, out = tool(c, capsys, "--list")
        assert status == 0
        line = f"waits-0: replicas: {others[0]},{victim},{others[1]}. adding: {victim}."
        assert f"{line} removing: {others[1]}." in out

        plan = write_plan(tmp_path / "plan.json", {cancelled: [victim, others[2]]})
        status, out = tool(c, capsys, "--verify", "--reassignment-json-file", plan)
        assert "Reassignment of partition waits-1 is still in progress." in out
        status, out = tool(c, capsys, "--cancel", "--reassignment-json-file", plan)
        assert status == 0, out
        assert "Successfully cancelled partition reassignment for: waits-1" in out
        complete(c, zk, cancelled, [others[2], others[1]])  # ORS in the moving order
        # the cancelled partition left the request; the other one waits on
        request = admin.get_partition_reassignment(zk)
        assert request is not None and request[0] == {kept: (others[0], victim)}
        assert list(ongoing(c)) == [kept]
    finally:
        c.restart(victim)
    # the broker is back: the reassignment resumes and completes
    complete(c, zk, kept, [others[0], victim])
    wait_until(
        lambda: admin.get_partition_reassignment(zk) is None, 30, "the request znode cleared"
    )


def test_a_new_controller_resumes_a_reassignment_in_progress(c: TestCluster, zk: ZkSession) -> None:
    victim = stoppable(c)
    controller = c.controller()
    assert controller is not None
    rest = [i for i in c.broker_ids if i not in (victim, controller)]
    tp = TP("resumed", 0)
    create_topic(c, tp.topic, {0: [rest[0], controller]})
    c.local.stop_broker(victim)
    try:
        wait_until(lambda: victim not in c.registered(), 30, f"broker {victim} gone")
        admin.request_partition_reassignment(zk, {tp: [rest[0], victim]})
        wait_until(lambda: tp in ongoing(c), 30, "the reassignment under way")
        c.local.stop_broker(controller)
        try:
            wait_until(lambda: c.controller() not in (None, controller), 30, "another controller")
            # the new controller knows it from the topic znode's adding/removing replicas
            wait_until(lambda: tp in ongoing(c), 30, "the reassignment still listed")
        finally:
            c.restart(controller)
    finally:
        c.restart(victim)
    complete(c, zk, tp, [rest[0], victim])
    wait_until(
        lambda: admin.get_partition_reassignment(zk) is None, 30, "the request znode cleared"
    )


def test_a_partition_moves_under_load_without_losing_a_record(
    c: TestCluster, zk: ZkSession
) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer
    from confluent_kafka import TopicPartition as CkTp

    tp = TP("under-load", 0)
    create_topic(c, tp.topic, {0: [0, 1]})
    acked: list[bytes] = []
    failed: list[str] = []
    stop = threading.Event()

    def produce() -> None:
        producer = Producer(
            {"bootstrap.servers": c.layout.bootstrap_servers, "acks": "all",
             "enable.idempotence": True, "linger.ms": 5}
        )  # fmt: skip

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                acked.append(msg.value())
            else:
                failed.append(str(err))

        n = 0
        # paced (about 10k records/s) so that records keep coming through the whole move
        while not stop.is_set() and n < 2_000_000:
            try:
                producer.produce(tp.topic, f"{n}".encode(), partition=0, on_delivery=delivered)
                n += 1
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
            if n % 100 == 0:
                stop.wait(0.01)
        producer.flush(60)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        wait_until(lambda: len(acked) >= 2_000, 60, "records acknowledged before the move")
        assert alter(c, {tp: [2, 3]}).responses[0].partitions[0].error_code == ErrorCode.NONE
        complete(c, zk, tp, [2, 3])
        before = len(acked)

        def more() -> bool:
            assert not failed, failed[:3]
            return len(acked) >= before + 2_000

        wait_until(more, 60, "records acknowledged after the move")
    finally:
        stop.set()
        thread.join(90)
    assert not thread.is_alive()
    assert not failed, failed[:5]

    consumer = Consumer(
        {"bootstrap.servers": c.layout.bootstrap_servers, "group.id": "under-load-check",
         "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    )  # fmt: skip
    consumer.assign([CkTp(tp.topic, 0, 0)])
    seen: set[bytes] = set()
    try:
        wanted = set(acked)
        deadline_polls = 0
        while not wanted <= seen and deadline_polls < 600:
            deadline_polls += 1
            for msg in consumer.consume(1000, 0.1):
                if msg.error():
                    raise KafkaException(msg.error())
                seen.add(msg.value() or b"")
    finally:
        consumer.close()
    missing = set(acked) - seen
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
