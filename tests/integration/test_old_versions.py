"""Old protocol versions and small answers real clients compare, on one real broker.

- ListOffsets v0: the segment boundaries before a time, newest first (max_num_offsets);
- Metadata v0: an empty topic list means every topic;
- OffsetCommit v0 / OffsetFetch v0: offsets stored in ZooKeeper under
  /consumers/<group>/offsets/<topic>/<partition>, by our protocol package and by
  kafka-python configured for a 0.8.1 broker (which sends v0);
- FindCoordinator: a success carries the error message ``NONE`` (v1-3 and v4);
- KIP-467 with confluent-kafka: 10 keyless records of 100 in one batch to a compacted
  topic fail with INVALID_RECORD, the other 90 with librdkafka's "invalid different
  record" error (``_INVALID_DIFFERENT_RECORD``, -138); the Produce v9 answer itself names
  the records and carries Kafka's message.

One single-broker cluster is shared by the module; every wait is a poll with a deadline.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from protocol import ApiKey, ErrorCode
from protocol.messages import (
    FindCoordinatorRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ProduceRequest,
)
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.zk_fixtures import kazoo_session
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(120)

RECORDS = 30


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    overrides = (("offsets.topic.replication.factor", "1"), ("offsets.topic.num.partitions", "1"))
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("old-versions"), 1, overrides)


@pytest.fixture(scope="module")
def admin(c: TestCluster) -> AdminClient:
    wait_until(lambda: c.controller() is not None, 30, "a controller")
    return AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})


def create(admin: AdminClient, name: str, **config: str) -> None:
    admin.create_topics([NewTopic(name, 1, 1, config=config)], operation_timeout=30)[name].result(
        60
    )


def produce_one_by_one(c: TestCluster, topic: str, n: int) -> None:
    """``n`` records, each its own batch (so small segments roll between them)."""
    producer = Producer({"bootstrap.servers": c.layout.bootstrap_servers, "linger.ms": 0})
    for i in range(n):
        producer.produce(topic, key=b"k%d" % i, value=b"x" * 100)
        producer.flush(10)
    assert producer.flush(10) == 0


def _list_offsets_v0(c: TestCluster, topic: str, timestamp: int, max_num: int) -> list[int]:
    Topic = ListOffsetsRequest.ListOffsetsTopic
    Partition = ListOffsetsRequest.ListOffsetsPartition
    body = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            Topic(
                name=topic,
                partitions=[
                    Partition(partition_index=0, timestamp=timestamp, max_num_offsets=max_num)
                ],
            )
        ],
    )
    answer = c.request(0, ApiKey.LIST_OFFSETS, 0, body).topics[0].partitions[0]
    assert answer.error_code == ErrorCode.NONE
    return list(answer.old_style_offsets)


def test_list_offsets_v0_answers_segment_boundaries_newest_first(
    c: TestCluster, admin: AdminClient
) -> None:
    create(admin, "v0-offsets", **{"segment.bytes": "1024"})
    produce_one_by_one(c, "v0-offsets", RECORDS)
    segments = sorted(
        int(p.name.split(".")[0]) for p in c.layout.log_dir(0).glob("v0-offsets-0/*.log")
    )
    assert len(segments) >= 3, segments
    everything = _list_offsets_v0(c, "v0-offsets", LATEST_TIMESTAMP, 100)
    # the log end (the last segment holds records), then each segment's base offset
    assert everything == [RECORDS, *reversed(segments)]
    assert _list_offsets_v0(c, "v0-offsets", LATEST_TIMESTAMP, 1) == [RECORDS]
    assert _list_offsets_v0(c, "v0-offsets", LATEST_TIMESTAMP, 2) == [RECORDS, segments[-1]]
    assert _list_offsets_v0(c, "v0-offsets", EARLIEST_TIMESTAMP, 10) == [0]
    # a time before any segment was written: nothing
    assert _list_offsets_v0(c, "v0-offsets", 1, 10) == []


def test_metadata_v0_empty_topic_list_means_every_topic(c: TestCluster, admin: AdminClient) -> None:
    create(admin, "v0-meta")
    answer = c.request(0, ApiKey.METADATA, 0, MetadataRequest(topics=[]))
    assert "v0-meta" in {t.name for t in answer.topics}
    assert [b.node_id for b in answer.brokers] == [0]
    v1 = c.request(0, ApiKey.METADATA, 1, MetadataRequest(topics=[]))
    assert v1.topics == []  # from v1 the empty list means none


def test_offset_commit_and_fetch_v0_live_in_zookeeper(c: TestCluster, admin: AdminClient) -> None:
    create(admin, "v0-commits")
    CommitTopic = OffsetCommitRequest.OffsetCommitRequestTopic
    CommitPartition = OffsetCommitRequest.OffsetCommitRequestPartition
    commit = OffsetCommitRequest(
        group_id="zk-group",
        topics=[
            CommitTopic(
                name="v0-commits",
                partitions=[
                    CommitPartition(partition_index=0, committed_offset=17, committed_metadata="m")
                ],
            ),
            CommitTopic(
                name="no-such-topic",
                partitions=[
                    CommitPartition(partition_index=0, committed_offset=1, committed_metadata="")
                ],
            ),
        ],
    )
    answer = c.request(0, ApiKey.OFFSET_COMMIT, 0, commit)
    errors = {
        (t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions
    }
    assert errors == {
        ("v0-commits", 0): ErrorCode.NONE,
        ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    with kazoo_session(c.zk_connect) as zk:
        data, _ = zk.get("/consumers/zk-group/offsets/v0-commits/0")
        assert data == b"17"
        assert zk.exists("/consumers/zk-group/offsets/no-such-topic") is None
        zk.set("/consumers/zk-group/offsets/v0-commits/0", b"23")  # as an old tool would
    FetchTopic = OffsetFetchRequest.OffsetFetchRequestTopic
    fetch = OffsetFetchRequest(
        group_id="zk-group",
        topics=[FetchTopic(name="v0-commits", partition_indexes=[0])],
    )
    fetched = c.request(0, ApiKey.OFFSET_FETCH, 0, fetch).topics[0].partitions[0]
    assert (fetched.committed_offset, fetched.metadata, fetched.error_code) == (23, "", 0)
    # v1+ read __consumer_offsets, which v0 never wrote
    v1 = c.request(0, ApiKey.OFFSET_FETCH, 1, fetch).topics[0].partitions[0]
    assert v1.committed_offset == -1
    other = OffsetFetchRequest(
        group_id="another-group", topics=[FetchTopic(name="v0-commits", partition_indexes=[0])]
    )
    never = c.request(0, ApiKey.OFFSET_FETCH, 0, other).topics[0].partitions[0]
    assert (never.committed_offset, never.error_code) == (-1, ErrorCode.NONE)


def test_kafka_python_for_a_0_8_1_broker_commits_to_zookeeper(
    c: TestCluster, admin: AdminClient
) -> None:
    from kafka import KafkaConsumer
    from kafka.structs import OffsetAndMetadata
    from kafka.structs import TopicPartition as KTopicPartition

    create(admin, "v0-kafka-python")
    consumer = KafkaConsumer(
        bootstrap_servers=c.layout.bootstrap_servers,
        group_id="kp-zk-group",
        api_version=(0, 8, 1),
        enable_auto_commit=False,
    )
    try:
        tp = KTopicPartition("v0-kafka-python", 0)
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(41, "", -1)})
        with kazoo_session(c.zk_connect) as zk:
            data, _ = zk.get("/consumers/kp-zk-group/offsets/v0-kafka-python/0")
            assert data == b"41"
        assert consumer.committed(tp) == 41
    finally:
        consumer.close()


def test_find_coordinator_success_says_none(c: TestCluster) -> None:
    def found(version: int) -> Any:
        if version >= 4:
            body = FindCoordinatorRequest(coordinator_keys=["g"], key_type=0)
        else:
            body = FindCoordinatorRequest(key="g", key_type=0)
        answer = c.request(0, ApiKey.FIND_COORDINATOR, version, body)
        answer = answer.coordinators[0] if version >= 4 else answer
        return answer if answer.error_code == ErrorCode.NONE else None

    for version in (1, 3, 4):
        answer = wait_until(functools.partial(found, version), 30, f"FindCoordinator v{version}")
        assert answer.error_message == "NONE"


def test_kip_467_names_exactly_the_invalid_records(c: TestCluster, admin: AdminClient) -> None:
    create(admin, "kip467", **{"cleanup.policy": "compact"})
    producer = Producer(
        {
            "bootstrap.servers": c.layout.bootstrap_servers,
            "linger.ms": 2000,
            "batch.num.messages": 1000,
            "enable.idempotence": False,
            "retries": 0,
        }
    )
    invalid = set(range(5, 100, 10))
    reports: dict[int, KafkaError | None] = {}

    def report(i: int, err: KafkaError | None, _msg: object) -> None:
        reports[i] = err

    for i in range(100):
        key = None if i in invalid else b"k%d" % i
        producer.produce(
            "kip467",
            key=key,
            value=b"v%d" % i,
            on_delivery=functools.partial(report, i),
        )
    assert producer.flush(30) == 0
    assert len(reports) == 100
    codes = {i: (err.code() if err is not None else None) for i, err in reports.items()}
    assert {i for i, code in codes.items() if code == KafkaError.INVALID_RECORD} == invalid
    others = {i for i, code in codes.items() if code == KafkaError._INVALID_DIFFERENT_RECORD}
    assert others == set(range(100)) - invalid
    # the answer itself, read with our protocol package: Produce v9 names the records
    batch = build_batch([SimpleRecord(None if i in (2, 7) else b"k", b"v") for i in range(9)])
    Topic, Partition = ProduceRequest.TopicProduceData, ProduceRequest.PartitionProduceData
    body = ProduceRequest(
        acks=1,
        timeout_ms=10_000,
        topic_data=[Topic(name="kip467", partition_data=[Partition(index=0, records=batch)])],
    )
    answer = c.request(0, ApiKey.PRODUCE, 9, body).responses[0].partition_responses[0]
    why = "Compacted topic cannot accept message without key in topic partition kip467-0."
    assert answer.error_code == ErrorCode.INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [
        (2, why),
        (7, why),
    ]
    assert answer.error_message == (
        "One or more records have been rejected due to 2 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=2, message='{why}'), "
        f"RecordError(batchIndex=7, message='{why}')]"
    )
