"""Consumer-group benchmark: offset commits per second, and how long a rebalance takes.

    .venv/bin/python tests/bench/bench_groups.py [--seconds 5] [--cycles 20]
        [--members 10] [--heartbeat-ms 200] [--override KEY=VALUE ...] [--dir DIR]

One run starts three local brokers (``LocalCluster``, the machinery of ``minikafka cluster
up``, with an embedded ZooKeeper; ``__consumer_offsets`` with 6 partitions, RF 3) and
measures on that one cluster:

1. Offset commits per second: one confluent-kafka consumer, a member of a group
   (``subscribe``) that holds one partition, commits an ever-growing offset for it for
   ``--seconds``, synchronously (one commit in flight: the coordinator's acks=all append
   to the offsets topic is on the path of each) and asynchronously (up to 1000 in
   flight, counted as their callbacks report success). Beside them, in the same run, a
   confluent-kafka producer writes records of the same key and value sizes as the
   commit records (OffsetCommitKey v1, OffsetCommitValue v3) to an RF 3 topic with
   acks=all, one at a time (``flush`` after each) and pipelined (up to 1000 records
   queued, counted as acknowledged). The ratios commit / produce say what the group
   coordinator adds on top of a plain replicated append; pipelined produce batches many
   records per request, where each commit is a request of its own, so that ratio is
   low by nature.

2. Rebalance time: a group of ``--members`` confluent-kafka consumers (heartbeat every
   ``--heartbeat-ms``) on a 20-partition topic; ``--cycles`` times, one member closes (LeaveGroup)
   and the time until the others hold every partition again (their rebalance callbacks
   have run: what a consumer waits before it reads again) is recorded; then a new member
   joins, and the next cycle waits for the group to be whole again. p50 and p99 of the
   leave-rebalance time are printed, beside the join-rebalance time for comparison. A
   member learns of a rebalance at its next heartbeat, so up to one heartbeat interval
   of it is the client's (with four members it is about one interval, at 100 ms as at
   1000 ms: the coordinator's own part is small).

Figures are printed, never asserted. Everything shares the machine's cores (two here):
compare the rows of one run rather than absolute numbers.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from protocol import ApiKey  # noqa: E402
from protocol.data import data_class, encode_data  # noqa: E402
from protocol.messages import CreateTopicsRequest  # noqa: E402
from protocol.values import TopicPartition  # noqa: E402
from tests.integration.cluster import TestCluster  # noqa: E402
from tests.integration.group_clients import (  # noqa: E402
    ConfluentMember,
    Member,
    close_all,
    split_assignment,
)
from tests.polling import wait_until  # noqa: E402
from tools.cluster import ClusterLayout, LocalCluster  # noqa: E402
from tools.zookeeper_server import free_port  # noqa: E402

COMMITS_TOPIC = "bench-commits"
PRODUCE_TOPIC = "bench-produce"
REBALANCE_TOPIC = "bench-rebalance"
REBALANCE_PARTITIONS = 20
IN_FLIGHT = 1000


@contextmanager
def three_brokers(directory: Path, overrides: list[tuple[str, str]]) -> Iterator[TestCluster]:
    ports = [free_port() for _ in range(10)]
    layout = ClusterLayout(
        directory=directory,
        client_ports=tuple(ports[0:3]),
        control_ports=tuple(ports[3:6]),
        metrics_ports=tuple(ports[6:9]),
        zookeeper_port=ports[9],
        overrides=(
            ("offsets.topic.num.partitions", "6"),
            ("group.initial.rebalance.delay.ms", "0"),
            *overrides,
        ),
    )
    local = LocalCluster(layout)
    local.start(timeout_s=90)
    cluster = TestCluster(local, layout.zk_connect)
    try:
        yield cluster
    finally:
        cluster.close()
        local.stop(grace_s=30)


def create_topic(c: TestCluster, name: str, partitions: int) -> None:
    controller = wait_until(c.controller, 20, "a controller")
    new = CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=3
    )
    body = CreateTopicsRequest(topics=[new], timeout_ms=30_000, validate_only=False)
    (created,) = c.request(controller, ApiKey.CREATE_TOPICS, 7, body).topics
    assert created.error_code == 0, created
    wait_until(
        lambda: all(
            all(p.leader_id >= 0 for t in c.metadata(i, [name]).topics for p in t.partitions)
            for i in c.broker_ids
        ),
        30,
        f"the leaders of {name}",
    )


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]


# --- 1. commits against produce ------------------------------------------------------------------


def commit_record_sizes(group: str) -> tuple[int, int]:
    """Key and value sizes of one commit record as the coordinator writes it."""
    tp = TopicPartition(COMMITS_TOPIC, 0)
    key = encode_data(
        "OffsetCommitKey", 1,
        data_class("OffsetCommitKey")(group=group, topic=tp.topic, partition=tp.partition),
    )  # fmt: skip
    value = encode_data(
        "OffsetCommitValue", 3,
        data_class("OffsetCommitValue")(
            offset=1 << 20, leader_epoch=0, metadata="", commit_timestamp=0, expire_timestamp=-1
        ),
    )  # fmt: skip
    return len(key), len(value)


def bench_commits(c: TestCluster, seconds: float) -> None:
    from confluent_kafka import Consumer, KafkaError, Producer
    from confluent_kafka import TopicPartition as Tp

    group = "bench-commits"
    consumer = Consumer({
        "bootstrap.servers": c.layout.bootstrap_servers, "group.id": group,
        "enable.auto.commit": False, "log_level": 3,
    })  # fmt: skip
    assigned = threading.Event()
    consumer.subscribe([COMMITS_TOPIC], on_assign=lambda _c, _p: assigned.set())
    wait_until(lambda: consumer.poll(0.05) is None and assigned.is_set(), 60, "the assignment")

    offset = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        offset += 1
        consumer.commit(offsets=[Tp(COMMITS_TOPIC, 0, offset)], asynchronous=False)
    sync_rate = offset / (time.perf_counter() - started)

    done = [0, 0]  # succeeded, failed

    def on_commit(err: KafkaError | None, _partitions: object) -> None:
        done[0 if err is None else 1] += 1

    consumer.close()
    consumer = Consumer({
        "bootstrap.servers": c.layout.bootstrap_servers, "group.id": group,
        "enable.auto.commit": False, "log_level": 3, "on_commit": on_commit,
    })  # fmt: skip
    assigned.clear()
    consumer.subscribe([COMMITS_TOPIC], on_assign=lambda _c, _p: assigned.set())
    wait_until(lambda: consumer.poll(0.05) is None and assigned.is_set(), 60, "the assignment")
    sent = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        if sent - sum(done) >= IN_FLIGHT:
            consumer.poll(0.001)
            continue
        offset += 1
        sent += 1
        consumer.commit(offsets=[Tp(COMMITS_TOPIC, 0, offset)], asynchronous=True)
        consumer.poll(0)
    while sum(done) < sent:
        consumer.poll(0.01)
    async_rate = done[0] / (time.perf_counter() - started)
    consumer.close()

    key_size, value_size = commit_record_sizes(group)
    key, value = b"k" * key_size, b"v" * value_size
    producer = Producer({
        "bootstrap.servers": c.layout.bootstrap_servers, "acks": "all", "linger.ms": 0,
        "log_level": 3,
    })  # fmt: skip
    produced = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        producer.produce(PRODUCE_TOPIC, key=key, value=value, partition=0)
        producer.flush(30)
        produced += 1
    produce_sync = produced / (time.perf_counter() - started)

    acked = [0, 0]  # succeeded, failed

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        acked[0 if err is None else 1] += 1

    piped = Producer({
        "bootstrap.servers": c.layout.bootstrap_servers, "acks": "all", "linger.ms": 1,
        "log_level": 3, "on_delivery": on_delivery,
        # as many in flight as the asynchronous commits had
        "queue.buffering.max.messages": IN_FLIGHT,
    })  # fmt: skip
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        try:
            piped.produce(PRODUCE_TOPIC, key=key, value=value, partition=0)
        except BufferError:
            piped.poll(0.001)
    piped.flush(60)
    produce_async = acked[0] / (time.perf_counter() - started)

    size = key_size + value_size
    print(f"record: key {key_size} B + value {value_size} B ({size} B), RF 3, acks=all")
    print(f"{'':24}{'commits/s':>12}{'produce/s':>12}{'ratio':>8}")
    for label, commit, produce in (
        ("synchronous", sync_rate, produce_sync),
        ("asynchronous", async_rate, produce_async),
    ):
        print(f"{label:24}{commit:12.0f}{produce:12.0f}{commit / produce:8.2f}")
    if done[1] or acked[1]:
        print(f"({done[1]} asynchronous commits and {acked[1]} records failed)")


# --- 2. rebalance time ----------------------------------------------------------------------------


def whole(members: list[Member]) -> float | None:
    """The time at which ``members`` together hold every partition, else None."""
    if split_assignment(members, REBALANCE_PARTITIONS) is None:
        return None
    return time.perf_counter()


def bench_rebalance(c: TestCluster, members_count: int, cycles: int, heartbeat_ms: int) -> None:
    group = "bench-rebalance"
    bootstrap = c.layout.bootstrap_servers
    serial = 0

    def new_member() -> Member:
        nonlocal serial
        serial += 1
        config = {"heartbeat.interval.ms": heartbeat_ms}
        name = f"rebalance-{serial}"
        return ConfluentMember(name, group, REBALANCE_TOPIC, bootstrap, **config).start()

    members = [new_member() for _ in range(members_count)]
    leaves: list[float] = []
    joins: list[float] = []
    try:
        wait_until(lambda: whole(members), 120, f"{members_count} members sharing the topic")
        for cycle in range(cycles):
            leaver = members.pop(cycle % len(members))
            started = time.perf_counter()
            leaver.close()
            ended = wait_until(lambda: whole(members), 120, "the rebalance after a leave")
            leaves.append(ended - started)
            started = time.perf_counter()
            members.append(new_member())
            ended = wait_until(lambda: whole(members), 120, "the rebalance after a join")
            joins.append(ended - started)
    finally:
        close_all(members)
    print(
        f"{members_count} members, {REBALANCE_PARTITIONS} partitions, {cycles} cycles, "
        f"heartbeat every {heartbeat_ms} ms"
    )
    print(f"{'':24}{'p50 ms':>10}{'p99 ms':>10}")
    for label, times in (("after a leave", leaves), ("after a join", joins)):
        p50, p99 = percentile(times, 0.5) * 1000, percentile(times, 0.99) * 1000
        print(f"{label:24}{p50:10.0f}{p99:10.0f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="each commit/produce run (5)")
    parser.add_argument("--cycles", type=int, default=20, help="leave/join cycles (20)")
    parser.add_argument("--members", type=int, default=10, help="members of the group (10)")
    parser.add_argument("--heartbeat-ms", type=int, default=200, help="members' heartbeat (200)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--dir", type=Path, help="keep the brokers' logs and data here")
    args = parser.parse_args()
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    overrides = [(k.strip(), v.strip()) for k, _, v in (o.partition("=") for o in args.override)]
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="bench-groups-") as tmp,
        three_brokers(args.dir or Path(tmp), overrides) as c,
    ):
        create_topic(c, COMMITS_TOPIC, 1)
        create_topic(c, PRODUCE_TOPIC, 1)
        create_topic(c, REBALANCE_TOPIC, REBALANCE_PARTITIONS)
        print("== offset commits beside produce", flush=True)
        bench_commits(c, args.seconds)
        print("\n== rebalance time", flush=True)
        bench_rebalance(c, args.members, args.cycles, args.heartbeat_ms)
    print(f"\n(total {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
