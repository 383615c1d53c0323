"""Consumer groups end to end with the project's tools on a real cluster:
console-consumer --group members sharing a topic, consumer-groups --describe (offsets,
true lag, members, state), --reset-offsets and --delete.

One 2-broker cluster (real processes, real ZooKeeper) for the module, with a small
``__consumer_offsets`` (5 partitions, 2 replicas) and no initial rebalance delay. Every
command runs as ``python -m tools.main ...`` with a timeout; waits are polls with
deadlines. Each test uses its own topic and group.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
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


def mk(cluster: TestCluster, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv(cluster, command, *args),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


def ok(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 0, p.stderr
    return p.stdout


def create_topic(cluster: TestCluster, topic: str) -> None:
    ok(mk(cluster, "topics", "--create", "--topic", topic, "--partitions", str(PARTITIONS),
          "--replication-factor", "2"))  # fmt: skip


def produce(cluster: TestCluster, topic: str, per_partition: int, tag: str) -> list[str]:
    """``per_partition`` records into each partition; their values."""
    values = []
    for p in range(PARTITIONS):
        lines = [f"{tag}-{p}-{i}" for i in range(per_partition)]
        proc = subprocess.run(
            argv(cluster, "console-producer", "--topic", topic, "--partition", str(p)),
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        values += lines
    return values


def table(out: str) -> list[dict[str, str]]:
    """The rows of the tool's table as header -> cell (the header's cells contain no
    space except ``COORDINATOR (ID)``, not used here)."""
    lines = [line for line in out.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith("GROUP"))
    header = lines[start].split()
    return [dict(zip(header, line.split(), strict=True)) for line in lines[start + 1 :]]


def members(cluster: TestCluster, group: str) -> int:
    out = mk(cluster, "consumer-groups", "--describe", "--group", group, "--members")
    if out.returncode != 0 or "has no active members" in out.stdout:
        return 0
    return len(table(out.stdout))


def start_member(cluster: TestCluster, topic: str, group: str) -> subprocess.Popen[str]:
    """A console-consumer in ``group`` that stops 8 s after its last record."""
    command = argv(
        cluster, "console-consumer", "--topic", topic, "--group", group, "--from-beginning",
        "--timeout-ms", "8000", "--consumer-property", "heartbeat.interval.ms=200",
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
        wait_until(lambda: members(cluster, group) == 2, timeout=30, what="two members")
        # reset is refused while the group has members
        refused = mk(cluster, "consumer-groups", "--reset-offsets", "--group", group,
                     "--all-topics", "--to-earliest", "--execute")  # fmt: skip
        assert refused.returncode == 1
        assert "can only be reset if the group 'sharers' is inactive" in refused.stderr
        state = table(ok(mk(cluster, "consumer-groups", "--describe", "--group", group,
                            "--members", "--verbose")))  # fmt: skip
        assert sorted(int(r["#PARTITIONS"]) for r in state) == [2, 2]

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

    deleted = ok(mk(cluster, "consumer-groups", "--delete", "--group", group))
    assert "Deletion of requested consumer groups ('resetters') was successful." in deleted
    assert group not in ok(mk(cluster, "consumer-groups", "--list")).split()
    gone = mk(cluster, "consumer-groups", "--describe", "--group", group)
    assert "Consumer group 'resetters' does not exist." in gone.stderr
