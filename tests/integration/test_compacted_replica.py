"""A replica added to a compacted partition copies the cleaned log as it is.

Compaction leaves batches with fewer records than their offset range, and empty ones
(each producer's last batch keeps its sequence state); a follower must copy them as
Kafka's does. On a two-broker cluster a cleanup.policy=compact partition on broker 0
gets keyed overwrites (confluent-kafka) until the cleaner has run, then is reassigned
to both brokers: broker 1 fetches the cleaned log from offset 0 and joins the ISR.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from protocol import ApiKey, ErrorCode
from protocol.messages import AlterPartitionReassignmentsRequest
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.keyed_producer import produce_small_batches
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(120)

TOPIC = "compacted-copy"
KEYS = 10
ROUNDS = 20


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    overrides = (("log.cleaner.backoff.ms", "200"),)
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("compacted-copy"), 2, overrides)


def isr(c: TestCluster, broker: int) -> list[int]:
    (topic,) = c.metadata(broker, [TOPIC]).topics
    (partition,) = topic.partitions
    return sorted(partition.isr_nodes)


def test_a_new_replica_copies_the_cleaned_log(c: TestCluster) -> None:
    wait_until(lambda: c.controller() is not None, 30, "a controller")
    topic = NewTopic(TOPIC, 1, replica_assignment=[[0]], config={
        "cleanup.policy": "compact", "segment.bytes": "1024",
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "600000",
    })  # fmt: skip
    client = AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})  # alive until done
    client.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
    records = [(b"key-%d" % k, b"value-%d-%d" % (k, r)) for r in range(ROUNDS) for k in range(KEYS)]
    assert produce_small_batches(c, TOPIC, records) == [None] * len(records)
    wait_until(lambda: (c.metric(0, "minikafka_log_cleaner_passes_total") or 0) >= 1, 30, "a pass")

    body = AlterPartitionReassignmentsRequest(
        timeout_ms=10_000,
        topics=[
            AlterPartitionReassignmentsRequest.ReassignableTopic(
                name=TOPIC,
                partitions=[
                    AlterPartitionReassignmentsRequest.ReassignablePartition(
                        partition_index=0, replicas=[0, 1]
                    )
                ],
            )
        ],
    )
    controller = c.controller()
    assert controller is not None
    response = c.request(controller, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, body)
    assert response.error_code == ErrorCode.NONE
    assert [p.error_code for t in response.responses for p in t.partitions] == [ErrorCode.NONE]
    # broker 1 joins the ISR only once its log has reached the leader's end
    wait_until(lambda: isr(c, 0) == [0, 1], 60, "broker 1 in the ISR")
    assert c.metric(1, "minikafka_replica_fetcher_max_lag") == 0
