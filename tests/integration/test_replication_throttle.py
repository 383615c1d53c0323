"""Replication throttles on a 2-broker cluster of real processes and a real ZooKeeper.

A partition holding 2 MB on broker 0 is moved to broker 1 with
``reassign-partitions --execute --throttle 200000``: the tool sets the topic's
throttled-replica lists and both brokers' rates, the leader (0) and the follower (1)
hold the copy to the rate, and the move completes no sooner than the bytes over the rate
allow, less the burst the quota's windows let through at the start. ``--verify`` then
clears the throttles, as DescribeConfigs shows.

The brokers run with quota windows shorter than Kafka's 11 one-second windows (3 of them)
and with 64 KB follower fetches, so that the burst a fresh quota allows (one window span
of the rate, at most) and the overshoot of one fetch are small beside the move, and the
bound is tight in a test of a few seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from broker.config.describe import ConfigSource
from protocol import ApiKey, ErrorCode
from protocol.messages import DescribeConfigsRequest
from protocol.values import TopicPartition
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.test_reassignment import create_topic, on_every_broker, tool, write_plan
from tests.polling import wait_until
from tools.main import main as minikafka
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(180)

RATE = 200_000  # bytes/s
WINDOWS, WINDOW_S = 3, 1
DATA_BYTES = 2_000_000
LONG_MAX = str(2**63 - 1)
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
THROTTLED_REPLICAS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
THROTTLED_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("throttle"),
        2,
        overrides=(
            ("replication.quota.window.num", str(WINDOWS)),
            ("replication.quota.window.size.seconds", str(WINDOW_S)),
            ("replica.fetch.max.bytes", "65536"),
            ("log.segment.delete.delay.ms", "500"),
        ),
    )


def configs(c: TestCluster, broker: int, resource_type: int, name: str) -> dict[str, Any]:
    """Every entry DescribeConfigs lists for a resource, by key."""
    body = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=resource_type, resource_name=name, configuration_keys=None
            )
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    (result,) = c.request(broker, ApiKey.DESCRIBE_CONFIGS, 4, body).results
    assert result.error_code == ErrorCode.NONE, result
    return {entry.name: entry for entry in result.configs}


def fill(c: TestCluster, topic: str, size: int) -> None:
    # batches no larger than a follower's fetch: a fetch carries at most one of them
    producer = Producer(
        {
            "bootstrap.servers": c.layout.bootstrap_servers,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 65536,
        }
    )
    value = b"x" * 10_000
    for _ in range(size // len(value)):
        producer.produce(topic, value, partition=0)
        producer.poll(0)
    assert producer.flush(30) == 0


def test_the_lists_are_listed_with_kafkas_defaults(c: TestCluster) -> None:
    tp = TopicPartition("throttle-listed", 0)
    create_topic(c, tp.topic, {0: [0]})
    entries = configs(c, 0, TOPIC_RESOURCE, tp.topic)
    for key in THROTTLED_REPLICAS:
        assert (
            entries[key].value == "" and entries[key].config_source == ConfigSource.DEFAULT_CONFIG
        )
    rates = configs(c, 0, BROKER_RESOURCE, "0")
    for key in THROTTLED_RATES:
        assert rates[key].value == LONG_MAX and not rates[key].read_only


def test_minikafka_configs_sets_them_and_refuses_a_malformed_list(
    c: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    tp = TopicPartition("throttle-configs", 0)
    create_topic(c, tp.topic, {0: [0]})
    base = ["configs", "--bootstrap-server", c.layout.bootstrap_servers]
    topic = [*base, "--entity-type", "topics", "--entity-name", tp.topic, "--alter"]
    assert minikafka([*topic, "--add-config", f"{THROTTLED_REPLICAS[0]}=[0:0,1:1]"]) == 0
    assert minikafka([*topic, "--add-config", f"{THROTTLED_REPLICAS[1]}=[0:x]"]) == 1
    assert "must be the literal '*' or a list of replicas" in capsys.readouterr().err
    broker = [*base, "--entity-type", "brokers", "--entity-name", "1", "--alter"]
    assert minikafka([*broker, "--add-config", f"{THROTTLED_RATES[1]}=4096"]) == 0
    wait_until(
        lambda: configs(c, 0, TOPIC_RESOURCE, tp.topic)[THROTTLED_REPLICAS[0]].value == "0:0,1:1",
        30,
        "the topic's leader-side list set",
    )
    wait_until(
        lambda: configs(c, 1, BROKER_RESOURCE, "1")[THROTTLED_RATES[1]].value == "4096",
        30,
        "broker 1's follower rate set",
    )
    assert configs(c, 0, BROKER_RESOURCE, "0")[THROTTLED_RATES[1]].value == LONG_MAX  # its own
    assert minikafka([*broker, "--delete-config", THROTTLED_RATES[1]]) == 0
    wait_until(
        lambda: configs(c, 1, BROKER_RESOURCE, "1")[THROTTLED_RATES[1]].value == LONG_MAX,
        30,
        "broker 1's follower rate removed",
    )


def test_a_throttled_reassignment_moves_no_faster_than_its_rate(
    c: TestCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tp = TopicPartition("throttle-moved", 0)
    create_topic(c, tp.topic, {0: [0]})
    fill(c, tp.topic, DATA_BYTES)
    plan = write_plan(tmp_path / "plan.json", {tp: [1]})

    started = time.monotonic()
    status, out = tool(
        c, capsys, "--execute", "--reassignment-json-file", plan, "--throttle", str(RATE)
    )
    assert status == 0, out
    assert f"The inter-broker throttle limit was set to {RATE} B/s" in out

    # leader side: the current replica; follower side: the one moving in; both rates
    wait_until(
        lambda: (
            throttles(c, tp.topic) == {0: ("0:0", "0:1", str(RATE)), 1: ("0:0", "0:1", str(RATE))}
        ),
        30,
        "the throttles set on every broker",
    )
    leader_rate = 'minikafka_replication_throttled_bytes_per_second{side="leader"}'
    wait_until(
        lambda: (c.metric(0, leader_rate) or 0) > 0,
        30,
        "the leader's throttled rate measured",
    )

    wait_until(lambda: on_every_broker(c, tp, [1]), 60, "the throttled move completed")
    elapsed = time.monotonic() - started
    # a fresh quota lets (windows - 1) windows' worth of the rate through as a burst, and
    # one fetch (64 kB) may overshoot: together less than the span of the windows
    # (measured: about 12.5 s for the 10 s the rate gives)
    assert elapsed >= DATA_BYTES / RATE - WINDOWS * WINDOW_S, elapsed

    status, out = tool(c, capsys, "--verify", "--reassignment-json-file", plan)
    assert status == 0, out
    assert f"Reassignment of partition {tp} is completed." in out
    assert "Clearing broker-level throttles on brokers 0,1" in out
    # each broker applies the deletions when ZooKeeper's change notification reaches it
    wait_until(
        lambda: throttles(c, tp.topic) == {0: ("", "", LONG_MAX), 1: ("", "", LONG_MAX)},
        30,
        "the throttles cleared on every broker",
    )


def throttles(c: TestCluster, topic: str) -> dict[int, tuple[str, str, str]]:
    """Per broker: the topic's two lists as it describes them, and its own two rates (one
    value, or both)."""
    out = {}
    for broker in (0, 1):
        lists = configs(c, broker, TOPIC_RESOURCE, topic)
        rates = configs(c, broker, BROKER_RESOURCE, str(broker))
        leader, follower = (lists[key].value for key in THROTTLED_REPLICAS)
        rate_values = {rates[key].value for key in THROTTLED_RATES}
        out[broker] = (leader, follower, ",".join(sorted(rate_values)))
    return out


def test_cancel_clears_the_throttles_unless_they_are_preserved(
    c: TestCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As Kafka's tool: ``--cancel`` removes the throttles of the file's moves (a
    cancelled move needs none), ``--cancel --preserve-throttles`` leaves them."""
    tp = TopicPartition("throttle-cancelled", 0)
    create_topic(c, tp.topic, {0: [0]})
    fill(c, tp.topic, 500_000)  # 50 s at the rate below: still moving when cancelled
    plan = write_plan(tmp_path / "plan.json", {tp: [1]})
    status, out = tool(
        c, capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "10000"
    )
    assert status == 0, out
    throttled = {0: ("0:0", "0:1", "10000"), 1: ("0:0", "0:1", "10000")}
    wait_until(lambda: throttles(c, tp.topic) == throttled, 30, "the throttles set")

    status, out = tool(
        c, capsys, "--cancel", "--reassignment-json-file", plan, "--preserve-throttles"
    )
    assert status == 0, out
    assert f"Successfully cancelled partition reassignment for: {tp}" in out
    assert "Clearing" not in out
    assert throttles(c, tp.topic) == throttled

    status, out = tool(c, capsys, "--cancel", "--reassignment-json-file", plan)
    assert status == 0, out
    assert "None of the specified partition reassignments are active." in out
    assert "Clearing broker-level throttles on brokers 0,1" in out
    assert f"Clearing topic-level throttles on topic {tp.topic}" in out
    wait_until(
        lambda: throttles(c, tp.topic) == {0: ("", "", LONG_MAX), 1: ("", "", LONG_MAX)},
        30,
        "the throttles cleared on every broker",
    )
