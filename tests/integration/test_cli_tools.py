"""The tools against a real cluster: topics, console-producer | console-consumer, perf.

One 2-broker cluster (real processes, real ZooKeeper) is shared by the module. Every
command runs as ``python -m tools.main ...``, exactly as a user runs it, with a
timeout; waits are polls with deadlines.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[TestCluster]:
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("cli-cluster"), 2)


def mk(
    cluster: TestCluster, *args: str, stdin: bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """Run ``minikafka <command> --bootstrap-server <cluster> <args...>``."""
    command, *rest = args
    sub = rest.pop(0) if command == "perf" else None
    argv = [sys.executable, "-m", "tools.main", command]
    if sub:
        argv.append(sub)
    argv += ["--bootstrap-server", cluster.layout.bootstrap_servers, *rest]
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout, cwd=ROOT)


def topics(cluster: TestCluster, *args: str) -> subprocess.CompletedProcess[bytes]:
    return mk(cluster, "topics", *args)


def text(p: subprocess.CompletedProcess[bytes]) -> str:
    return p.stdout.decode()


def all_registered(cluster: TestCluster) -> bool:
    return all(len(cluster.metadata(i).brokers) == 2 for i in cluster.broker_ids)


def test_topics_create_list_describe_alter(cluster: TestCluster) -> None:
    wait_until(lambda: all_registered(cluster), 30, "both brokers in metadata")
    created = topics(
        cluster, "--create", "--topic", "orders", "--partitions", "3",
        "--replication-factor", "2", "--config", "retention.ms=86400000",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    assert text(created).strip() == "Created topic orders."

    again = topics(cluster, "--create", "--topic", "orders", "--partitions", "1")
    assert again.returncode == 1
    assert b"Topic 'orders' already exists." in again.stderr
    quiet = topics(cluster, "--create", "--topic", "orders", "--if-not-exists")
    assert quiet.returncode == 0 and quiet.stdout == b""

    listed = topics(cluster, "--list")
    assert "orders" in text(listed).split()

    described = topics(cluster, "--describe", "--topic", "orders")
    assert described.returncode == 0, described.stderr
    head, *parts = text(described).splitlines()
    assert re.fullmatch(
        r"Topic: orders\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 3\t"
        r"ReplicationFactor: 2\tConfigs: .*retention\.ms=86400000.*",
        head,
    ), head
    assert len(parts) == 3
    for i, line in enumerate(parts):
        m = re.fullmatch(
            rf"\tTopic: orders\tPartition: {i}\tLeader: (\d)\tReplicas: (\d),(\d)\tIsr: ([\d,]+)",
            line,
        )
        assert m, line
        leader, replicas = int(m[1]), {int(m[2]), int(m[3])}
        assert replicas == {0, 1} and leader in replicas

    altered = topics(cluster, "--alter", "--topic", "orders", "--partitions", "5")
    assert altered.returncode == 0, altered.stderr
    wait_until(
        lambda: "PartitionCount: 5" in text(topics(cluster, "--describe", "--topic", "orders")),
        30,
        "five partitions described",
    )
    fewer = topics(cluster, "--alter", "--topic", "orders", "--partitions", "2")
    assert fewer.returncode == 1 and b"INVALID_PARTITIONS" in fewer.stderr

    missing = topics(cluster, "--describe", "--topic", "nope")
    assert missing.returncode == 1 and b"does not exist" in missing.stderr


def test_delete_by_name_and_by_regex(cluster: TestCluster) -> None:
    for name in ("doomed", "doomed-a", "doomed-b", "kept"):
        assert topics(cluster, "--create", "--topic", name, "--partitions", "1").returncode == 0
    assert topics(cluster, "--delete", "--topic", "doomed").returncode == 0
    assert topics(cluster, "--delete", "--topic", "doomed-.*").returncode == 0
    # DeleteTopics answers once the controller's cache has dropped them; the others follow
    wait_until(
        lambda: (
            set(text(topics(cluster, "--list")).split()) & {"doomed", "doomed-a", "doomed-b"}
            == set()
        ),
        timeout=30,
        what="the deleted topics to leave --list",
    )
    assert "kept" in text(topics(cluster, "--list")).split()
    missing = topics(cluster, "--delete", "--topic", "doomed")
    assert missing.returncode == 1 and b"does not exist" in missing.stderr
    assert topics(cluster, "--delete", "--topic", "doomed", "--if-exists").returncode == 0


def test_console_round_trip_with_keys_and_headers(cluster: TestCluster) -> None:
    assert topics(cluster, "--create", "--topic", "lines", "--partitions", "2",
                  "--replication-factor", "2").returncode == 0  # fmt: skip
    lines = [f"src:cli,n:{i}|user-{i % 3}|value {i}" for i in range(30)]
    produced = mk(
        cluster, "console-producer", "--topic", "lines",
        "--property", "parse.key=true", "--property", "key.separator=|",
        "--property", "parse.headers=true", "--property", "headers.delimiter=|",
        "--producer-property", "acks=all",
        stdin=("\n".join(lines) + "\n").encode(),
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    consumed = mk(
        cluster, "console-consumer", "--topic", "lines", "--from-beginning",
        "--max-messages", "30", "--timeout-ms", "20000",
        "--property", "print.key=true", "--property", "print.headers=true",
        "--property", "print.partition=true", "--property", "print.offset=true",
        "--property", "key.separator=|",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert b"Processed a total of 30 messages" in consumed.stderr
    rows = [line.split("|") for line in text(consumed).splitlines()]
    assert len(rows) == 30
    got = {(r[2], r[3], r[4]) for r in rows}
    assert got == {(f"src:cli,n:{i}", f"user-{i % 3}", f"value {i}") for i in range(30)}
    # one key, one partition, in the order produced
    for user in ("user-0", "user-1", "user-2"):
        mine = [r for r in rows if r[3] == user]
        assert len({r[0] for r in mine}) == 1
        numbers = [int(r[4].split()[1]) for r in mine]
        assert numbers == sorted(numbers)
        offsets = [int(r[1].removeprefix("Offset:")) for r in mine]
        assert offsets == sorted(offsets)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_read_back_by_the_tool_and_by_librdkafka(
    cluster: TestCluster, codec: str
) -> None:
    topic = f"compressed-{codec}"
    assert topics(cluster, "--create", "--topic", topic, "--partitions", "1").returncode == 0
    values = [f"{codec} record {i} " + "x" * 50 for i in range(200)]
    produced = mk(
        cluster, "console-producer", "--topic", topic, "--compression-codec", codec,
        stdin=("\n".join(values) + "\n").encode(),
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    consumed = mk(cluster, "console-consumer", "--topic", topic, "--offset", "earliest",
                  "--max-messages", "200", "--timeout-ms", "20000")  # fmt: skip
    assert text(consumed).splitlines() == values

    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {"bootstrap.servers": cluster.layout.bootstrap_servers, "group.id": "unused",
         "enable.auto.commit": False, "api.version.request": True}
    )  # fmt: skip
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        seen: list[str] = []

        def poll() -> bool:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append((msg.value() or b"").decode())
            return len(seen) == len(values)

        wait_until(poll, 30, f"librdkafka reads the {codec} batches")
        assert seen == values
    finally:
        c.close()


def test_perf_produce_and_consume_print_their_summaries(cluster: TestCluster) -> None:
    assert topics(cluster, "--create", "--topic", "perf", "--partitions", "2").returncode == 0
    produced = mk(
        cluster, "perf", "produce", "--topic", "perf", "--num-records", "20000",
        "--record-size", "100", "--batch-size", "16384", "--acks", "1",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    summary = text(produced).splitlines()[-1]
    assert re.fullmatch(
        r"20000 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
        r"[\d.]+ ms max latency, [\d.]+ ms 50th, [\d.]+ ms 95th, [\d.]+ ms 99th, "
        r"[\d.]+ ms 99\.9th\.",
        summary,
    ), summary
    consumed = mk(cluster, "perf", "consume", "--topic", "perf", "--messages", "20000",
                  "--timeout", "20000")  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    header, row = text(consumed).splitlines()
    assert header.startswith("start.time, end.time, data.consumed.in.MB, MB.sec")
    fields = row.split(", ")
    assert int(fields[4]) == 20000
    assert float(fields[2]) > 20000 * 100 / 2**20  # batch framing comes on top of values


def test_perf_produce_waits_for_an_auto_created_topic(cluster: TestCluster) -> None:
    """The brokers auto-create the topic on perf's Metadata request and answer
    LEADER_NOT_AVAILABLE until its leaders are elected: perf waits, then sends."""
    topic = f"perf-auto-{uuid.uuid4().hex[:6]}"
    produced = mk(cluster, "perf", "produce", "--topic", topic, "--num-records", "500",
                  "--max-block-ms", "30000")  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    assert text(produced).splitlines()[-1].startswith("500 records sent, ")
    (created,) = cluster.metadata(0, [topic]).topics
    assert (created.name, created.error_code) == (topic, 0) and created.partitions


def test_consumer_at_latest_waits_for_new_records(cluster: TestCluster) -> None:
    assert topics(cluster, "--create", "--topic", "tail", "--partitions", "1").returncode == 0
    assert mk(cluster, "console-producer", "--topic", "tail", stdin=b"old\n").returncode == 0
    argv = [sys.executable, "-m", "tools.main", "console-consumer", "--bootstrap-server",
            cluster.layout.bootstrap_servers, "--topic", "tail", "--max-messages", "1",
            "--timeout-ms", "60000"]  # fmt: skip
    consumer = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        sent = 0

        def delivered() -> bool:
            # the consumer may not have its start offset yet: keep producing until it
            # prints one record and exits
            nonlocal sent
            if consumer.poll() is not None:
                return True
            sent += 1
            mk(cluster, "console-producer", "--topic", "tail", stdin=f"new {sent}\n".encode())
            return consumer.poll() is not None

        wait_until(delivered, 60, "the consumer to print a record produced after it started")
        out, err = consumer.communicate(timeout=30)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait(10)
    assert consumer.returncode == 0, err
    assert re.fullmatch(r"new \d+\n", out.decode()), out


def test_producer_rides_out_the_death_of_the_partition_leader(cluster: TestCluster) -> None:
    assert topics(cluster, "--create", "--topic", "failover", "--partitions", "1",
                  "--replication-factor", "2").returncode == 0  # fmt: skip
    (topic,) = cluster.metadata(0, ["failover"]).topics
    leader = topic.partitions[0].leader_id
    survivor = 1 - leader
    wait_until(lambda: len(cluster.metadata(survivor, ["failover"]).topics[0].partitions[0]
                           .isr_nodes) == 2, 30, "both replicas in sync")  # fmt: skip
    cluster.local.kill_broker(leader)
    try:
        produced = mk(
            cluster, "console-producer", "--topic", "failover", "--producer-property", "acks=1",
            stdin=b"after the leader died\n", timeout=120,
        )  # fmt: skip
        assert produced.returncode == 0, produced.stderr
        consumed = mk(cluster, "console-consumer", "--topic", "failover", "--from-beginning",
                      "--max-messages", "1", "--timeout-ms", "30000", timeout=120)  # fmt: skip
        assert text(consumed) == "after the leader died\n", consumed.stderr
    finally:
        cluster.restart(leader)


def test_log_dirs_describe_lists_each_brokers_partitions_with_their_sizes(
    cluster: TestCluster,
) -> None:
    assert topics(cluster, "--create", "--topic", "dirs", "--partitions", "2",
                  "--replication-factor", "1").returncode == 0  # fmt: skip
    produced = mk(cluster, "console-producer", "--topic", "dirs",
                  stdin=b"".join(b"record %d\n" % i for i in range(20)))  # fmt: skip
    assert produced.returncode == 0, produced.stderr

    def described() -> Any:
        run = mk(cluster, "log-dirs", "--describe", "--topic-list", "dirs")
        assert run.returncode == 0, run.stderr
        querying, received, document = text(run).splitlines()
        assert querying == "Querying brokers for log directories information"
        assert received == "Received log directory information from brokers 0,1"
        parsed = json.loads(document)
        sizes = [p["size"] for b in parsed["brokers"] for d in b["logDirs"]
                 for p in d["partitions"]]  # fmt: skip
        return parsed if len(sizes) == 2 and sum(sizes) > 0 else None

    doc = wait_until(described, 30, "both partitions of dirs listed with their data")
    assert doc["version"] == 1
    for broker in doc["brokers"]:
        (log_dir,) = broker["logDirs"]
        assert log_dir["logDir"] == str(cluster.layout.log_dir(broker["broker"]))
        assert log_dir["error"] is None
        for p in log_dir["partitions"]:
            assert p["partition"] in ("dirs-0", "dirs-1")
            assert p["offsetLag"] == 0 and p["isFuture"] is False


def test_client_properties_files_reach_every_kind_of_command(
    cluster: TestCluster, tmp_path: Path
) -> None:
    """--command-config, --producer.config and --consumer.config on a PLAINTEXT cluster
    (the secured ones: test_cluster_security), and api-versions through the client's
    connection."""
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=PLAINTEXT\nclient.id=from-file\n")
    config = ["--command-config", str(props)]
    assert topics(cluster, "--create", "--topic", "props", *config).returncode == 0
    assert "props" in text(topics(cluster, "--list", *config)).split()
    produced = mk(cluster, "console-producer", "--topic", "props", "--producer.config", str(props),
                  stdin=b"one\ntwo\n")  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    consumed = mk(cluster, "console-consumer", "--topic", "props", "--from-beginning",
                  "--max-messages", "2", "--timeout-ms", "20000",
                  "--consumer.config", str(props))  # fmt: skip
    assert consumed.returncode == 0 and text(consumed).split() == ["one", "two"]
    first = cluster.layout.bootstrap_servers.split(",")[0]
    versions = subprocess.run(
        [sys.executable, "-m", "tools.main", "api-versions", "--bootstrap-server", first, *config],
        capture_output=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert versions.returncode == 0, versions.stderr
    rows = {line.split()[0]: line.split()[1:] for line in text(versions).splitlines()[1:]}
    assert rows["Produce"][-2:] == ["0", "9"]  # the broker's range, beside ours
    bad = tmp_path / "bad.properties"
    bad.write_text("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n")
    refused = topics(cluster, "--list", "--command-config", str(bad))
    assert refused.returncode == 1 and b"sasl.mechanism" in refused.stderr
