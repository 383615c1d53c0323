"""KafkaJS, the Node.js client, against minikafka: admin, groups, transactions, SASL.

KafkaJS implements the protocol on its own (its own request versions, record batch
encoder, group and transaction state machines), so it finds what the Python and
librdkafka clients may not. ``tests/js/kafkajs_client.js`` runs one scenario per
invocation (``node kafkajs_client.js SCENARIO JSON``) and prints what KafkaJS saw as one
JSON object; the assertions are all here. KafkaJS itself is installed from
``tests/js/package-lock.json`` by ``make js-deps`` (which ``make test`` and ``make
integration`` run); without it, or without Node, the module is skipped with the reason.

Two clusters, each started once for the module:

- three brokers with PLAINTEXT listeners (``start_cluster``) for the admin, produce,
  group and transaction scenarios; ``group.initial.rebalance.delay.ms`` is 1 s (Kafka's
  3 s would cost a few seconds per group here), so the two consumers of a group, started
  together, normally join its first generation;
- one broker with a SASL_SSL listener (PLAIN users from its JAAS line, a SCRAM-SHA-256
  user from ZooKeeper) beside the PLAINTEXT one that the readiness checks use.

Every scenario has a deadline inside the script and a subprocess timeout here, so a
broker that stops answering fails a test rather than hanging it.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from protocol import ApiKey, ErrorCode
from protocol.messages import DescribeProducersRequest
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.secured_broker import start_secured_broker
from tools.zookeeper_server import ZooKeeperServer
from zk.scram import create_scram_user

JS_DIR = Path(__file__).resolve().parents[1] / "js"
SCRIPT = JS_DIR / "kafkajs_client.js"
NODE = shutil.which("node")
INSTALLED = (JS_DIR / "node_modules" / "kafkajs" / "package.json").is_file()

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(not INSTALLED, reason="kafkajs is not installed: run `make js-deps`"),
]

#: how long one scenario may take inside the script; the subprocess gets a little more
DEADLINE_S = 40.0
#: how long a consumer may read before the script gives up on the records it waits for
READ_TIMEOUT_MS = 25_000

PLAIN_USER, PLAIN_PASSWORD = "alice", "alice-secret"
SCRAM_USER, SCRAM_PASSWORD = "carol", "carol-256-secret"
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'user_{PLAIN_USER}="{PLAIN_PASSWORD}";'
)
SASL_TOPIC = "kafkajs-sasl"


def run(scenario: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run one scenario of kafkajs_client.js; its JSON answer (the error's, if it failed)."""
    assert NODE is not None
    payload = json.dumps({"deadline_ms": int(DEADLINE_S * 1000), **args})
    env = {**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
    done = subprocess.run(
        [NODE, str(SCRIPT), scenario, payload],
        cwd=JS_DIR,
        env=env,
        capture_output=True,
        timeout=DEADLINE_S + 15,
        check=False,
    )
    stderr = done.stderr.decode(errors="replace")[-4000:]
    lines = done.stdout.decode().strip().splitlines()
    assert lines, f"{scenario}: no answer (exit {done.returncode}); stderr:\n{stderr}"
    answer: dict[str, Any] = json.loads(lines[-1])
    assert (done.returncode == 0) == ("error" not in answer), (answer, stderr)
    return answer


def ok(scenario: str, args: dict[str, Any]) -> dict[str, Any]:
    """run(), which must have succeeded."""
    answer = run(scenario, args)
    assert "error" not in answer, f"{scenario} failed: {answer['error']}"
    return answer


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# --- the clusters -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    overrides = (("group.initial.rebalance.delay.ms", "1000"),)
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("kafkajs"), 3, overrides)


def brokers(c: TestCluster) -> list[str]:
    return c.layout.bootstrap_servers.split(",")


@dataclass(frozen=True)
class Secured:
    """The SASL_SSL broker: its listener's address and the CA that signed its certificate."""

    bootstrap: str
    ca_pem: str

    def args(self, mechanism: str, username: str, password: str) -> dict[str, Any]:
        sasl = {"mechanism": mechanism, "username": username, "password": password}
        return {"brokers": [self.bootstrap], "ca_pem": self.ca_pem, "sasl": sasl}


@pytest.fixture(scope="module")
def secured(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Secured]:
    broker = start_secured_broker(
        zookeeper,
        tmp_path_factory.mktemp("kafkajs-sasl"),
        ("SASL_SSL",),
        {
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        },
        SASL_TOPIC,
        1,
        lambda zk: create_scram_user(zk, SCRAM_USER, SCRAM_PASSWORD, ["SCRAM-SHA-256"], 4096, 15),
    )
    for b in broker:
        yield Secured(f"127.0.0.1:{b.ports['SASL_SSL']}", b.ca_path.read_text())


# --- admin --------------------------------------------------------------------------------


def test_admin_topics_configs_and_cluster(c: TestCluster) -> None:
    """createTopics with partitions, RF 3 and a config; a second create of the same topic
    is refused as existing (KafkaJS answers false); fetchTopicMetadata shows every replica
    in sync; describeConfigs shows the config given at creation (a topic override) and a
    default; alterConfigs changes it; describeCluster lists the brokers and controller;
    deleteTopics removes the topic."""
    topic = unique("kjs-admin")
    answer = ok(
        "admin",
        {
            "brokers": brokers(c),
            "topic": topic,
            "partitions": 3,
            "replication_factor": 3,
            "configs": {"retention.ms": "3600000"},
            "config_names": ["retention.ms", "cleanup.policy"],
            "alter": {"retention.ms": "7200000"},
        },
    )
    assert answer["created"] is True
    assert answer["createdAgain"] is False

    (meta,) = answer["metadata"]["topics"]
    assert meta["name"] == topic
    partitions = sorted(meta["partitions"], key=lambda p: p["partitionId"])
    assert [p["partitionId"] for p in partitions] == [0, 1, 2]
    for p in partitions:
        assert p["partitionErrorCode"] == 0
        assert sorted(p["replicas"]) == [0, 1, 2]
        assert sorted(p["isr"]) == [0, 1, 2]
        assert p["leader"] in p["replicas"]

    def configs(described: dict[str, Any]) -> dict[str, tuple[str, bool]]:
        (resource,) = described["resources"]
        assert (resource["errorCode"], resource["resourceName"]) == (0, topic)
        return {
            e["configName"]: (e["configValue"], e["isDefault"]) for e in resource["configEntries"]
        }

    assert configs(answer["before"]) == {
        "retention.ms": ("3600000", False),
        "cleanup.policy": ("delete", True),
    }
    assert [r["errorCode"] for r in answer["altered"]["resources"]] == [0]
    assert configs(answer["after"])["retention.ms"] == ("7200000", False)

    described = answer["cluster"]
    assert sorted((b["nodeId"], b["port"]) for b in described["brokers"]) == list(
        enumerate(c.layout.client_ports)
    )
    assert described["controller"] == c.controller()
    assert described["clusterId"]
    assert topic not in answer["listed"]
    assert c.metadata(0, [topic]).topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# --- produce, then a consumer group of two ------------------------------------------------

GROUP_PARTITIONS = 4


def written_records(round_: int, count: int) -> list[dict[str, Any]]:
    """Records for every partition in turn, with binary values (all 256 byte values over
    the lot), keys and headers (none on some records)."""
    out = []
    for i in range(count):
        headers = {} if i % 3 == 2 else {"round": str(round_), "index": str(i), "hé": "ü"}
        value = bytes((i * 37 + j) % 256 for j in range(64)) + f"r{round_}#{i}".encode()
        out.append(
            {
                "partition": i % GROUP_PARTITIONS,
                "key": f"key-{round_}-{i}",
                "value": b64(value),
                "headers": headers,
            }
        )
    return out


def produce_rounds(c: TestCluster, topic: str, records: list[dict[str, Any]], create: bool) -> None:
    """Send ``records`` with acks=-1 in two batches: the first uncompressed, the second gzip."""
    half = len(records) // 2
    args: dict[str, Any] = {
        "brokers": brokers(c),
        "topic": topic,
        "acks": -1,
        "batches": [
            {"compression": "none", "messages": records[:half]},
            {"compression": "gzip", "messages": records[half:]},
        ],
    }
    if create:
        args["create"] = {"topic": topic, "numPartitions": GROUP_PARTITIONS, "replicationFactor": 3}
    sent = ok("produce", args)["sent"]
    errors = [meta["errorCode"] for batch in sent for meta in batch]
    assert errors and set(errors) == {0}


def by_partition(records: list[dict[str, Any]]) -> dict[int, list[tuple[Any, ...]]]:
    """Each partition's (key, value, headers) in order."""
    out: dict[int, list[tuple[Any, ...]]] = {}
    for r in records:
        out.setdefault(r["partition"], []).append((r["key"], r["value"], r["headers"]))
    return out


def read_group(c: TestCluster, topic: str, group: str, expect: int) -> dict[str, Any]:
    return ok(
        "group",
        {
            "brokers": brokers(c),
            "topic": topic,
            "group": group,
            "members": 2,
            "expect": expect,
            "read_timeout_ms": READ_TIMEOUT_MS,
        },
    )


def check_group_read(
    answer: dict[str, Any], topic: str, written: list[dict[str, Any]], start: dict[int, int]
) -> None:
    """Every record exactly as written, in order per partition and at consecutive offsets
    from ``start`` (the partition's committed offset); the two members split the
    partitions between them, and each record was read by a member that was assigned its
    partition (a late joiner's rebalance may move partitions, so any of its assignments)."""
    records = answer["records"]
    assert by_partition(records) == by_partition(written)
    for partition, rows in by_partition(written).items():
        offsets = [int(r["offset"]) for r in records if r["partition"] == partition]
        first = start.get(partition, 0)
        assert offsets == list(range(first, first + len(rows))), (partition, offsets)
    assignments = {int(m): a.get(topic, []) for m, a in answer["assignments"].items()}
    assert sorted(assignments) == [0, 1]
    assert all(assignments.values()), assignments
    assert sorted(p for ps in assignments.values() for p in ps) == list(range(GROUP_PARTITIONS))
    owned = {int(m): o.get(topic, []) for m, o in answer["owned"].items()}
    for r in records:
        assert r["partition"] in owned[r["member"]], r


def committed_offsets(answer: dict[str, Any], topic: str) -> dict[int, int]:
    (entry,) = answer["committed"]
    assert entry["topic"] == topic
    return {p["partition"]: int(p["offset"]) for p in entry["partitions"]}


def test_produce_then_group_of_two_resumes_from_committed_offsets(c: TestCluster) -> None:
    """acks=-1 produce (one uncompressed batch, one gzip) of keyed records with headers;
    two KafkaJS consumers of one group read each record once, as written and in order
    per partition, committing as they go; the group restarted reads only what was
    produced since, and the admin client's fetchOffsets agrees with the log ends."""
    topic, group = unique("kjs-group"), unique("kjs-group")
    first = written_records(1, 12)
    produce_rounds(c, topic, first, create=True)
    answer = read_group(c, topic, group, len(first))
    check_group_read(answer, topic, first, {})
    ends = {p: len(rows) for p, rows in by_partition(first).items()}
    assert committed_offsets(answer, topic) == ends

    second = written_records(2, 8)
    produce_rounds(c, topic, second, create=False)
    again = read_group(c, topic, group, len(second))
    check_group_read(again, topic, second, ends)
    totals = {p: len(rows) for p, rows in by_partition(first + second).items()}
    assert committed_offsets(again, topic) == totals


# --- idempotence and transactions ---------------------------------------------------------


def values_of(records: list[dict[str, Any]], topic: str) -> list[str]:
    return [base64.b64decode(r["value"]).decode() for r in records if r["topic"] == topic]


def test_idempotent_producer_and_transactions_read_committed(c: TestCluster) -> None:
    """An idempotent producer's records, then transactions over two topics (one
    sendBatch each): committed, aborted, committed. A read_committed consumer sees the
    idempotent records and both committed transactions in order and nothing of the
    aborted one; a read_uncommitted consumer does see the aborted records, so they were
    written and then filtered. The leader's producer state (DescribeProducers) shows both
    producers' sequences and no transaction left open."""
    topics = [unique("kjs-txn-a"), unique("kjs-txn-b")]
    transactions = [
        {"values": ["commit-1a", "commit-1b"], "outcome": "commit"},
        {"values": ["abort-1", "abort-2"], "outcome": "abort"},
        {"values": ["commit-2"], "outcome": "commit"},
    ]
    idempotent = ["idem-0", "idem-1", "idem-2"]
    answer = ok(
        "transactions",
        {
            "brokers": brokers(c),
            "topics": topics,
            "group": unique("kjs-txn"),
            "transactional_id": unique("kjs-txn"),
            "idempotent_values": idempotent,
            "transactions": transactions,
            "read_timeout_ms": READ_TIMEOUT_MS,
        },
    )
    committed = ["commit-1a", "commit-1b", "commit-2"]
    everything = ["commit-1a", "commit-1b", "abort-1", "abort-2", "commit-2"]
    assert values_of(answer["committed"], topics[0]) == idempotent + committed
    assert values_of(answer["committed"], topics[1]) == committed
    assert values_of(answer["uncommitted"], topics[0]) == idempotent + everything
    assert values_of(answer["uncommitted"], topics[1]) == everything

    # the leader's producer state of the first topic: the idempotent producer's sequences
    # 0-2 (one batch), the transactional one's 0-4 over its three transactions, none open
    leader = c.metadata(0, [topics[0]]).topics[0].partitions[0].leader_id
    request = DescribeProducersRequest(
        topics=[DescribeProducersRequest.TopicRequest(name=topics[0], partition_indexes=[0])]
    )
    described = c.request(leader, ApiKey.DESCRIBE_PRODUCERS, 0, request)
    ((partition,),) = [t.partitions for t in described.topics]
    assert partition.error_code == ErrorCode.NONE
    states = sorted(partition.active_producers, key=lambda p: p.last_sequence)
    assert [p.last_sequence for p in states] == [len(idempotent) - 1, len(everything) - 1]
    assert [p.current_txn_start_offset for p in states] == [-1, -1]
    assert states[0].producer_id != states[1].producer_id


def test_send_offsets_commits_group_offsets_with_the_transaction(c: TestCluster) -> None:
    """Consume-transform-produce: each input record upper-cased to the output topic in a
    transaction that also commits the group's offset past it (sendOffsets). An earlier
    aborted transaction that sent offsets past every record left none committed (-1);
    after the transforms the group's offset is the input's end, and a read_committed
    reader of the output finds exactly the transformed records."""
    values = ["alpha", "beta", "gamma", "delta"]
    answer = ok(
        "ctp",
        {
            "brokers": brokers(c),
            "input": unique("kjs-ctp-in"),
            "output": unique("kjs-ctp-out"),
            "group": unique("kjs-ctp"),
            "transactional_id": unique("kjs-ctp"),
            "values": values,
            "read_timeout_ms": READ_TIMEOUT_MS,
        },
    )

    def offset(fetched: list[dict[str, Any]]) -> int:
        ((entry,),) = [t["partitions"] for t in fetched]
        return int(entry["offset"])

    assert offset(answer["afterAbort"]) == -1
    assert offset(answer["afterCommit"]) == len(values)
    output = [base64.b64decode(r["value"]).decode() for r in answer["output"]]
    assert output == [v.upper() for v in values]


# --- SASL over TLS ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "username", "password"),
    [("scram-sha-256", SCRAM_USER, SCRAM_PASSWORD), ("plain", PLAIN_USER, PLAIN_PASSWORD)],
)
def test_sasl_ssl_produce_and_consume(
    secured: Secured, mechanism: str, username: str, password: str
) -> None:
    """Over SASL_SSL (the CA's certificate as KafkaJS's ssl.ca), with the mechanism's
    user: one record produced and read back by a consumer group."""
    value = b64(mechanism.encode() + bytes(range(256)))
    record = {"partition": 0, "key": mechanism, "value": value, "headers": {"via": "sasl_ssl"}}
    answer = ok(
        "roundtrip",
        {
            **secured.args(mechanism, username, password),
            "topic": SASL_TOPIC,
            "group": unique("kjs-sasl"),
            "record": record,
            "read_timeout_ms": READ_TIMEOUT_MS,
        },
    )
    mine = [r for r in answer["records"] if r["key"] == mechanism]
    assert [(r["value"], r["headers"]) for r in mine] == [(value, {"via": "sasl_ssl"})]


@pytest.mark.parametrize(
    ("mechanism", "username"), [("scram-sha-256", SCRAM_USER), ("plain", PLAIN_USER)]
)
def test_sasl_ssl_wrong_password_is_an_authentication_error(
    secured: Secured, mechanism: str, username: str
) -> None:
    """A wrong password: KafkaJS's connect fails with its SASL authentication error,
    naming the mechanism and carrying the broker's reason (Kafka's wording), at once
    rather than after retries."""
    args = {**secured.args(mechanism, username, "not-the-password"), "retries": 0}
    answer = run("connect", args)
    error = answer["error"]
    assert error["name"] == "KafkaJSSASLAuthenticationError", error
    label = {"scram-sha-256": "SCRAM SHA256", "plain": "PLAIN"}[mechanism]
    assert error["message"].startswith(f"SASL {label} authentication failed"), error
    reason = {
        "scram-sha-256": "due to invalid credentials with SASL mechanism SCRAM-SHA-256",
        "plain": "Invalid username or password",
    }[mechanism]
    assert reason in error["message"], error
