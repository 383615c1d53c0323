"""Consumer groups end to end with the project's tools on a real cluster:
console-consumer --group members sharing a topic, consumer-groups --describe (offsets,
true lag, members, state), --reset-offsets and --delete, and the members of a group of
librdkafka consumers read by --describe.

Records are written by confluent-kafka (in this process: quicker than a tool run). One
2-broker cluster (real processes, real ZooKeeper) for the module, with a small
``__consumer_offsets`` (5 partitions, 2 replicas) and no initial rebalance delay. The
console consumers run as ``python -m tools.main ...`` processes with a timeout, the
consumer-groups commands through the same entry point in this process; waits are polls with
deadlines. Each test uses its own topic and group.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.main import main
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 4


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    overrides = (
        ("offsets.topic.num.partitions", "5"),
        ("offsets.topic.replication.factor", "2"),
        ("group.initial.rebalance.delay.ms", "0"),
    )
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("groups-tool"), 2, overrides)


def argv(cluster: TestCluster, command: str, *args: str) -> list[str]:
    return [
        sys.executable, "-m", "tools.main", command,
        "--bootstrap-server", cluster.layout.bootstrap_servers, *args,
    ]  # fmt: skip


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def mk(cluster: TestCluster, command: str, *args: str) -> Ran:
    """``minikafka <command> ...`` run in this process (the tool's own entry point, its
    output captured): quicker than a new interpreter per command."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv(cluster, command, *args)[3:])
    return Ran(code, out.getvalue(), err.getvalue())


def ok(p: Ran) -> str:
    assert p.returncode == 0, p.stderr
    return p.stdout


def create_topic(cluster: TestCluster, topic: str) -> None:
    ok(mk(cluster, "topics", "--create", "--topic", topic, "--partitions", str(PARTITIONS),
          "--replication-factor", "2"))  # fmt: skip


def produce(cluster: TestCluster, topic: str, per_partition: int, tag: str) -> list[str]:
    """``per_partition`` records into each partition (confluent-kafka, acks=all); their
    values."""
    producer = Producer({"bootstrap.servers": cluster.layout.bootstrap_servers, "acks": "all"})
    values = []
    for p in range(PARTITIONS):
        for i in range(per_partition):
            value = f"{tag}-{p}-{i}"
            producer.produce(topic, value=value.encode(), partition=p)
            values.append(value)
    assert producer.flush(30) == 0
    return values


def table(out: str, first: str = "GROUP") -> list[dict[str, str]]:
    """The rows of the tool's table as header -> cell, split at spaces (``COORDINATOR
    (ID)`` splits in two as its cells ``host:port (id)`` do)."""
    lines = [line for line in out.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    header = lines[start].split()
    return [dict(zip(header, line.split(), strict=True)) for line in lines[start + 1 :]]


def shares(cluster: TestCluster, group: str) -> list[int]:
    """Each member's partition count, sorted (members are listed before their
    assignment has reached them: 0 partitions while the group completes a rebalance)."""
    out = mk(cluster, "consumer-groups", "--describe", "--group", group, "--members")
    if out.returncode != 0 or "has no active members" in out.stdout:
        return []
    return sorted(int(r["#PARTITIONS"]) for r in table(out.stdout))


def start_member(cluster: TestCluster, topic: str, group: str) -> subprocess.Popen[str]:
    """A console-consumer in ``group`` that stops after 20 records (its share: two of
    the four partitions, checked before anything is produced), or after a minute
    without one."""
    command = argv(
        cluster, "console-consumer", "--topic", topic, "--group", group, "--from-beginning",
        "--max-messages", "20", "--timeout-ms", "60000",
        "--consumer-property", "heartbeat.interval.ms=200",
        "--consumer-property", "auto.commit.interval.ms=500",
    )  # fmt: skip
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )


def test_two_console_consumers_share_a_topic_and_describe_shows_the_true_lag(
    cluster: TestCluster,
) -> None:
    topic, group = "shared", "sharers"
    create_topic(cluster, topic)
    consumers = [start_member(cluster, topic, group) for _ in range(2)]
    try:
        wait_until(lambda: shares(cluster, group) == [2, 2], timeout=30, what="two members, 2 each")
        # reset is refused while the group has members
        refused = mk(cluster, "consumer-groups", "--reset-offsets", "--group", group,
                     "--all-topics", "--to-earliest", "--execute")  # fmt: skip
        assert refused.returncode == 1
        assert "can only be reset if the group 'sharers' is inactive" in refused.stderr
        verbose = table(ok(mk(cluster, "consumer-groups", "--describe", "--group", group,
                              "--members", "--verbose")))  # fmt: skip
        assigned = sorted(r["ASSIGNMENT"] for r in verbose)
        assert assigned == [f"{topic}(0,1)", f"{topic}(2,3)"]  # range: contiguous halves

        sent = produce(cluster, topic, 10, "a")
        outputs = [c.communicate(timeout=90) for c in consumers]
    finally:
        for c in consumers:
            if c.poll() is None:
                c.kill()
                c.wait(timeout=10)
    got = [out.split() for out, _ in outputs]
    assert all(got), "each member consumed a share"
    assert sorted(got[0] + got[1]) == sorted(sent), "every record exactly once"

    produce(cluster, topic, 2, "b")
    described = mk(cluster, "consumer-groups", "--describe", "--group", group)
    assert "Consumer group 'sharers' has no active members." in ok(described)
    rows = table(described.stdout)
    assert [(r["TOPIC"], r["PARTITION"]) for r in rows] == [
        (topic, str(p)) for p in range(PARTITIONS)
    ]
    for r in rows:
        assert (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) == ("10", "12", "2")
        assert r["CONSUMER-ID"] == "-"


def test_reset_offsets_of_an_inactive_group_then_delete_it(cluster: TestCluster) -> None:
    topic, group = "resettable", "resetters"
    create_topic(cluster, topic)
    produce(cluster, topic, 5, "r")

    ok(mk(cluster, "consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
          "--to-offset", "3", "--execute"))  # fmt: skip
    rows = table(ok(mk(cluster, "consumer-groups", "--describe", "--group", group)))
    assert [(r["CURRENT-OFFSET"], r["LAG"]) for r in rows] == [("3", "2")] * PARTITIONS
    assert group in ok(mk(cluster, "consumer-groups", "--list")).split()

    dry = ok(mk(cluster, "consumer-groups", "--reset-offsets", "--group", group,
                "--topic", f"{topic}:1", "--to-earliest", "--dry-run"))  # fmt: skip
    assert [(r["PARTITION"], r["NEW-OFFSET"]) for r in table(dry)] == [("1", "0")]
    ok(mk(cluster, "consumer-groups", "--reset-offsets", "--group", group, "--all-topics",
          "--to-earliest", "--execute"))  # fmt: skip
    rows = table(ok(mk(cluster, "consumer-groups", "--describe", "--group", group)))
    assert [(r["CURRENT-OFFSET"], r["LAG"]) for r in rows] == [("0", "5")] * PARTITIONS

    state = table(ok(mk(cluster, "consumer-groups", "--describe", "--group", group, "--state")))
    assert state[0]["STATE"] == "Empty" and state[0]["#MEMBERS"] == "0"

    every = ok(mk(cluster, "consumer-groups", "--describe", "--all-groups"))
    ours = [line.split() for line in every.splitlines() if line.startswith(f"{group} ")]
    assert [(cells[1], cells[2]) for cells in ours] == [(topic, str(p)) for p in range(4)]

    gone_offsets = ok(mk(cluster, "consumer-groups", "--delete-offsets", "--group", group,
                         "--topic", f"{topic}:0"))  # fmt: skip
    assert [(r["PARTITION"], r["STATUS"]) for r in table(gone_offsets, "TOPIC")] == [
        ("0", "Successful")
    ]
    rows = table(ok(mk(cluster, "consumer-groups", "--describe", "--group", group)))
    assert [r["PARTITION"] for r in rows] == ["1", "2", "3"]

    deleted = ok(mk(cluster, "consumer-groups", "--delete", "--group", group))
    assert "Deletion of requested consumer groups ('resetters') was successful." in deleted
    assert group not in ok(mk(cluster, "consumer-groups", "--list")).split()
    gone = mk(cluster, "consumer-groups", "--describe", "--group", group)
    assert "Consumer group 'resetters' does not exist." in gone.stderr


def test_describe_reads_the_members_of_a_librdkafka_group(cluster: TestCluster) -> None:
    topic, group = "foreign", "librdkafka-group"
    create_topic(cluster, topic)
    produce(cluster, topic, 1, "f")
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.layout.bootstrap_servers,
            "group.id": group,
            "client.id": "rdkafka-member",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        wait_until(lambda: consumer.poll(0.2) is not None, timeout=30, what="a first record")

        def assigned() -> list[dict[str, str]] | None:
            out = ok(mk(cluster, "consumer-groups", "--describe", "--group", group,
                        "--members", "--verbose"))  # fmt: skip
            return [r for r in table(out) if r["#PARTITIONS"] != "0"] or None

        rows = wait_until(assigned, timeout=30, what="the member's assignment")
        assert [(r["CLIENT-ID"], r["ASSIGNMENT"]) for r in rows] == [
            ("rdkafka-member", f"{topic}(0,1,2,3)")
        ]
    finally:
        consumer.close()
