"""Incremental fetch sessions (KIP-227) on a real 3-broker cluster.

One cluster for the module. The topics' partitions are placed by hand with broker 0 as
their preferred leader, so a test knows whom to ask. Covered: a full fetch opening a
session, incremental fetches that name nothing and get only the partitions with news,
adding and forgetting partitions, the epoch and unknown-session errors, closing a
session, the session cache's bound; followers replicating through their sessions while a
follower restarts and while leadership moves (replicas identical afterwards);
kafka-python consuming through a session, and confluent-kafka (librdkafka, session id 0)
still served.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from protocol import ApiKey, ErrorCode
from protocol.messages import CreateTopicsRequest, FetchRequest, ProduceRequest
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.replication_chaos import ChaosCluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(240)

SLOTS = 6
OVERRIDES = (
    ("replica.fetch.backoff.ms", "200"),
    ("max.incremental.fetch.session.cache.slots", str(SLOTS)),
)


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("sessions"), 3, OVERRIDES)


# -- helpers ----------------------------------------------------------------------------


def create_topic(c: TestCluster, name: str, partitions: int) -> None:
    """Replicas [0, 1, 2] rotated so broker 0 leads every partition."""
    assignments = [
        CreateTopicsRequest.CreatableReplicaAssignment(
            partition_index=p, broker_ids=[0, 1 + p % 2, 2 - p % 2]
        )
        for p in range(partitions)
    ]
    topic = CreateTopicsRequest.CreatableTopic(
        name=name,
        num_partitions=-1,
        replication_factor=-1,
        assignments=assignments,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name="min.insync.replicas", value="2")],
    )
    body = CreateTopicsRequest(topics=[topic], timeout_ms=20_000, validate_only=False)
    controller = wait_until(c.controller, 30, "a controller")
    (result,) = c.request(controller, ApiKey.CREATE_TOPICS, 7, body).topics
    assert result.error_code == ErrorCode.NONE, result.error_message
    chaos = ChaosCluster(c.local)
    try:
        chaos.wait_isr_full(name, range(partitions), 3, 30)
    finally:
        chaos.close()


def produce(
    c: TestCluster, topic: str, partition: int, value: bytes, acks: int = 1, broker: int = 0
) -> int:
    """One record to ``broker`` (the leader); its offset."""
    now = int(time.time() * 1000)
    records = bytes(build_batch([SimpleRecord(None, value, (), now)]))
    data = ProduceRequest.PartitionProduceData(index=partition, records=records)
    body = ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=10_000,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[data])],
    )
    (part,) = c.request(broker, ApiKey.PRODUCE, 7, body).responses[0].partition_responses
    assert part.error_code == ErrorCode.NONE, ErrorCode(part.error_code).name
    return int(part.base_offset)


def fetch(
    c: TestCluster,
    session_id: int,
    epoch: int,
    partitions: dict[tuple[str, int], int],
    forgotten: tuple[tuple[str, int], ...] = (),
) -> Any:
    """One consumer Fetch (v12, max wait 0) to broker 0."""
    topics: dict[str, list[FetchRequest.FetchPartition]] = {}
    for (topic, p), offset in partitions.items():
        topics.setdefault(topic, []).append(
            FetchRequest.FetchPartition(
                partition=p,
                current_leader_epoch=-1,
                fetch_offset=offset,
                last_fetched_epoch=-1,
                log_start_offset=-1,
                partition_max_bytes=1 << 20,
            )
        )
    dropped: dict[str, list[int]] = {}
    for topic, p in forgotten:
        dropped.setdefault(topic, []).append(p)
    body = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 24,
        isolation_level=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
        forgotten_topics_data=[
            FetchRequest.ForgottenTopic(topic=t, partitions=ps) for t, ps in dropped.items()
        ],
        rack_id="",
    )
    return c.request(0, ApiKey.FETCH, 12, body)


def answered(response: Any) -> dict[tuple[str, int], int]:
    """(topic, partition) -> bytes of records, for each partition the response carries."""
    return {
        (t.topic, p.partition_index): len(p.records or b"")
        for t in response.responses
        for p in t.partitions
    }


def identical(c: TestCluster, topic: str, partitions: int) -> None:
    chaos = ChaosCluster(c.local)
    try:
        for p in range(partitions):
            chaos.wait_replicas_identical(topic, p, (0, 1, 2), 30)
    finally:
        chaos.close()


# -- tests ------------------------------------------------------------------------------


def test_full_incremental_add_and_forget(c: TestCluster) -> None:
    create_topic(c, "sess", 2)
    a, b = ("sess", 0), ("sess", 1)
    full = fetch(c, 0, 0, {a: 0, b: 0})
    assert full.error_code == ErrorCode.NONE and full.session_id != 0
    assert answered(full) == {a: 0, b: 0}  # a full answer names every partition
    sid = full.session_id
    quiet = fetch(c, sid, 1, {})
    assert quiet.error_code == ErrorCode.NONE and quiet.session_id == sid
    assert answered(quiet) == {}  # nothing new anywhere
    produce(c, "sess", 1, b"x" * 50, acks=-1)  # acknowledged: below the high watermark
    news = fetch(c, sid, 2, {})
    assert list(answered(news)) == [b] and answered(news)[b] > 0  # only the news
    assert answered(fetch(c, sid, 3, {b: 1})) == {}  # moved past it: nothing new
    forgot = fetch(c, sid, 4, {}, forgotten=(a,))
    assert answered(forgot) == {}
    produce(c, "sess", 0, b"y" * 50, acks=-1)
    assert answered(fetch(c, sid, 5, {})) == {}  # a is no longer in the session
    back = fetch(c, sid, 6, {a: 0})
    assert list(answered(back)) == [a] and answered(back)[a] > 0
    closed = fetch(c, sid, -1, {a: 1})
    assert closed.session_id == 0 and answered(closed) == {a: 0}
    gone = fetch(c, sid, 7, {})
    assert gone.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_epoch_errors_leave_the_session_usable(c: TestCluster) -> None:
    full = fetch(c, 0, 0, {("sess", 0): 0})
    sid = full.session_id
    assert sid != 0
    wrong = fetch(c, sid, 5, {})
    assert wrong.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert wrong.session_id == 0 and wrong.responses == []
    assert fetch(c, sid, 1, {}).error_code == ErrorCode.NONE
    assert fetch(c, sid, 1, {}).error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH  # replayed
    unknown = fetch(c, sid + 1 if sid < 0x7FFFFFFF else 1, 1, {})
    assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    fetch(c, sid, -1, {})  # close it


def test_the_session_cache_is_bounded(c: TestCluster) -> None:
    """Broker 0 keeps at most SLOTS sessions: its followers' and these consumers'; a
    consumer finding no room is served in full, sessionless, and replication goes on."""
    opened: list[int] = []
    refused = None
    for _ in range(SLOTS + 1):
        full = fetch(c, 0, 0, {("sess", 1): 0})
        assert full.error_code == ErrorCode.NONE and answered(full)[("sess", 1)] > 0
        if full.session_id == 0:
            refused = full
            break
        opened.append(full.session_id)
    try:
        assert refused is not None and len(opened) < SLOTS  # followers hold some slots
        produce(c, "sess", 1, b"still replicated", acks=-1)
    finally:
        for sid in opened:
            fetch(c, sid, -1, {})


def test_kafka_python_consumes_through_a_session(c: TestCluster) -> None:
    create_topic(c, "kp", 3)
    values = {p: [b"kp-%d-%d" % (p, i) for i in range(20)] for p in range(3)}
    for p, vs in values.items():
        for v in vs[:10]:
            produce(c, "kp", p, v, acks=-1)
    consumer = KafkaConsumer(
        bootstrap_servers=c.layout.bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        consumer_timeout_ms=20_000,
    )
    try:
        consumer.assign([KafkaTopicPartition("kp", p) for p in range(3)])
        got: dict[int, list[bytes]] = {p: [] for p in range(3)}

        def read(upto: int) -> bool:
            for records in consumer.poll(timeout_ms=200).values():
                for r in records:
                    got[r.partition].append(r.value)
            return all(len(got[p]) >= upto for p in range(3))

        wait_until(lambda: read(10), 30, "the first ten records of each partition")
        for p, vs in values.items():  # more, read through the session's incremental fetches
            for v in vs[10:]:
                produce(c, "kp", p, v, acks=-1)
        wait_until(lambda: read(20), 30, "all records")
        assert got == values
        handlers = consumer._fetcher._session_handlers  # kafka-python's KIP-227 state
        sessions = [(h.next_metadata.session_id, h.next_metadata.epoch) for h in handlers.values()]
        # the full fetch opened a session and incremental fetches went on in it (the
        # records after the first ten came through them)
        assert any(sid != 0 and epoch >= 2 for sid, epoch in sessions), sessions
    finally:
        consumer.close()


def test_librdkafka_without_sessions_still_served(c: TestCluster) -> None:
    producer = Producer({"bootstrap.servers": c.layout.bootstrap_servers, "acks": "all"})
    for p in range(3):
        producer.produce("kp", b"rd-%d" % p, partition=p)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": c.layout.bootstrap_servers,
            "group.id": "rd-sessions",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe(["kp"])
        seen: set[bytes] = set()

        def read() -> bool:
            msg = consumer.poll(0.5)
            value = msg.value() if msg is not None and msg.error() is None else None
            if value is not None:
                seen.add(value)
            return {b"rd-0", b"rd-1", b"rd-2"} <= seen

        wait_until(read, 60, "librdkafka reads its records")
    finally:
        consumer.close()


def test_followers_replicate_through_sessions_across_restart_and_leader_change(
    c: TestCluster,
) -> None:
    create_topic(c, "moved", 4)
    for p in range(4):
        produce(c, "moved", p, b"before", acks=-1)
    chaos = ChaosCluster(c.local)
    try:
        # a follower restarts mid-session: it opens a new session and catches up
        chaos.kill(1)
        for p in range(4):
            produce(c, "moved", p, b"while 1 was down", acks=1)
        chaos.restart(1)
        chaos.wait_isr_full("moved", range(4), 3, 60)
        for p in range(4):
            produce(c, "moved", p, b"after", acks=-1)
        identical(c, "moved", 4)
        # the leader goes: followers fetch from the new leaders through new sessions
        chaos.kill(0)
        for p in range(4):
            chaos.wait_leader_moved("moved", p, 0, 60)
        for p in range(4):
            leader = chaos.state("moved", p).leader
            produce(c, "moved", p, b"new leader", acks=-1, broker=leader)
        chaos.restart(0)
        chaos.wait_isr_full("moved", range(4), 3, 60)
        identical(c, "moved", 4)
    finally:
        chaos.close()
