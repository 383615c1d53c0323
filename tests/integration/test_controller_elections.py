"""The controller's decisions when brokers die, stop or come back, as ZooKeeper, Metadata,
the metrics and the tools show them: a dead broker leaves every ISR and its leaderships
go to the next live ISR member; a partition whose whole ISR is gone stays offline unless
its topic allows an unclean election; a controlled shutdown takes the broker out of the
ISRs it is in; a broker killed with -9 and started again at once comes back.

One 3-broker cluster for the module, with a short ZooKeeper session timeout (a killed
broker's session expires in seconds) and no automatic leader rebalance (so that the
leaders seen are the elections' own). Followers need not copy data for any of this: the
tests look at the controller's decisions, not at records. Each test uses its own topics
and leaves the three brokers running. Waits poll with a deadline.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from protocol import ApiKey, ErrorCode
from protocol.messages import ControlledShutdownRequest, CreateTopicsRequest
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.zk_fixtures import kazoo_session
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(300)

SESSION_TIMEOUT_MS = 4000
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("elections"),
        3,
        overrides=(
            ("zookeeper.session.timeout.ms", str(SESSION_TIMEOUT_MS)),
            ("auto.leader.rebalance.enable", "false"),
        ),
    )


@pytest.fixture(scope="module")
def zk(c: TestCluster) -> Iterator[KazooClient]:
    with kazoo_session(c.zk_connect) as client:
        yield client


def state(zk: KazooClient, topic: str, p: int) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")
    parsed: dict[str, Any] = json.loads(data)
    return parsed


def broker_epoch(zk: KazooClient, broker: int) -> int | None:
    stat = zk.exists(f"/brokers/ids/{broker}")
    return None if stat is None else int(stat.czxid)


def create_topic(
    c: TestCluster, name: str, assignment: list[list[int]], configs: dict[str, str] | None = None
) -> None:
    R = CreateTopicsRequest
    topic = R.CreatableTopic(
        name=name,
        num_partitions=-1,
        replication_factor=-1,
        assignments=[
            R.CreatableReplicaAssignment(partition_index=p, broker_ids=b)
            for p, b in enumerate(assignment)
        ],
        configs=[R.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
    )
    controller = wait_until(c.controller, 30, "a controller")
    body = R(topics=[topic], timeout_ms=20_000, validate_only=False)
    (result,) = c.request(controller, ApiKey.CREATE_TOPICS, 7, body).topics
    assert result.error_code == ErrorCode.NONE, result


def leadership_is(
    zk: KazooClient, topic: str, leader: int, isr: list[int] | None = None
) -> Callable[[], bool]:
    """A predicate: partition 0 of ``topic`` has ``leader`` (and ``isr``) in ZooKeeper."""

    def check() -> bool:
        st = state(zk, topic, 0)
        return bool(st["leader"] == leader and (isr is None or st["isr"] == isr))

    return check


def metadata_leaders(c: TestCluster, i: int, topic: str) -> dict[int, tuple[int, list[int]]]:
    (t,) = c.metadata(i, [topic]).topics
    return {p.partition_index: (p.leader_id, list(p.isr_nodes)) for p in t.partitions}


def others(c: TestCluster) -> tuple[int, int, int]:
    """(controller, the other two brokers in id order)."""
    controller = wait_until(c.controller, 30, "a controller")
    a, b = (i for i in c.broker_ids if i != controller)
    return controller, a, b


def test_a_dead_broker_leaves_the_isrs_and_its_leaderships_move_in_isr_order(
    c: TestCluster, zk: KazooClient
) -> None:
    controller, victim, survivor = others(c)
    # the victim leads p0 and follows in p1; "bystander" does not involve it
    create_topic(c, "dies", [[victim, survivor, controller], [controller, victim, survivor]])
    create_topic(c, "bystander", [[controller, survivor]])
    wait_until(leadership_is(zk, "bystander", controller), 30, "the topics created")
    wait_until(lambda: state(zk, "dies", 1)["leader"] == controller, 30, "the topics created")
    before = {p: state(zk, "dies", p) for p in range(2)}
    bystander = state(zk, "bystander", 0)
    assert before[0]["leader"] == victim

    c.local.kill_broker(victim)
    wait_until(lambda: victim not in state(zk, "dies", 1)["isr"], 30, "the victim out of p1's ISR")
    after = {p: state(zk, "dies", p) for p in range(2)}
    # p0: the next replica in assignment order that is in the ISR leads
    assert after[0]["leader"] == survivor
    assert after[0]["isr"] == [r for r in before[0]["isr"] if r != victim]
    assert after[0]["leader_epoch"] > before[0]["leader_epoch"]
    # p1: same leader, the ISR lost the victim, with a new leader epoch
    assert after[1]["leader"] == controller
    assert after[1]["isr"] == [controller, survivor]
    assert after[1]["leader_epoch"] == before[1]["leader_epoch"] + 1
    assert after[0]["controller_epoch"] == c.controller_epoch()
    assert state(zk, "bystander", 0) == bystander
    # every live broker's metadata agrees
    expected = {
        0: (survivor, [survivor, controller]),
        1: (controller, [controller, survivor]),
    }
    for i in (controller, survivor):
        wait_until(
            lambda i=i: metadata_leaders(c, i, "dies") == expected,  # type: ignore[misc]
            30,
            f"broker {i}'s metadata",
        )
    c.restart(victim)


def test_a_killed_broker_restarted_at_once_waits_for_its_old_registration(
    c: TestCluster, zk: KazooClient
) -> None:
    _, victim, _ = others(c)
    old_epoch = broker_epoch(zk, victim)
    assert old_epoch is not None
    c.local.kill_broker(victim)
    assert broker_epoch(zk, victim) == old_epoch  # the dead session still holds it
    c.local.start_broker(victim)  # at once: the first start must succeed
    new_epoch = wait_until(
        lambda: (e := broker_epoch(zk, victim)) is not None and e != old_epoch and e,
        4 * SESSION_TIMEOUT_MS / 1000 + 30,
        "the restarted broker's own registration",
    )
    assert new_epoch > old_epoch
    assert c.is_running(victim)
    # whether it had to wait depends on how long its startup took against the dead
    # session's timeout (test_zookeeper_client proves the wait itself)
    wait_until(lambda: len(c.metadata(victim).brokers) == 3, 30, "the restarted broker's metadata")


def test_controlled_shutdown_takes_the_broker_out_of_isrs_and_leaderships(
    c: TestCluster, zk: KazooClient
) -> None:
    controller, leaving, other = others(c)
    create_topic(
        c,
        "leaving",
        [[leaving, other, controller], [other, leaving, controller]],
        {"min.insync.replicas": "3"},
    )
    wait_until(lambda: state(zk, "leaving", 1)["leader"] == other, 30, "leaving created")
    epoch = broker_epoch(zk, leaving)
    assert epoch is not None
    body = ControlledShutdownRequest(broker_id=leaving, broker_epoch=epoch)
    response = c.request(controller, ApiKey.CONTROLLED_SHUTDOWN, 3, body)
    assert response.error_code == ErrorCode.NONE
    assert [p.topic_name for p in response.remaining_partitions] == []
    # the broker is still registered, yet leads nothing and is in no ISR
    assert broker_epoch(zk, leaving) == epoch
    p0, p1 = state(zk, "leaving", 0), state(zk, "leaving", 1)
    assert (p0["leader"], p0["isr"]) == (other, [other, controller])
    assert (p1["leader"], p1["isr"]) == (other, [other, controller])
    # with min.insync.replicas 3, both partitions are now under it
    wait_until(
        lambda: metadata_leaders(c, controller, "leaving")[0][1] == [other, controller],
        30,
        "the controller's metadata",
    )
    out = run_tool(c, "topics", "--describe", "--under-min-isr-partitions", "--topic", "leaving")
    assert [line.split("\t")[2] for line in out.splitlines()] == ["Partition: 0", "Partition: 1"]
    assert c.local.stop_broker(leaving) == 0
    c.restart(leaving)


def test_unclean_election_only_where_the_topic_allows_it(c: TestCluster, zk: KazooClient) -> None:
    controller, first, last = others(c)
    create_topic(c, "clean", [[first, last]])
    create_topic(c, "unclean", [[first, last]], {"unclean.leader.election.enable": "true"})
    for t in ("clean", "unclean"):
        wait_until(leadership_is(zk, t, first), 30, f"{t} created")
    unclean_before = c.metric(controller, "minikafka_unclean_leader_elections_total")
    # stop the brokers in order: the ISR ends up holding only the last one stopped
    assert c.local.stop_broker(first) == 0
    wait_until(lambda: state(zk, "clean", 0)["isr"] == [last], 30, "first out of the ISR")
    assert c.local.stop_broker(last) == 0
    for t in ("clean", "unclean"):
        wait_until(leadership_is(zk, t, -1, [last]), 30, f"{t} offline with its last ISR")
    wait_until(lambda: c.metric(controller, "minikafka_offline_partitions") == 2, 30, "2 offline")
    # the first broker comes back: out of sync, it may lead only where unclean is allowed
    c.restart(first)
    wait_until(lambda: state(zk, "unclean", 0)["leader"] == first, 30, "the unclean election")
    assert state(zk, "unclean", 0)["isr"] == [first]
    wait_until(
        lambda: (
            c.metric(controller, "minikafka_unclean_leader_elections_total")
            == (unclean_before or 0) + 1
        ),
        30,
        "the unclean election counted",
    )
    clean = state(zk, "clean", 0)
    assert (clean["leader"], clean["isr"]) == (-1, [last])
    assert c.metric(controller, "minikafka_offline_partitions") == 1
    # the tools say so too
    out = run_tool(c, "topics", "--describe", "--unavailable-partitions", "--topic", "clean")
    assert "\tPartition: 0\tLeader: none" in out
    # the last ISR member returns: a clean election
    c.restart(last)
    wait_until(lambda: state(zk, "clean", 0)["leader"] == last, 30, "the clean election")
    wait_until(
        lambda: c.metric(controller, "minikafka_offline_partitions") == 0, 30, "none offline"
    )


def run_tool(c: TestCluster, *args: str, broker: int | None = None) -> str:
    """``minikafka <command> --bootstrap-server <one running broker> <args...>``'s output."""
    command, *rest = args
    target = broker if broker is not None else wait_until(c.controller, 30, "a controller")
    argv = [sys.executable, "-m", "tools.main", command]
    argv += ["--bootstrap-server", f"127.0.0.1:{c.layout.client_ports[target]}", *rest]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def pretend_isr(zk: KazooClient, topic: str, p: int, leader: int, isr: list[int]) -> None:
    """Write a partition's leader and ISR, and notify the controller, as a leader that
    changed its ISR would (followers do not fetch in these tests, so ISRs never grow by
    themselves)."""
    path = f"/brokers/topics/{topic}/partitions/{p}/state"
    data, stat = zk.get(path)
    current = json.loads(data)
    current.update(leader=leader, isr=isr, leader_epoch=current["leader_epoch"] + 1)
    zk.set(path, json.dumps(current).encode(), version=stat.version)
    change = {"version": 1, "partitions": [{"topic": topic, "partition": p}]}
    zk.create("/isr_change_notification/isr_change_", json.dumps(change).encode(), sequence=True)


def test_preferred_leader_election_through_the_tool_and_confluent_kafka(
    c: TestCluster, zk: KazooClient
) -> None:
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    controller, a, b = others(c)
    create_topic(c, "pref", [[a, b], [b, a], [a, b]])
    wait_until(leadership_is(zk, "pref", a), 30, "pref created")
    # p0 and p2 led by b, their preferred replica a alive and back in their ISRs
    for p in (0, 2):
        pretend_isr(zk, "pref", p, b, [b, a])
    wait_until(
        lambda: (
            metadata_leaders(c, controller, "pref")
            == {0: (b, [b, a]), 1: (b, [b, a]), 2: (b, [b, a])}
        ),
        30,
        "b leading everything",
    )
    out = run_tool(
        c, "leader-election", "--election-type", "PREFERRED", "--topic", "pref", "--partition", "0"
    )
    assert out == "Successfully completed leader election (PREFERRED) for partitions pref-0\n"
    assert (state(zk, "pref", 0)["leader"], state(zk, "pref", 0)["isr"]) == (a, [b, a])
    # a JSON file: one already led by its preferred replica
    doc = {"partitions": [{"topic": "pref", "partition": 0}, {"topic": "pref", "partition": 1}]}
    path = c.layout.directory / "elect.json"
    path.write_text(json.dumps(doc))
    out = run_tool(
        c, "leader-election", "--election-type", "preferred", "--path-to-json-file", str(path)
    )
    assert out == "Valid replica already elected for partitions pref-0, pref-1\n"
    # confluent-kafka's AdminClient
    admin = AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})
    future = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("pref", 2)])
    results = future.result(timeout=60)
    assert [(tp.topic, tp.partition, err) for tp, err in results.items()] == [("pref", 2, None)]
    assert state(zk, "pref", 2)["leader"] == a
    wait_until(lambda: metadata_leaders(c, b, "pref")[2] == (a, [b, a]), 30, "b's metadata")


def test_a_preferred_replica_out_of_the_isr_is_not_elected(c: TestCluster, zk: KazooClient) -> None:
    controller, a, b = others(c)
    create_topic(c, "stale", [[a, b]])
    wait_until(leadership_is(zk, "stale", a), 30, "stale created")
    pretend_isr(zk, "stale", 0, b, [b])
    wait_until(lambda: metadata_leaders(c, controller, "stale")[0] == (b, [b]), 30, "b leading")
    argv = [sys.executable, "-m", "tools.main", "leader-election"]
    argv += ["--bootstrap-server", c.layout.bootstrap_servers, "--election-type", "preferred"]
    argv += ["--topic", "stale", "--partition", "0"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert proc.returncode == 1
    assert proc.stdout.startswith(
        "Error completing leader election (PREFERRED) for partition: stale-0: "
        "PREFERRED_LEADER_NOT_AVAILABLE"
    )
    assert "1 replica(s) could not be elected" in proc.stderr
    assert state(zk, "stale", 0)["leader"] == b
