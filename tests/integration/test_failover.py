"""Replication under failure, end to end: three real brokers, a real ZooKeeper, real clients.

Every topic here has replication factor 3 and ``min.insync.replicas=2``, and is written by
an idempotent acks=all confluent-kafka producer that runs throughout a test
(tests.integration.replication_chaos.SequenceProducer) while brokers are killed, paused and
stopped by pid. What must hold afterwards, checked from what a consumer reads back and
from the brokers' segment files:

- no acknowledged record is lost, none is read twice, and per partition the values read
  are exactly those sent, in the order sent, with no gap;
- once the ISR is full again, every replica holds the same batches below the high
  watermark: same offsets, same leader epochs, same bytes;
- a leader that was paused while the controller replaced it is fenced: what it appended
  alone is truncated away when it comes back, and no consumer ever sees it;
- a SIGTERMed leader hands its partitions over before it exits (controlled shutdown), and
  the producer sees no failed delivery.

ZooKeeper sessions are short (4 s) so that a dead broker is noticed quickly, and a follower
leaves the ISR after 2 s without catching up. The module shares one cluster; each test
uses its own topic and leaves all three brokers running.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from protocol import ErrorCode
from protocol.records.builder import read_records
from tests.integration.replication_chaos import ChaosCluster, HeldProduce, start_chaos
from tests.integration.sequence_producer import SequenceProducer, consume_all, delivery_problems
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(300)

SESSION_TIMEOUT_S = 4.0
OVERRIDES = (
    ("zookeeper.session.timeout.ms", str(int(SESSION_TIMEOUT_S * 1000))),
    ("replica.lag.time.max.ms", "2000"),
    # a follower's long poll ends soon, so a paused follower has none waiting for long
    ("replica.fetch.wait.max.ms", "200"),
    ("replica.fetch.backoff.ms", "200"),
)
TOPIC_CONFIGS = {"min.insync.replicas": "2"}
REPLICAS = (0, 1, 2)
#: fetches (the followers' long polls among them) a broker holds, not yet answered
_WAITING_FETCHES = 'minikafka_purgatory_delayed_operations{purgatory="Fetch"}'
#: a dead broker's session expires, then the controller elects: generous for a loaded machine
FAILOVER_TIMEOUT_S = SESSION_TIMEOUT_S + 20
#: a restarted broker recovers its log, registers and catches up
HEAL_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def chaos(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ChaosCluster]:
    yield from start_chaos(zookeeper, tmp_path_factory.mktemp("failover"), OVERRIDES)


@pytest.fixture(autouse=True)
def _all_brokers_back(chaos: ChaosCluster) -> Iterator[None]:
    """A test that failed half way may leave a broker paused or dead: the next one starts
    with all three running again, so that one failure is reported once."""
    yield
    chaos.heal()


def new_topic(chaos: ChaosCluster, name: str, partitions: int) -> None:
    chaos.create_topic(name, partitions, len(REPLICAS), TOPIC_CONFIGS)
    chaos.wait_isr_full(name, range(partitions), len(REPLICAS), 30)


def check_everything_read_back(
    chaos: ChaosCluster, producer: SequenceProducer, partitions: int
) -> None:
    """After the producer has stopped and the ISR is full: the consumed log is exactly
    what was sent and acknowledged, and the replicas are identical."""
    topic = producer.topic
    ends = {
        p: chaos.high_watermark(chaos.state(topic, p).leader, topic, p) for p in range(partitions)
    }
    consumed = consume_all(chaos.bootstrap, topic, partitions, ends)
    acked = producer.acked()
    assert sum(len(a) for a in acked.values()) == producer.next_sequence
    assert delivery_problems(producer.sent(), acked, consumed) == []
    for p in range(partitions):
        chaos.wait_replicas_identical(topic, p, REPLICAS, 30)


def test_kill_minus_9_of_leaders_loses_no_acknowledged_record(chaos: ChaosCluster) -> None:
    topic, partitions = "failover-kill", 3
    new_topic(chaos, topic, partitions)
    with SequenceProducer(chaos.bootstrap, topic, partitions, rate=300) as producer:
        wait_until(
            lambda: all(producer.acked_count(p) > 0 for p in range(partitions)),
            30,
            "the producer's first acknowledgements",
        )
        for cycle in range(5):
            placement = chaos.leaders(topic)
            victim = placement[cycle % partitions]
            led = [p for p, leader in placement.items() if leader == victim]
            chaos.kill(victim)
            killed_at = time.monotonic()
            for p in led:
                chaos.wait_leader_moved(topic, p, victim, FAILOVER_TIMEOUT_S)
            wait_until(
                lambda: producer.first_ack_after(led, killed_at),  # noqa: B023 - used at once
                FAILOVER_TIMEOUT_S,
                f"cycle {cycle}: a write acknowledged by the new leaders of {led}",
            )
            chaos.restart(victim)
            chaos.wait_isr_full(topic, range(partitions), len(REPLICAS), HEAL_TIMEOUT_S)
    assert producer.failed() == []
    check_everything_read_back(chaos, producer, partitions)


def _records(chaos: ChaosCluster, broker: int, topic: str) -> list[bytes]:
    """Every record value in broker's segment files of topic's partition 0."""
    return [
        r.value or b""
        for batch in chaos.replica_batches(broker, topic, 0)
        for r in read_records(batch.data)
    ]


def _produce(chaos: ChaosCluster, broker: int, topic: str, values: list[bytes], acks: int) -> int:
    """Produce one batch to partition 0 through broker; its base offset."""
    held = HeldProduce(chaos.layout.client_ports[broker], topic, 0, values, acks=acks)
    error, base_offset = held.answer()
    assert error == ErrorCode.NONE, f"produce to broker {broker} answered error {error}"
    return base_offset


def test_paused_leader_is_fenced_and_its_lone_appends_truncated(chaos: ChaosCluster) -> None:
    topic = "failover-pause"
    new_topic(chaos, topic, 1)
    old = chaos.state(topic, 0)
    leader = old.leader
    followers = [b for b in REPLICAS if b != leader]
    committed = [b"committed-%d" % i for i in range(5)]
    assert _produce(chaos, leader, topic, committed, acks=-1) == 0

    # An append only the leader holds: the followers are paused, and only once their
    # long polls have been answered (an answer written to a paused follower's socket would
    # still reach it), so nothing carries the append to them before the leader is paused.
    for f in followers:
        chaos.pause(f)
    try:
        wait_until(
            lambda: chaos.metric(leader, _WAITING_FETCHES) == 0,
            10,
            "the paused followers' fetches to leave the leader's purgatory",
        )
        lone_offset = _produce(chaos, leader, topic, [b"stale-alone"], acks=1)
        chaos.pause(leader)
    finally:
        for f in followers:
            chaos.resume(f)
    held: HeldProduce | None = None
    try:
        new_leader = chaos.wait_leader_moved(topic, 0, leader, FAILOVER_TIMEOUT_S)
        assert new_leader in followers
        assert chaos.state(topic, 0).leader_epoch > old.leader_epoch
        # written while it is still paused: the first thing it reads when resumed
        held = HeldProduce(chaos.layout.client_ports[leader], topic, 0, [b"stale-late"], acks=1)
    finally:
        chaos.resume(leader)
    late_error, late_offset = held.answer()
    # Either outcome is a fenced leader: it refuses at once, or it appends alone and the
    # append is truncated away below. Never a record a consumer can read.
    assert late_error in (ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER), late_error

    after = [b"after-%d" % i for i in range(5)]
    base = _produce(chaos, new_leader, topic, after, acks=-1)
    assert base == lone_offset  # the new leader's log continues where the committed part ends
    chaos.wait_isr_full(topic, [0], len(REPLICAS), HEAL_TIMEOUT_S)
    chaos.wait_replicas_identical(topic, 0, REPLICAS, 30)

    end = chaos.high_watermark(chaos.state(topic, 0).leader, topic, 0)
    assert end == len(committed) + len(after)
    consumed = [v for _, v in consume_all(chaos.bootstrap, topic, 1, {0: end})[0]]
    assert consumed == committed + after
    for b in REPLICAS:  # the old leader's own copy lost what it appended alone
        assert _records(chaos, b, topic) == committed + after, f"broker {b}"
    if late_error == ErrorCode.NONE:
        assert late_offset >= len(committed)


def test_sigterm_of_a_leader_moves_leadership_without_failed_deliveries(
    chaos: ChaosCluster,
) -> None:
    topic, partitions = "failover-term", 3
    new_topic(chaos, topic, partitions)
    with SequenceProducer(chaos.bootstrap, topic, partitions, rate=300) as producer:
        wait_until(
            lambda: all(producer.acked_count(p) > 0 for p in range(partitions)),
            30,
            "the producer's first acknowledgements",
        )
        placement = chaos.leaders(topic)
        victim = placement[0]
        led = [p for p, leader in placement.items() if leader == victim]
        since = time.monotonic()
        assert chaos.terminate(victim) == 0
        # controlled shutdown: the partitions were handed over before the broker exited
        for p in led:
            assert chaos.state(topic, p).leader not in (victim, -1)
        wait_until(
            lambda: producer.first_ack_after(led, since),
            30,
            f"a write acknowledged by the new leaders of {led}",
        )
        chaos.restart(victim)
        chaos.wait_isr_full(topic, range(partitions), len(REPLICAS), HEAL_TIMEOUT_S)
    assert producer.failed() == []
    check_everything_read_back(chaos, producer, partitions)
