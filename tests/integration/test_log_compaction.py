"""Log compaction end to end: confluent-kafka writes keyed records, overwrites and
deletes, to a cleanup.policy=compact topic with small segments on a one-broker cluster
whose cleaner wakes often; once the cleaner has run, a consumer from the beginning sees
exactly the latest value per key (deleted keys absent or as tombstones), in offset
order, with gaps where overwritten records were. A record without a key is refused with
INVALID_RECORD."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.keyed_producer import produce_small_batches
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(120)

TOPIC = "compacted"
KEYS = 10
ROUNDS = 20


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    overrides = (("log.cleaner.backoff.ms", "200"),)
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("compaction"), 1, overrides)


def read_all(c: TestCluster) -> list[tuple[int, bytes | None, bytes | None]]:
    consumer = Consumer({
        "bootstrap.servers": c.layout.bootstrap_servers, "group.id": "compaction-test",
        "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 100,
    })  # fmt: skip
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    rows: list[tuple[int, bytes | None, bytes | None]] = []
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is None:
                continue
            err = m.error()
            if err is not None:
                assert err.code() == KafkaError._PARTITION_EOF, err
                return rows
            offset = m.offset()
            assert offset is not None
            rows.append((offset, m.key(), m.value()))
    finally:
        consumer.close()
    raise AssertionError("no end of partition within 20 s")


def test_a_consumer_sees_the_latest_value_per_key_after_cleaning(c: TestCluster) -> None:
    wait_until(lambda: c.controller() is not None, 30, "a controller")
    topic = NewTopic(TOPIC, 1, 1, config={
        "cleanup.policy": "compact", "segment.bytes": "1024",
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "600000",
    })  # fmt: skip
    client = AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})  # alive until done
    client.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
    records: list[tuple[bytes | None, bytes | None]] = [
        (b"key-%d" % k, b"value-%d-%d" % (k, r)) for r in range(ROUNDS) for k in range(KEYS)
    ]
    records.append((b"key-0", None))  # a delete
    assert produce_small_batches(c, TOPIC, records) == [None] * len(records)
    refused = produce_small_batches(c, TOPIC, [(None, b"no key")])
    assert refused[0] is not None and refused[0].code() == KafkaError.INVALID_RECORD

    wait_until(lambda: (c.metric(0, "minikafka_log_cleaner_passes_total") or 0) >= 1, 30, "a pass")

    def compacted() -> list[tuple[int, bytes | None, bytes | None]] | None:
        rows = read_all(c)
        return rows if len(rows) < len(records) else None

    rows = wait_until(compacted, 30, "a compacted log")
    offsets = [o for o, _, _ in rows]
    assert offsets == sorted(offsets) and offsets[-1] == len(records) - 1
    latest: dict[bytes, bytes | None] = {}
    for _, key, value in rows:
        assert key is not None
        latest[key] = value
    expected = {b"key-%d" % k: b"value-%d-%d" % (k, ROUNDS - 1) for k in range(1, KEYS)}
    assert {k: v for k, v in latest.items() if v is not None} == expected
    assert latest.get(b"key-0") is None
    assert c.metric(0, "minikafka_log_cleaner_uncleanable_partitions") == 0
