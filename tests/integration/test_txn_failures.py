"""Transactions under failures and bad input, on a real 3-broker cluster, with
confluent-kafka's transactional producer and read_committed consumer.

Failures (each checked by a read_committed consumer seeing every committed record once and
no aborted one; the LSO, ListOffsets at read_committed, held at an open transaction's start):

- the coordinator's broker killed with -9 mid-transaction, before the commit (the next
  coordinator loaded the open transaction and commits it) and right after the commit was
  answered (PrepareCommit written: the next coordinator sends the markers);
- a data partition's leader killed with -9 before its marker is written: the marker goes
  to the new leader and the transaction reaches CompleteCommit;
- a transaction left open past its timeout is aborted by the coordinator; the producer's
  commit then fails and none of its records is read;
- a second producer with the same transactional id fences the first, whose records are
  never read;
- a broker killed with -9 during an open transaction on a partition it alone holds
  restarts with the same LSO and log end, and the commit that follows is read once;
- a consume-transform-produce copier (send_offsets_to_transaction) copies a topic exactly
  once while three brokers are killed with -9 in turn and restarted.

Bad input: a transactional batch for a partition the producer never added is refused by
the leader's KIP-890 verification (INVALID_TXN_STATE), one naming a transactional id no
coordinator knows too (INVALID_PRODUCER_ID_MAPPING), a sequence gap inside a transaction
is OUT_OF_ORDER_SEQUENCE_NUMBER, each with nothing appended; a fenced producer's late
TxnOffsetCommit is INVALID_PRODUCER_EPOCH and leaves nothing unstable for OffsetFetch
(require_stable); a 20 MB transaction is read once. (Markers with a stale coordinator
epoch: tests/integration/test_txn_leader.py.)

Brokers are killed by the pid of the process this module started, and restarted before
the test ends. One cluster for the module; every wait polls with a deadline.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from client.errors import ClientError
from protocol import ApiKey, ErrorCode
from protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    OffsetFetchRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from protocol.values import LATEST_TIMESTAMP, READ_COMMITTED, READ_UNCOMMITTED
from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tests.records import record_batch
from tools.zookeeper_server import ZooKeeperServer

# the thread method: a librdkafka call blocked in C never returns to Python for the
# signal method to interrupt it; this ends the run instead of letting it hang
pytestmark = pytest.mark.timeout(240, method="thread")

APT = AddPartitionsToTxnRequest


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("txn-failures"),
        3,
        overrides=(
            ("transaction.state.log.num.partitions", "3"),
            ("offsets.topic.num.partitions", "3"),
            ("transaction.marker.retry.backoff.ms", "200"),
            ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "300"),
        ),
    )


def servers(c: TestCluster) -> str:
    return ",".join(f"127.0.0.1:{p}" for p in c.layout.client_ports)


def new_topic(c: TestCluster, partitions: int = 2, rf: int = 3, on: int | None = None) -> str:
    name = f"txnf-{uuid.uuid4().hex[:8]}"
    if on is None:
        admin = AdminClient({"bootstrap.servers": servers(c)})
        admin.create_topics([NewTopic(name, partitions, rf)])[name].result(timeout=30)
    else:  # every partition on broker ``on`` alone
        C = CreateTopicsRequest
        topic = C.CreatableTopic(
            name=name, num_partitions=-1, replication_factor=-1, configs=[],
            assignments=[C.CreatableReplicaAssignment(partition_index=p, broker_ids=[on])
                         for p in range(partitions)],
        )  # fmt: skip
        body = C(topics=[topic], timeout_ms=20_000, validate_only=False)
        controller = c.controller()
        assert controller is not None
        assert c.request(controller, ApiKey.CREATE_TOPICS, 7, body).topics[0].error_code == 0
    wait_until(lambda: all(leader(c, name, p) >= 0 for p in range(partitions)), 30, "leaders")
    return name


def leader(c: TestCluster, topic: str, partition: int) -> int:
    for i in c.broker_ids:
        if not c.is_running(i):
            continue
        for t in c.metadata(i, [topic]).topics:
            for p in t.partitions:
                if p.partition_index == partition:
                    return int(p.leader_id)
        return -1
    return -1


def coordinator_of(c: TestCluster, tid: str, ask: int) -> int:
    body = wait_until(
        lambda: (
            b := c.request(
                ask, ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key=tid, key_type=1)
            )
        ).error_code == ErrorCode.NONE and b,
        timeout=60, what=f"the coordinator of {tid}", interval=0.2,
    )  # fmt: skip
    return int(body.node_id)


def end_offset(c: TestCluster, broker: int, topic: str, partition: int, isolation: int) -> int:
    part = ListOffsetsRequest.ListOffsetsPartition(
        partition_index=partition, timestamp=LATEST_TIMESTAMP
    )
    body = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[part])],
    )
    answer = c.request(broker, ApiKey.LIST_OFFSETS, 5, body).topics[0].partitions[0]
    assert answer.error_code == ErrorCode.NONE
    return int(answer.offset)


def produce_txn(
    c: TestCluster, tid: str | None, topic: str, pid: int, epoch: int, sequence: int = 0
) -> Any:
    batch = record_batch(
        2,
        value=lambda i: b"late %d" % i,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=True,
    )
    part = ProduceRequest.PartitionProduceData(index=0, records=batch)
    body = ProduceRequest(
        transactional_id=tid,
        acks=-1,
        timeout_ms=20_000,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[part])],
    )
    answer = c.request(leader(c, topic, 0), ApiKey.PRODUCE, 9, body)
    return answer.responses[0].partition_responses[0]


def read_committed(c: TestCluster, topic: str, partitions: int, expected: int) -> list[bytes]:
    """What a fresh read_committed consumer reads, once it has ``expected`` records and a
    last poll shows nothing more."""
    consumer = Consumer(
        {
            "bootstrap.servers": servers(c),
            "group.id": f"r-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[bytes] = []

    def read_some() -> bool:
        got.extend(m.value() or b"" for m in consumer.consume(1000, 0.5) if m.error() is None)
        return len(got) >= expected

    try:
        wait_until(read_some, 60, f"{expected} committed records")
        extra = consumer.poll(1.0)
        assert extra is None or extra.error() is not None, "more records than committed"
    finally:
        consumer.close()
    return got


def leads(c: TestCluster, broker: int, topic: str) -> bool:
    """Whether ``broker`` answers ListOffsets for partition 0 of ``topic`` as its leader."""
    part = ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=LATEST_TIMESTAMP)
    body = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=READ_UNCOMMITTED,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[part])],
    )
    try:
        answer = c.request(broker, ApiKey.LIST_OFFSETS, 5, body, timeout=5)
    except ClientError:
        return False
    return bool(answer.topics[0].partitions[0].error_code == ErrorCode.NONE)


def kill(c: TestCluster, broker: int) -> None:
    os.kill(c.pid(broker), signal.SIGKILL)
    wait_until(lambda: not c.is_running(broker), 10, f"broker {broker} gone")


def test_a_partition_never_added_is_refused_and_nothing_is_appended(c: TestCluster) -> None:
    topic = new_topic(c, partitions=1)
    tid = f"verify-{topic}"
    node = coordinator_of(c, tid, 0)
    init = c.request(
        node, ApiKey.INIT_PRODUCER_ID, 4,
        InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000,
                              producer_id=-1, producer_epoch=-1),
    )  # fmt: skip
    assert init.error_code == ErrorCode.NONE
    pid, epoch = init.producer_id, init.producer_epoch
    data_leader = leader(c, topic, 0)
    before = end_offset(c, data_leader, topic, 0, READ_UNCOMMITTED)

    refused = produce_txn(c, tid, topic, pid, epoch)
    assert refused.error_code == ErrorCode.INVALID_TXN_STATE
    unknown = produce_txn(c, f"never-{topic}", topic, pid, epoch)
    assert unknown.error_code == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert end_offset(c, data_leader, topic, 0, READ_UNCOMMITTED) == before

    added = c.request(
        node, ApiKey.ADD_PARTITIONS_TO_TXN, 3,
        APT(v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[APT.AddPartitionsToTxnTopic(name=topic, partitions=[0])]),
    )  # fmt: skip
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    accepted = produce_txn(c, tid, topic, pid, epoch)
    assert accepted.error_code == ErrorCode.NONE
    assert end_offset(c, data_leader, topic, 0, READ_UNCOMMITTED) == before + 2
    gap = produce_txn(c, tid, topic, pid, epoch, sequence=5)  # 2 was next
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert end_offset(c, data_leader, topic, 0, READ_UNCOMMITTED) == before + 2
    # the open transaction holds the last stable offset where it began
    assert end_offset(c, data_leader, topic, 0, READ_COMMITTED) == before


def test_a_fenced_producer_s_late_offset_commit_is_refused(c: TestCluster) -> None:
    """A wedged client may send its TxnOffsetCommit long after a new producer fenced it:
    refused, it leaves nothing pending (accepted, OffsetFetch require_stable would answer
    UNSTABLE_OFFSET_COMMIT until the producer id's next marker)."""
    topic = new_topic(c, partitions=1)
    tid = group = f"zombie-{topic}"
    node = coordinator_of(c, tid, 0)
    init_body = InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1
    )

    def init() -> Any:  # retried while the fencing abort completes
        return wait_until(
            lambda: (b := c.request(node, ApiKey.INIT_PRODUCER_ID, 4, init_body)).error_code
            == ErrorCode.NONE and b,
            30, "InitProducerId", interval=0.1,
        )  # fmt: skip

    first = init()
    pid, old = first.producer_id, first.producer_epoch
    body = AddOffsetsToTxnRequest(
        transactional_id=tid, producer_id=pid, producer_epoch=old, group_id=group
    )
    assert c.request(node, ApiKey.ADD_OFFSETS_TO_TXN, 3, body).error_code == ErrorCode.NONE
    group_node = wait_until(
        lambda: (
            b := c.request(0, ApiKey.FIND_COORDINATOR, 3,
                           FindCoordinatorRequest(key=group, key_type=0))
        ).error_code == ErrorCode.NONE and b,
        30, "the group's coordinator", interval=0.2,
    ).node_id  # fmt: skip

    def commit(epoch: int, offset: int) -> int:
        T = TxnOffsetCommitRequest
        part = T.TxnOffsetCommitRequestPartition(
            partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
            committed_metadata="",
        )  # fmt: skip
        body = T(
            transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch,
            generation_id=-1, member_id="", group_instance_id=None,
            topics=[T.TxnOffsetCommitRequestTopic(name=topic, partitions=[part])],
        )  # fmt: skip
        answer = c.request(group_node, ApiKey.TXN_OFFSET_COMMIT, 3, body)
        return int(answer.topics[0].partitions[0].error_code)

    assert commit(old, 1) == ErrorCode.NONE  # pending in the open transaction
    assert init().producer_epoch > old  # fenced: its transaction aborted, markers written
    assert commit(old, 5) == ErrorCode.INVALID_PRODUCER_EPOCH
    ask = OffsetFetchRequest.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])
    fetch = OffsetFetchRequest(
        groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=[ask])],
        require_stable=True,
    )
    (answer,) = c.request(group_node, ApiKey.OFFSET_FETCH, 8, fetch).groups
    fetched = answer.topics[0].partitions[0]
    assert (fetched.error_code, fetched.committed_offset) == (ErrorCode.NONE, -1)


def transactional(c: TestCluster, tid: str) -> Producer:
    producer = Producer(
        {"bootstrap.servers": servers(c), "transactional.id": tid, "transaction.timeout.ms": 60_000}
    )
    producer.init_transactions(60)
    return producer


def send(producer: Producer, topic: str, values: list[bytes]) -> None:
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % 2)
    assert producer.flush(30) == 0


@pytest.mark.parametrize("when", ["before-commit", "after-prepare-commit"])
def test_the_coordinator_killed_mid_transaction(c: TestCluster, when: str) -> None:
    topic = new_topic(c)
    tid = f"kill-{when}-{topic}"
    producer = transactional(c, tid)
    old = coordinator_of(c, tid, 0)
    values = [f"{when} {i}".encode() for i in range(10)]
    producer.begin_transaction()
    send(producer, topic, values)
    try:
        if when == "before-commit":
            kill(c, old)
            producer.commit_transaction(60)  # to the next coordinator, which loaded it
        else:
            producer.commit_transaction(60)  # answered: PrepareCommit is written
            kill(c, old)
        assert sorted(read_committed(c, topic, 2, len(values))) == sorted(values)
        # the producer goes on with the next coordinator
        producer.begin_transaction()
        send(producer, topic, [b"next"])
        producer.commit_transaction(60)
        assert sorted(read_committed(c, topic, 2, len(values) + 1)) == sorted([*values, b"next"])
    finally:
        if not c.is_running(old):
            c.restart(old)


def test_a_broker_killed_during_an_open_transaction_keeps_its_lso(c: TestCluster) -> None:
    victim = 2
    topic = new_topic(c, partitions=1, on=victim)
    tid = f"recover-{topic}"
    plain = Producer({"bootstrap.servers": servers(c)})
    plain.produce(topic, b"before", partition=0)
    assert plain.flush(30) == 0
    producer = transactional(c, tid)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, b"open %d" % i, partition=0)
    assert producer.flush(30) == 0
    lso = end_offset(c, victim, topic, 0, READ_COMMITTED)
    end = end_offset(c, victim, topic, 0, READ_UNCOMMITTED)
    assert (lso, end) == (1, 6)
    kill(c, victim)
    c.restart(victim)
    # its old registration may outlive it until its session expires: wait for the new
    # process to lead the partition again
    wait_until(lambda: leads(c, victim, topic), 60, "the restarted broker leading again")
    assert end_offset(c, victim, topic, 0, READ_COMMITTED) == lso
    assert end_offset(c, victim, topic, 0, READ_UNCOMMITTED) == end
    producer.commit_transaction(60)
    wait_until(
        lambda: end_offset(c, victim, topic, 0, READ_COMMITTED) == end + 1,
        30, "the commit marker moving the LSO",
    )  # fmt: skip
    got = read_committed(c, topic, 1, 6)
    assert sorted(got) == sorted([b"before", *(b"open %d" % i for i in range(5))])


def describe_state(c: TestCluster, tid: str) -> str:
    from protocol.messages import DescribeTransactionsRequest

    node = coordinator_of(c, tid, next(i for i in c.broker_ids if c.is_running(i)))
    body = c.request(
        node, ApiKey.DESCRIBE_TRANSACTIONS, 0,
        DescribeTransactionsRequest(transactional_ids=[tid]),
    )  # fmt: skip
    return str(body.transaction_states[0].transaction_state)


def test_a_data_leader_killed_before_its_marker_gets_it_from_the_new_leader(
    c: TestCluster,
) -> None:
    topic = new_topic(c)
    tid = f"leader-kill-{topic}"
    producer = transactional(c, tid)
    coordinator = coordinator_of(c, tid, 0)
    victim_partition = next(p for p in (0, 1) if leader(c, topic, p) != coordinator)
    victim = leader(c, topic, victim_partition)
    values = [b"marked %d" % i for i in range(10)]
    producer.begin_transaction()
    send(producer, topic, values)  # acknowledged by every replica (acks=all)
    try:
        kill(c, victim)
        # PrepareCommit is written; the marker for the victim's partition waits for
        # a new leader and goes there
        producer.commit_transaction(60)
        wait_until(
            lambda: describe_state(c, tid) == "CompleteCommit",
            60, "every marker written, the new leader's included", interval=0.3,
        )  # fmt: skip
        assert leader(c, topic, victim_partition) not in (victim, -1)
        assert sorted(read_committed(c, topic, 2, len(values))) == sorted(values)
    finally:
        if not c.is_running(victim):
            c.restart(victim)


def test_a_transaction_past_its_timeout_is_never_read(c: TestCluster) -> None:
    topic = new_topic(c, partitions=1)
    tid = f"timeout-{topic}"
    producer = Producer(
        {"bootstrap.servers": servers(c), "transactional.id": tid, "transaction.timeout.ms": 2000}
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, b"timed out %d" % i, partition=0)
    assert producer.flush(30) == 0
    data_leader = leader(c, topic, 0)
    # the LSO stays at the open transaction's start while it is open
    assert end_offset(c, data_leader, topic, 0, READ_COMMITTED) == 0
    assert end_offset(c, data_leader, topic, 0, READ_UNCOMMITTED) == 5
    wait_until(
        lambda: describe_state(c, tid) == "CompleteAbort", 30, "the coordinator's abort",
        interval=0.3,
    )  # fmt: skip
    with pytest.raises(KafkaException):
        producer.commit_transaction(30)
    plain = Producer({"bootstrap.servers": servers(c)})
    plain.produce(topic, b"after", partition=0)
    assert plain.flush(30) == 0
    assert read_committed(c, topic, 1, 1) == [b"after"]


def test_a_fenced_producer_s_records_are_never_read(c: TestCluster) -> None:
    topic = new_topic(c)
    tid = f"fence-{topic}"
    first = transactional(c, tid)
    first.begin_transaction()
    send(first, topic, [b"zombie %d" % i for i in range(6)])
    second = transactional(c, tid)  # bumps the epoch, aborts the first's transaction
    with pytest.raises(KafkaException) as fenced:
        first.commit_transaction(30)
    assert fenced.value.args[0].fatal()
    second.begin_transaction()
    send(second, topic, [b"survivor %d" % i for i in range(4)])
    second.commit_transaction(30)
    got = read_committed(c, topic, 2, 4)
    assert sorted(got) == [b"survivor %d" % i for i in range(4)]


def test_a_huge_transaction_is_read_once(c: TestCluster) -> None:
    topic = new_topic(c)
    tid = f"huge-{topic}"
    producer = transactional(c, tid)
    count, value = 20_000, b"x" * 1000
    producer.begin_transaction()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value + b"%d" % i, partition=i % 2)
                break
            except BufferError:  # the client's queue is full: let it send
                producer.poll(0.1)
    assert producer.flush(60) == 0
    producer.commit_transaction(60)
    got = read_committed(c, topic, 2, count)
    assert sorted(got) == sorted(value + b"%d" % i for i in range(count))


#: the timeout the copier gives each transactional call of its producer
CALL_TIMEOUT_S = 20.0
#: how long after its own timeout a call still blocked is given up (see ``bounded``)
GIVE_UP_AFTER_S = 5.0

T = TypeVar("T")


class StuckCall(Exception):
    """A client call still blocked ``GIVE_UP_AFTER_S`` past its own timeout."""


def bounded(call: Callable[[], T], timeout_s: float, what: str) -> T:
    """``call()`` (given ``timeout_s`` itself) in a daemon thread: its result or its
    exception, or StuckCall when it is still blocked ``GIVE_UP_AFTER_S`` past
    ``timeout_s``.

    Why: librdkafka (2.16.0, the one confluent-kafka bundles here) can block in
    send_offsets_to_transaction forever, whatever its timeout, once the group's
    coordinator was killed and has left the cluster's metadata: its TxnOffsetCommit
    waits for a connection to that broker, the client decommissions the broker (its
    thread ends), and the request is only woken by a state change of the broker it waits
    for (librdkafka issues #5456, the coordinator request's timeout never checked, and
    #5511, a decommissioned coordinator). Nothing can interrupt a call blocked in C, so
    its thread is left blocked until the process ends, as an exactly-once application
    whose client wedged is restarted: the new producer fences the old one, so nothing the
    old one still sends can commit (its TxnOffsetCommit, sent once something wakes it,
    is refused INVALID_PRODUCER_EPOCH: see storage.producer_state.check_batch)."""
    answer: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()

    def run() -> None:
        try:
            answer.put((True, call()))
        except BaseException as exc:  # handed to the caller
            answer.put((False, exc))

    threading.Thread(target=run, name=f"copier-{what}", daemon=True).start()
    try:
        returned, value = answer.get(timeout=timeout_s + GIVE_UP_AFTER_S)
    except queue.Empty:
        raise StuckCall(f"{what} still blocked {timeout_s + GIVE_UP_AFTER_S:.0f} s") from None
    if not returned:
        raise value
    return cast(T, value)


class Copier:
    """A consume-transform-produce copier (confluent-kafka): each step reads a few
    records at read_committed, writes them to the sink and commits the group's offsets
    in the same transaction. Any failure restarts it: the open transaction aborted if the
    client still can, new clients (the new producer fences the old one), reading again
    from the group's committed offsets, as an exactly-once application restarts. Its
    producer's calls are ``bounded``: one blocked past its timeout gives that producer up
    (``stuck``), and the copier restarts the same way."""

    def __init__(self, c: TestCluster, source: str, sink: str) -> None:
        self.c, self.source, self.sink = c, source, sink
        self.group, self.tid = f"copier-{source}", f"copier-{source}"
        self.consumer: Consumer | None = None
        self.producer: Producer | None = None
        self.restarts = 0
        #: the calls given up (their threads still blocked in librdkafka)
        self.stuck: list[str] = []
        #: consumers given up after a failure, closed at the end with every broker up:
        #: librdkafka's close may block while the group's coordinator is down
        self.retired: list[Consumer] = []

    def _start(self) -> tuple[Consumer, Producer]:
        producer = Producer(
            {
                "bootstrap.servers": servers(self.c),
                "transactional.id": self.tid,
                "transaction.timeout.ms": 10_000,
            }
        )
        bounded(lambda: producer.init_transactions(30), 30, "init_transactions")
        consumer = Consumer(
            {
                "bootstrap.servers": servers(self.c),
                "group.id": self.group,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        committed = consumer.committed([TopicPartition(self.source, p) for p in (0, 1)], 30)
        consumer.assign(
            [TopicPartition(self.source, tp.partition, max(tp.offset, 0)) for tp in committed]
        )
        self.consumer, self.producer = consumer, producer
        return consumer, producer

    def close(self) -> None:
        self._stop()
        for consumer in self.retired:
            consumer.close()
        self.retired.clear()

    def _stop(self) -> None:
        producer, self.producer = self.producer, None
        if producer is not None:
            with contextlib.suppress(KafkaException, StuckCall):
                bounded(lambda: producer.abort_transaction(5), 5, "abort_transaction")
        if self.consumer is not None:
            self.retired.append(self.consumer)
            self.consumer = None

    def step(self) -> int:
        """One transaction's worth; the records it copied (0 after a failure)."""
        try:
            if self.consumer is None or self.producer is None:
                self._start()
            assert self.consumer is not None and self.producer is not None
            consumer, producer = self.consumer, self.producer
            batch = [m for m in consumer.consume(20, 0.5) if m.error() is None]
            if not batch:
                return 0
            producer.begin_transaction()
            for message in batch:
                partition = message.partition()
                assert partition is not None  # a consumed record has its partition
                producer.produce(self.sink, message.value(), partition=partition)
            offsets = consumer.position(consumer.assignment())
            group = consumer.consumer_group_metadata()
            bounded(
                lambda: producer.send_offsets_to_transaction(offsets, group, CALL_TIMEOUT_S),
                CALL_TIMEOUT_S, "send_offsets_to_transaction",
            )  # fmt: skip
            bounded(
                lambda: producer.commit_transaction(CALL_TIMEOUT_S),
                CALL_TIMEOUT_S, "commit_transaction",
            )  # fmt: skip
            return len(batch)
        except StuckCall as stuck:
            self.stuck.append(str(stuck))
            self.producer = None  # given up: no abort, its blocked call holds it
            self.restarts += 1
            self._stop()
            return 0
        except KafkaException:
            self.restarts += 1
            self._stop()
            return 0

    def committed(self) -> int:
        checker = Consumer({"bootstrap.servers": servers(self.c), "group.id": self.group})
        try:
            offsets = checker.committed([TopicPartition(self.source, p) for p in (0, 1)], 10)
        finally:
            checker.close()
        return sum(max(tp.offset, 0) for tp in offsets)


def test_a_copier_copies_exactly_once_through_repeated_kill_9(c: TestCluster) -> None:
    source, sink = new_topic(c), new_topic(c)
    values = [b"copy %d" % i for i in range(300)]
    seed = Producer({"bootstrap.servers": servers(c)})
    for i, value in enumerate(values):
        seed.produce(source, value, partition=i % 2)
    assert seed.flush(30) == 0
    copier = Copier(c, source, sink)
    kills = [(40, 0), (120, 1), (200, 2)]  # (records copied, broker killed then)
    down: tuple[int, int, float] | None = None  # (broker, copied then, when)
    copied = 0
    try:

        def copy_some() -> bool:
            nonlocal copied, down
            done = copier.step()
            copied += done
            if down is not None:  # back once the copier went on without it, or after 20 s
                broker, since, at = down
                if copied >= since + 40 or time.monotonic() - at > 20:
                    c.restart(broker)
                    down = None
            elif kills and copied >= kills[0][0]:
                broker = kills.pop(0)[1]
                kill(c, broker)
                down = (broker, copied, time.monotonic())
            if down is not None or kills or (done and copied < len(values)):
                return False
            return copier.committed() >= len(values)

        # under load the copying takes 40-70 s, and each producer given up (``bounded``)
        # 25 s more: two of them still fit
        wait_until(
            copy_some, 120, "the copier to copy every record through three kills", interval=0
        )
    finally:
        for i in c.broker_ids:  # every broker up before the clients close
            if not c.is_running(i):
                c.restart(i)
        copier.close()
    assert sorted(read_committed(c, sink, 2, len(values))) == sorted(values)
