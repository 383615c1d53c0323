"""The legacy message formats end to end: clients of old brokers produce and consume.

One broker (``minikafka server`` as ``cluster up`` runs it) serves real clients:

- kcat (librdkafka) with ``api.version.request=false`` and ``broker.version.fallback``
  0.9.0 (Produce v1 with magic 0 message sets, Fetch v1 reading magic 0), compressed and
  not: what it reads back is what it wrote, offsets included; with 0.10.0 too, which
  librdkafka 2.0 takes as a broker that answers ApiVersions (it asks, then uses current
  versions), so that case checks that such a configuration keeps working;
- a current consumer (confluent-kafka, Fetch v12) reads what old producers wrote,
  up-converted to v2 batches: magic 0 messages with no timestamp, magic 1 with theirs;
- kafka-python configured for 0.9 and 0.10 brokers (``api_version``) produces magic 0 and
  magic 1 sets (gzip, lz4, snappy: compressed wrappers) and reads them back with Fetch
  v1 and v2, down-converted;
- an old consumer (kafka-python at 0.10, Fetch v2) reads what a current producer wrote in
  compressed v2 batches, down-converted, with the producer's offsets and timestamps, and
  a Fetch v1 from the middle of a compressed batch gets its whole wrapper;
- a topic with ``message.downconversion.enable=false`` answers a Fetch v3 with
  UNSUPPORTED_VERSION, while a Fetch v4 reads it; the broker counts the conversions.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from protocol import SUPPORTED_VERSIONS, ApiKey, ErrorCode
from protocol.messages import CreateTopicsRequest, FetchRequest
from protocol.records.legacy import deep_messages, iter_messages
from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

KCAT = shutil.which("kcat")

pytestmark = [
    pytest.mark.timeout(120),
    # Metadata v0 (librdkafka and kafka-python at 0.9) is served by the work on the other
    # APIs' old versions; with it, every case here runs
    pytest.mark.skipif(KCAT is None, reason="kcat is not installed"),
]

#: librdkafka and kafka-python configured for 0.9 brokers ask Metadata v0, served by the
#: work on the other APIs' old versions: until then their cases are skipped
METADATA_V0 = SUPPORTED_VERSIONS[ApiKey.METADATA][0] == 0
needs_metadata_v0 = pytest.mark.skipif(not METADATA_V0, reason="Metadata v0 is not served yet")
OLD_09 = ("-X", "api.version.request=false", "-X", "broker.version.fallback=0.9.0")
OLD_010 = ("-X", "api.version.request=false", "-X", "broker.version.fallback=0.10.0")
TOPICS: dict[str, dict[str, str]] = {
    "fmt-v0": {},
    "fmt-v0-gzip": {},
    "fmt-v1-lz4": {},
    "fmt-v1-snappy": {},
    "fmt-down": {},
    "fmt-kp-09": {},
    "fmt-kp-010-lz4": {},
    "fmt-kp-010-snappy": {},
    "fmt-noconv": {"message.downconversion.enable": "false"},
}


@pytest.fixture(scope="module")
def c(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    for cluster in start_cluster(zookeeper, tmp_path_factory.mktemp("formats"), 1):
        _create_topics(cluster)
        yield cluster


def _create_topics(cluster: TestCluster) -> None:
    wait_until(lambda: cluster.local.metadata_complete(), 30, "the broker's metadata")
    new = [
        CreateTopicsRequest.CreatableTopic(
            name=name,
            num_partitions=1,
            replication_factor=1,
            configs=[
                CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                for k, v in configs.items()
            ],
        )
        for name, configs in TOPICS.items()
    ]
    body = CreateTopicsRequest(topics=new, timeout_ms=30_000, validate_only=False)
    response = cluster.request(0, ApiKey.CREATE_TOPICS, 7, body)
    assert [t.error_code for t in response.topics] == [ErrorCode.NONE] * len(TOPICS)
    wait_until(lambda: _leaders_known(cluster), 30, "leaders of the module's topics")


def _leaders_known(c: TestCluster) -> bool:
    topics = c.metadata(0, list(TOPICS)).topics
    return all(p.leader_id >= 0 for t in topics for p in t.partitions) and len(topics) == len(
        TOPICS
    )


def topic_metric(c: TestCluster, name: str, topic: str) -> float | None:
    """The broker's sample of ``name`` for ``topic``."""
    with urllib.request.urlopen(c.layout.metrics_url(0), timeout=5) as response:
        text = response.read().decode()
    prefix = f'{name}{{topic="{topic}"}} '
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix) :])
    return None


def kcat(c: TestCluster, *args: str, stdin: bytes | None = None) -> str:
    assert KCAT is not None
    cmd = [KCAT, "-b", c.layout.bootstrap_servers, *args]
    done = subprocess.run(cmd, input=stdin, capture_output=True, timeout=30, check=False)
    assert done.returncode == 0, f"{' '.join(cmd)}: {done.stderr.decode(errors='replace')}"
    return done.stdout.decode()


def kcat_produce(c: TestCluster, topic: str, lines: list[str], *opts: str) -> None:
    data = "".join(line + "\n" for line in lines).encode()
    kcat(c, "-P", "-t", topic, "-p", "0", "-K", "\t", *opts, stdin=data)


def kcat_consume(c: TestCluster, topic: str, *opts: str) -> list[dict[str, Any]]:
    # an absolute offset: a logical one would need ListOffsets v0 from a 0.9/0.10 client
    out = kcat(c, "-C", "-t", topic, "-p", "0", "-o", "0", "-e", "-J", "-q", *opts)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def confluent_consume(c: TestCluster, topic: str, count: int) -> list[Any]:
    """A current consumer (Fetch v12) reads ``count`` records from the start."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": c.layout.bootstrap_servers,
            "group.id": f"fmt-{topic}",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got: list[Any] = []
        deadline = time.monotonic() + 20
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                got.append(message)
        return got
    finally:
        consumer.close()


def kafka_python_consume(
    c: TestCluster, topic: str, api_version: tuple[int, int], count: int
) -> list[Any]:
    """kafka-python as a client of an ``api_version`` broker (Fetch v2 for 0.10) reads
    ``count`` records from offset 0 of partition 0 (no group, no offset lookup)."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpPartition

    consumer = KafkaConsumer(
        bootstrap_servers=c.layout.bootstrap_servers,
        api_version=api_version,
        enable_auto_commit=False,
        group_id=None,
    )
    try:
        tp = KpPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got: list[Any] = []
        deadline = time.monotonic() + 20
        while len(got) < count and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                got.extend(batch)
        return got
    finally:
        consumer.close()


LINES = ["k0\tzero", "k1\tone", "k2\ttwo", "k3\tthree"]
EXPECTED = [("k0", "zero"), ("k1", "one"), ("k2", "two"), ("k3", "three")]


@pytest.mark.parametrize(
    ("topic", "old", "codec"),
    [
        pytest.param("fmt-v0", OLD_09, "none", marks=needs_metadata_v0),
        pytest.param("fmt-v0-gzip", OLD_09, "gzip", marks=needs_metadata_v0),
        ("fmt-v1-lz4", OLD_010, "lz4"),
        ("fmt-v1-snappy", OLD_010, "snappy"),
    ],
)
def test_old_kcat_produces_and_consumes(
    c: TestCluster, topic: str, old: tuple[str, ...], codec: str
) -> None:
    before_ms = int(time.time() * 1000)
    kcat_produce(c, topic, LINES, *old, "-z", codec)
    kcat_produce(c, topic, LINES[:1], *old)
    read = kcat_consume(c, topic, *old)
    assert [(r["key"], r["payload"]) for r in read] == [*EXPECTED, EXPECTED[0]]
    assert [r["offset"] for r in read] == [0, 1, 2, 3, 4]
    magic_1 = old is OLD_010
    current = confluent_consume(c, topic, 5)
    assert [(m.key(), m.value()) for m in current] == [
        (k.encode(), v.encode()) for k, v in [*EXPECTED, EXPECTED[0]]
    ]
    assert [m.offset() for m in current] == [0, 1, 2, 3, 4]
    if magic_1:
        # magic 1 messages carry the producer's timestamps, and the old reader gets them back
        stamps = [m.timestamp()[1] for m in current]
        assert all(before_ms <= ts <= int(time.time() * 1000) for ts in stamps), stamps
        assert [r["ts"] for r in read] == stamps
    else:
        # magic 0 messages have no timestamp: CreateTime with NO_TIMESTAMP (-1)
        assert [m.timestamp()[1] for m in current] == [-1] * 5


#: compressible, so that librdkafka keeps the batch compressed (it sends a batch
#: uncompressed when compression does not make it smaller)
VALUE = b"v%d" + b"-abc" * 50


def test_old_consumer_reads_compressed_v2_batches_down_converted(c: TestCluster) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": c.layout.bootstrap_servers,
            "compression.type": "gzip",
            "linger.ms": 50,
        }
    )
    stamps = [1_700_000_000_000 + i for i in range(6)]
    for i, ts in enumerate(stamps):
        producer.produce("fmt-down", key=b"k%d" % i, value=VALUE % i, timestamp=ts, partition=0)
    producer.flush(10)
    producer.produce("fmt-down", key=None, value=b"last", timestamp=stamps[-1] + 1, partition=0)
    assert producer.flush(10) == 0
    metric = "minikafka_topic_fetch_message_conversions_total"
    before = topic_metric(c, metric, "fmt-down") or 0
    read = kafka_python_consume(c, "fmt-down", (0, 10), 7)  # Fetch v2: magic 1
    assert [(r.key, r.value, r.offset) for r in read] == [
        *[(b"k%d" % i, VALUE % i, i) for i in range(6)],
        (None, b"last", 6),
    ]
    assert [r.timestamp for r in read] == [*stamps, stamps[-1] + 1]
    assert topic_metric(c, metric, "fmt-down") == before + 7
    before = topic_metric(c, metric, "fmt-down") or 0
    # Fetch v1 from the middle of the compressed batch: magic 0, and the whole wrapper
    # (a wrapper is indivisible: the client skips the offsets before its own)
    v1 = _fetch(c, "fmt-down", 1, offset=4)
    assert v1.error_code == ErrorCode.NONE
    shallow = [m for _, m in iter_messages(bytes(v1.records))]
    assert [(m.magic, m.compression) for m in shallow] == [(0, 1), (0, 0)]
    deep = [d for m in shallow for d in deep_messages(m)]
    assert [(d.offset, d.value) for d in deep] == [
        *[(i, VALUE % i) for i in range(6)],
        (6, b"last"),
    ]
    # the 7 records converted to magic 0 for the Fetch v1
    assert topic_metric(c, metric, "fmt-down") == before + 7


@pytest.mark.parametrize(
    ("api_version", "topic", "codec"),
    [
        pytest.param((0, 9), "fmt-kp-09", "gzip", marks=needs_metadata_v0),
        ((0, 10), "fmt-kp-010-lz4", "lz4"),
        ((0, 10), "fmt-kp-010-snappy", "snappy"),
    ],
)
def test_kafka_python_as_a_client_of_old_brokers(
    c: TestCluster, api_version: tuple[int, int], topic: str, codec: str
) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=c.layout.bootstrap_servers,
        api_version=api_version,
        compression_type=codec,
        linger_ms=20,
    )
    try:
        futures = [producer.send(topic, key=b"k", value=b"%d" % i, partition=0) for i in range(3)]
        producer.flush(10)
        assert [f.get(10).offset for f in futures] == [0, 1, 2]
    finally:
        producer.close(5)
    current = confluent_consume(c, topic, 3)
    assert [(m.key(), m.value(), m.offset()) for m in current] == [
        (b"k", b"0", 0), (b"k", b"1", 1), (b"k", b"2", 2),
    ]  # fmt: skip
    stamps = [m.timestamp()[1] for m in current]
    if api_version == (0, 9):
        assert stamps == [-1] * 3  # magic 0: no timestamps
    else:
        assert all(ts > 1_600_000_000_000 for ts in stamps), stamps
    # and read back as that client: Fetch v1 (magic 0) or v2 (magic 1), down-converted
    old = kafka_python_consume(c, topic, api_version, 3)
    assert [(r.key, r.value, r.offset, r.timestamp) for r in old] == [
        (m.key(), m.value(), m.offset(), None if api_version == (0, 9) else m.timestamp()[1])
        for m in current
    ]
    assert topic_metric(c, "minikafka_topic_produce_message_conversions_total", topic) == 3


def _fetch(c: TestCluster, topic: str, version: int, offset: int = 0) -> Any:
    body = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
                    )
                ],
            )
        ],
    )
    response = c.request(0, ApiKey.FETCH, version, body)
    return response.responses[0].partitions[0]


def test_downconversion_disabled_on_a_topic(c: TestCluster) -> None:
    kcat_produce(c, "fmt-noconv", LINES[:2], "-X", "acks=1")
    refused = _fetch(c, "fmt-noconv", 3)
    assert refused.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert bytes(refused.records or b"") == b""
    served = _fetch(c, "fmt-noconv", 4)
    assert served.error_code == ErrorCode.NONE
    assert bytes(served.records)[16] == 2  # v4 reads the v2 batches as they are
    converted = _fetch(c, "fmt-down", 0)
    assert converted.error_code == ErrorCode.NONE
    assert bytes(converted.records)[16] == 0  # magic 0 for Fetch v0
