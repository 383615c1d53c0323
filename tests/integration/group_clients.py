"""Group members of the four real clients, run side by side, and the broker's view of a group.

A ``Member`` is one consumer of a group: a confluent-kafka ``Consumer``, a kafka-python
``KafkaConsumer`` or an aiokafka ``AIOKafkaConsumer``, each in a thread of its own (every
call on a client happens in that thread, from creation to close), or a ``kcat -G``
process. Each keeps, under a lock, what a test needs to know from the client side:

- every record handed to it (``Delivery``: member, partition, offset, value), in order;
- its current assignment, and how many assignments it has been given (one per rebalance
  it took part in);
- the errors its client reported (a failed commit, a fatal consumer error).

Commits are the client's own: confluent-kafka commits each record synchronously as soon
as it has it, kafka-python and aiokafka commit after each batch, kcat auto-commits every
100 ms and on revocation. ``close`` leaves the group the way the client does on a clean
shutdown; ``freeze`` and ``kill`` (kcat only) stop a member without a word to the
coordinator.

The broker side is read over the wire with the project's protocol package, from the
group's coordinator as FindCoordinator names it: DescribeGroups (state, protocol,
members), OffsetFetch (committed offsets) and ListOffsets (log end offsets). Waits are
polls with a deadline (tests.polling).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import struct
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from protocol import ApiKey, ErrorCode
from protocol.messages import (
    DescribeGroupsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    ListOffsetsRequest,
    OffsetFetchRequest,
)
from protocol.records.batch import iter_batches
from protocol.records.builder import read_records
from tests.integration.cluster import TestCluster
from tests.polling import wait_until

KCAT = shutil.which("kcat")
OFFSETS_TOPIC = "__consumer_offsets"
#: how often members heartbeat: a rebalance reaches every member within about this long
HEARTBEAT_MS = 200
#: the members' session timeout (the brokers' group.min.session.timeout.ms must allow it)
SESSION_MS = 6000
#: a member's thread or process must end this soon after ``close``
CLOSE_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Delivery:
    member: str
    partition: int
    offset: int
    value: bytes


class Member:
    """What every kind of member records; the client-specific part is ``_run``."""

    def __init__(self, name: str, group: str, topic: str) -> None:
        self.name = name
        self.group = group
        self.topic = topic
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        self._assignment: frozenset[int] = frozenset()
        self._assignments = 0
        self._revocations: list[frozenset[int]] = []
        self._errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what tests read ------------------------------------------------------------------

    def deliveries(self) -> list[Delivery]:
        with self._lock:
            return list(self._deliveries)

    def assignment(self) -> frozenset[int]:
        with self._lock:
            return self._assignment

    def assignments(self) -> int:
        """How many times the member was given an assignment (the first one included)."""
        with self._lock:
            return self._assignments

    def revocations(self) -> list[frozenset[int]]:
        """The partitions taken away, one set per revocation, in order."""
        with self._lock:
            return list(self._revocations)

    def errors(self) -> list[str]:
        with self._lock:
            return list(self._errors)

    # -- what the client side reports ---------------------------------------------------

    def _delivered(self, partition: int, offset: int, value: bytes | None) -> None:
        with self._lock:
            self._deliveries.append(Delivery(self.name, partition, offset, value or b""))

    def _assigned(self, partitions: Iterable[int]) -> None:
        with self._lock:
            self._assignment = frozenset(partitions)
            self._assignments += 1

    def _revoked(self, partitions: Iterable[int]) -> None:
        gone = frozenset(partitions)
        with self._lock:
            self._assignment = self._assignment - gone
            self._revocations.append(gone)

    def _failed(self, what: str) -> None:
        with self._lock:
            self._errors.append(what)

    # -- life cycle -----------------------------------------------------------------------

    def start(self) -> Member:
        self._thread = threading.Thread(target=self._guarded, name=self.name, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Leave the group as the client does on a clean shutdown; wait for the end."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(CLOSE_TIMEOUT_S)
            assert not self._thread.is_alive(), f"{self.name} did not close"

    def _guarded(self) -> None:
        try:
            self._run()
        except Exception as exc:  # reported to the test through errors()
            self._failed(f"{type(exc).__name__}: {exc}")

    def _run(self) -> None:
        raise NotImplementedError


class ConfluentMember(Member):
    """confluent-kafka: ``subscribe`` with rebalance callbacks; each record committed
    synchronously before the next poll, so a revocation never finds it uncommitted."""

    def __init__(self, name: str, group: str, topic: str, bootstrap: str, **config: Any) -> None:
        super().__init__(name, group, topic)
        self.config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "heartbeat.interval.ms": HEARTBEAT_MS,
            "session.timeout.ms": SESSION_MS,
            "fetch.wait.max.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000,
            "log_level": 3,
        }
        self.config.update(config)
        self._generation = -1

    def generation(self) -> int:
        """The generation the client last joined (-1 before it has)."""
        with self._lock:
            return self._generation

    def _run(self) -> None:
        from confluent_kafka import Consumer, KafkaException

        consumer = Consumer(self.config)
        cooperative = self.config.get("partition.assignment.strategy") == "cooperative-sticky"

        def on_assign(c: Any, partitions: list[Any]) -> None:
            added = [p.partition for p in partitions]
            if cooperative:
                self._assigned(self.assignment() | frozenset(added))
            else:
                self._assigned(added)
            self._note_generation(c)

        def on_revoke(c: Any, partitions: list[Any]) -> None:
            self._revoked(p.partition for p in partitions)

        consumer.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke)
        try:
            while not self._stop.is_set():
                msg = consumer.poll(0.1)
                if msg is None:
                    continue
                error = msg.error()
                if error is not None:
                    if error.fatal():
                        self._failed(str(error))
                    continue
                partition, offset = msg.partition(), msg.offset()
                assert partition is not None and offset is not None
                self._delivered(partition, offset, msg.value())
                try:
                    consumer.commit(message=msg, asynchronous=False)
                except KafkaException as exc:
                    self._failed(f"commit of {partition}@{offset}: {exc.args[0]}")
        finally:
            consumer.close()

    def _note_generation(self, consumer: Any) -> None:
        # librdkafka's serialized group metadata (rd_kafka_consumer_group_metadata_write):
        # a 7-byte magic, then the generation id as a native int32
        blob = consumer.consumer_group_metadata()
        if isinstance(blob, bytes) and blob.startswith(b"CGMDv2:"):
            (generation,) = struct.unpack_from("=i", blob, 7)
            with self._lock:
                self._generation = generation


def snake_case_config(
    name: str, group: str, bootstrap: str, overrides: dict[str, Any]
) -> dict[str, Any]:
    """The consumer settings of a kafka-python or aiokafka member (both libraries take the
    same snake_case keywords): it commits by itself, starts from the earliest offset,
    heartbeats every HEARTBEAT_MS and sees metadata changes within a second; ``overrides``
    win."""
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "group_id": group,
        "client_id": name,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "heartbeat_interval_ms": HEARTBEAT_MS,
        "session_timeout_ms": SESSION_MS,
        "fetch_max_wait_ms": 100,
        "metadata_max_age_ms": 1000,
    }
    config.update(overrides)
    return config


class KafkaPythonMember(Member):
    """kafka-python: ``KafkaConsumer(group_id=...)`` with a rebalance listener; commits
    after each poll's batch."""

    def __init__(self, name: str, group: str, topic: str, bootstrap: str, **config: Any) -> None:
        super().__init__(name, group, topic)
        self.config = snake_case_config(name, group, bootstrap, config)

    def _run(self) -> None:
        from kafka import KafkaConsumer
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        member = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                member._revoked(tp.partition for tp in revoked)

            def on_partitions_assigned(self, assigned: Any) -> None:
                member._assigned(tp.partition for tp in assigned)

        consumer = KafkaConsumer(**self.config)
        consumer.subscribe([self.topic], listener=Listener())
        try:
            while not self._stop.is_set():
                batches = consumer.poll(timeout_ms=100)
                for tp, records in batches.items():
                    for r in records:
                        self._delivered(tp.partition, r.offset, r.value)
                if batches:
                    try:
                        consumer.commit()
                    except Exception as exc:
                        self._failed(f"commit: {exc!r}")
        finally:
            consumer.close()


class AioKafkaMember(Member):
    """aiokafka: ``AIOKafkaConsumer(group_id=...)`` on its own event loop in the member's
    thread; commits after each ``getmany``."""

    def __init__(self, name: str, group: str, topic: str, bootstrap: str, **config: Any) -> None:
        super().__init__(name, group, topic)
        self.config = snake_case_config(name, group, bootstrap, config)

    def _run(self) -> None:
        asyncio.run(self._consume())

    async def _consume(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

        member = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                member._revoked(tp.partition for tp in revoked)

            async def on_partitions_assigned(self, assigned: Any) -> None:
                member._assigned(tp.partition for tp in assigned)

        consumer = AIOKafkaConsumer(**self.config)
        consumer.subscribe([self.topic], listener=Listener())
        await consumer.start()
        try:
            while not self._stop.is_set():
                batches = await consumer.getmany(timeout_ms=100)
                for tp, records in batches.items():
                    for r in records:
                        self._delivered(tp.partition, r.offset, r.value)
                if batches:
                    try:
                        await consumer.commit()
                    except Exception as exc:
                        self._failed(f"commit: {exc!r}")
        finally:
            await consumer.stop()


#: kcat's rebalance lines on stderr: "% Group G rebalanced (memberid M): assigned: t [0], t [3]"
_KCAT_REBALANCE = re.compile(r"rebalanced \(memberid [^)]*\): (assigned|revoked): (.*)$")
_KCAT_PARTITION = re.compile(r"\[(\d+)\]")


class KcatMember(Member):
    """``kcat -G GROUP TOPIC`` (the balanced consumer): records from its JSON lines on
    stdout, its assignment from the rebalance lines it prints on stderr. SIGTERM makes it
    close the consumer (commit, LeaveGroup); SIGKILL (``kill``) leaves nothing said."""

    def __init__(self, name: str, group: str, topic: str, bootstrap: str, *args: str) -> None:
        super().__init__(name, group, topic)
        assert KCAT is not None, "kcat is not installed"
        self.command = [
            KCAT, "-b", bootstrap, "-G", group, "-J", "-u",
            "-X", "auto.offset.reset=earliest",
            "-X", f"client.id={name}",
            "-X", f"heartbeat.interval.ms={HEARTBEAT_MS}",
            "-X", f"session.timeout.ms={SESSION_MS}",
            "-X", "auto.commit.interval.ms=100",
            "-X", "fetch.wait.max.ms=100",
            "-X", "topic.metadata.refresh.interval.ms=1000",
            *args, topic,
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None
        self._readers: list[threading.Thread] = []

    def start(self) -> Member:
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        for target in (self._read_stdout, self._read_stderr):
            reader = threading.Thread(target=target, name=f"{self.name}-reader", daemon=True)
            reader.start()
            self._readers.append(reader)
        return self

    def _read_stdout(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            if not line.strip():
                continue
            message = json.loads(line)
            payload = message.get("payload")
            self._delivered(message["partition"], message["offset"], (payload or "").encode())

    def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        for raw in self.process.stderr:
            line = raw.decode(errors="replace").rstrip()
            found = _KCAT_REBALANCE.search(line)
            if found is None:
                if "ERROR" in line or "FATAL" in line:
                    self._failed(line)
                continue
            partitions = [int(p) for p in _KCAT_PARTITION.findall(found.group(2))]
            if found.group(1) == "assigned":
                self._assigned(partitions)
            else:
                self._revoked(partitions)

    def close(self) -> None:
        self._end(signal.SIGTERM)

    def freeze(self) -> None:
        """SIGSTOP: the member stops heartbeating, its connections stay open, and it
        says nothing to the coordinator (``kill`` ends it after)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def kill(self) -> None:
        """kill -9 (a frozen member too): it leaves the group without a word."""
        self._end(signal.SIGKILL)

    def _end(self, sig: int) -> None:
        process = self.process
        assert process is not None
        if process.poll() is None:
            process.send_signal(sig)
        process.wait(CLOSE_TIMEOUT_S)
        for reader in self._readers:
            reader.join(CLOSE_TIMEOUT_S)


def member_of(kind: str, name: str, group: str, topic: str, bootstrap: str) -> Member:
    """A member of one of the four clients, by name ("kcat", "confluent-kafka",
    "kafka-python", "aiokafka"), not yet started."""
    kinds: dict[str, Callable[..., Member]] = {
        "kcat": KcatMember,
        "confluent-kafka": ConfluentMember,
        "kafka-python": KafkaPythonMember,
        "aiokafka": AioKafkaMember,
    }
    return kinds[kind](name, group, topic, bootstrap)


# -- what the members saw, together ---------------------------------------------------------


def all_deliveries(members: Iterable[Member]) -> list[Delivery]:
    return [d for m in members for d in m.deliveries()]


def delivered_values(members: Iterable[Member]) -> list[bytes]:
    return [d.value for d in all_deliveries(members)]


def split_assignment(members: list[Member], partitions: int) -> dict[str, frozenset[int]] | None:
    """Each member's assignment once together they hold each of ``partitions`` exactly
    once and none of them is empty; else None."""
    held = {m.name: m.assignment() for m in members}
    if any(not a for a in held.values()):
        return None
    every = [p for a in held.values() for p in a]
    if sorted(every) != list(range(partitions)):
        return None
    return held


# -- the broker's view, over the wire ---------------------------------------------------------


def coordinator(c: TestCluster, group: str, via: int | None = None) -> int:
    """The group's coordinator as FindCoordinator v4 (batched keys) from broker ``via``
    (default: the first one running) names it; raises while there is none (a poll
    retries)."""
    if via is None:
        via = next(i for i in c.broker_ids if c.is_running(i))
    body = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
    response = c.request(via, ApiKey.FIND_COORDINATOR, 4, body)
    (found,) = response.coordinators
    assert found.key == group
    assert found.error_code == ErrorCode.NONE, f"FindCoordinator: error {found.error_code}"
    return int(found.node_id)


def describe(c: TestCluster, group: str) -> Any:
    """DescribeGroups v5 of ``group`` from its coordinator (raises while it is moving)."""
    body = DescribeGroupsRequest(groups=[group], include_authorized_operations=False)
    (described,) = c.request(coordinator(c, group), ApiKey.DESCRIBE_GROUPS, 5, body).groups
    assert described.error_code == ErrorCode.NONE, f"DescribeGroups: error {described.error_code}"
    return described


def stable_with(c: TestCluster, group: str, members: int) -> Any:
    """The described group once it is Stable with ``members`` members, else None."""
    described = describe(c, group)
    if described.group_state == "Stable" and len(described.members) == members:
        return described
    return None


def committed(c: TestCluster, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets (OffsetFetch v8 from its coordinator); -1 where
    there is none. Raises while the coordinator is moving or loading."""
    ask = OffsetFetchRequest.OffsetFetchRequestTopics(
        name=topic, partition_indexes=list(range(partitions))
    )
    body = OffsetFetchRequest(
        groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=[ask])],
        require_stable=False,
    )
    response = c.request(coordinator(c, group), ApiKey.OFFSET_FETCH, 8, body)
    (answer,) = response.groups
    assert answer.error_code == ErrorCode.NONE, f"OffsetFetch: error {answer.error_code}"
    out: dict[int, int] = {}
    for t in answer.topics:
        for p in t.partitions:
            assert p.error_code == ErrorCode.NONE, f"OffsetFetch {p.partition_index}: {p}"
            out[p.partition_index] = p.committed_offset
    return out


def wait_committed(
    c: TestCluster, group: str, topic: str, expected: Mapping[int, int], timeout: float = 30
) -> dict[int, int]:
    """Poll OffsetFetch until the group's commits are ``expected``."""

    def reached() -> dict[int, int] | None:
        got = committed(c, group, topic, len(expected))
        return got if got == dict(expected) else None

    return wait_until(reached, timeout, f"{group}'s commits on {topic} to be {dict(expected)}")


def end_offsets(c: TestCluster, topic: str, partitions: int) -> dict[int, int]:
    """Each partition's log end offset (ListOffsets latest, from its leader)."""
    from tests.integration.roundtrip import leader_of

    out: dict[int, int] = {}
    for p in range(partitions):
        body = ListOffsetsRequest(
            replica_id=-1, isolation_level=0,
            topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(
                    partition_index=p, current_leader_epoch=-1, timestamp=-1)])],
        )  # fmt: skip
        response = c.request(leader_of(c, topic, p), ApiKey.LIST_OFFSETS, 5, body)
        (answer,) = response.topics[0].partitions
        assert answer.error_code == ErrorCode.NONE
        out[p] = answer.offset
    return out


def offsets_topic_records(
    c: TestCluster, partition: int
) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record of a partition of the offsets topic, in offset order,
    read raw from its leader (a fetch of up to 4 MiB: the tests' partitions are small)."""
    from tests.integration.roundtrip import leader_of

    body = FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 22, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=[],
        topics=[FetchRequest.FetchTopic(topic=OFFSETS_TOPIC, partitions=[
            FetchRequest.FetchPartition(partition=partition, fetch_offset=0,
                                        partition_max_bytes=1 << 22)])],
    )  # fmt: skip
    response = c.request(leader_of(c, OFFSETS_TOPIC, partition), ApiKey.FETCH, 12, body)
    (data,) = response.responses[0].partitions
    assert data.error_code == ErrorCode.NONE
    records = bytes(data.records)
    return [
        (r.key, r.value)
        for position, header in iter_batches(records, allow_partial=False)
        for r in read_records(records[position : position + header.size])
    ]


def produce_values(
    c: TestCluster, topic: str, partitions: int, per_partition: int, tag: str
) -> list[bytes]:
    """``per_partition`` records into each partition with a confluent-kafka producer
    (acks=all); their values, unique across the run through ``tag``."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": c.layout.bootstrap_servers, "linger.ms": 5, "acks": "all"}
    )
    failures: list[str] = []
    values: list[bytes] = []

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    for p in range(partitions):
        for i in range(per_partition):
            value = f"{tag}-p{p}-{i}".encode()
            values.append(value)
            producer.produce(topic, value=value, partition=p, on_delivery=report)
    assert producer.flush(30) == 0, "records left undelivered"
    assert failures == []
    return values


def wait_delivered(members: Iterable[Member], values: Iterable[bytes], timeout: float = 30) -> None:
    """Until every one of ``values`` has been handed to some member."""
    wanted = set(values)
    group = list(members)
    wait_until(
        lambda: wanted <= set(delivered_values(group)),
        timeout,
        f"{len(wanted)} records to reach the members",
    )


def close_all(members: Iterable[Member]) -> None:
    """Close every member (even after a failure), the first failure to close raised."""
    problems: list[BaseException] = []
    for m in members:
        try:
            m.close()
        except BaseException as exc:
            problems.append(exc)
    if problems:
        raise problems[0]
