"""Scale benchmark: thousands of partitions on three brokers, at idle and under acks=all.

    .venv/bin/python tests/bench/bench_scale.py [--partitions 3000] [--per-topic 30]
        [--idle-seconds 20] [--session-timeout-ms 6000] [--skip-failover] [--skip-shutdown]
        [--only-admin] [--dir DIR]

One run starts three local brokers (``LocalCluster``, the machinery of ``minikafka cluster
up``, with an embedded ZooKeeper), creates ``--partitions`` partitions (topics of
``--per-topic`` partitions each, replication factor 3, min.insync.replicas 2) and prints,
each figure beside its baseline or target measured or stated in the same run:

1. creation: from the CreateTopics requests until every broker's Metadata shows every
   partition with a leader and a full ISR (target: 3,000 partitions within 10 s);
2. idle CPU per broker: utime+stime from /proc/<pid>/stat over ``--idle-seconds`` with no
   client connected, as a percentage of one core (target: at most 2 %);
3. one 100-byte record to every partition with confluent-kafka, acks=1 and then acks=all
   (a fresh producer each, its metadata fetched before the clock starts): the acks=all
   time beside the acks=1 time of the same run (target: within 2x);
4. RSS per broker (VmRSS from /proc/<pid>/status) after the produce rounds, and per
   partition replica (RSS divided by the replicas each broker holds);
5. unless ``--skip-failover``: kill -9 of the broker other than the controller leading the
   most partitions (about a third), and the time until the other brokers' Metadata names
   a live leader for every partition it led (target: the ZooKeeper session timeout + 2 s).
   The broker is then started again, every partition waited for in sync, and the
   preferred leaders re-elected (ElectLeaders), so the next figure starts balanced;
6. unless ``--skip-shutdown``: a controlled shutdown (SIGTERM) of the busiest broker
   other than the controller: the time until the others name a new leader for every
   partition it led, and until its process exited (flushed and checkpointed).

``--only-admin`` skips 2 and 3 (the figures of the replication path) for a quicker run of
the controller's.

Figures are printed, never asserted. Compare two revisions with
``tests/bench/compare_revisions.py BASE tests/bench/bench_scale.py -- --partitions 600``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from confluent_kafka.cimpl import NewTopic  # noqa: E402

from client import KafkaClient  # noqa: E402
from client.admin import elect_leaders  # noqa: E402
from protocol import ApiKey  # noqa: E402
from protocol.messages import MetadataRequest  # noqa: E402
from tests.bench.bench_replication import three_brokers  # noqa: E402
from tests.integration.replication_chaos import ChaosCluster, cpu_seconds  # noqa: E402
from tests.polling import wait_until  # noqa: E402

RECORD = b"x" * 100
#: ElectLeaders' election type for preferred replicas
PREFERRED_ELECTION = 0
REPLICAS = 3


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def partition_view(chaos: ChaosCluster, broker: int) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (leader, ISR size), from broker ``broker``'s Metadata."""
    body = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    response = chaos.request(broker, ApiKey.METADATA, 12, body, timeout=30)
    return {
        (t.name, p.partition_index): (p.leader_id, len(p.isr_nodes))
        for t in response.topics
        if not t.name.startswith("__")
        for p in t.partitions
    }


def topic_names(partitions: int, per_topic: int) -> dict[str, int]:
    names: dict[str, int] = {}
    left, n = partitions, 0
    while left > 0:
        names[f"scale-{n:03d}"] = min(per_topic, left)
        left -= per_topic
        n += 1
    return names


def create_all(chaos: ChaosCluster, topics: dict[str, int], timeout: float) -> float:
    """Seconds from the CreateTopics requests until every broker shows every partition
    led and fully in sync."""
    # one CreateTopics for all: on a loaded machine it may outlast librdkafka's 60 s
    admin = AdminClient({"bootstrap.servers": chaos.bootstrap, "socket.timeout.ms": 300_000})
    started = time.monotonic()
    new = [NewTopic(t, n, REPLICAS, config={"min.insync.replicas": "2"}) for t, n in topics.items()]
    for _topic, future in admin.create_topics(new, request_timeout=timeout).items():
        future.result(timeout)
    total = sum(topics.values())

    def in_sync() -> bool:
        for i in chaos.serving():
            view = partition_view(chaos, i)
            if len(view) != total or any(
                leader < 0 or isr != REPLICAS for leader, isr in view.values()
            ):
                return False
        return True

    wait_until(in_sync, timeout, f"{total} partitions led and in sync", interval=0.2)
    return time.monotonic() - started


def idle_cpu(chaos: ChaosCluster, seconds: float) -> list[float]:
    """Each broker's CPU over ``seconds``, in percent of one core."""
    pids = [chaos.pid(i) for i in chaos.broker_ids]
    before = [cpu_seconds(p) for p in pids]
    t0 = time.monotonic()
    time.sleep(seconds)  # the measurement window itself, not a synchronisation
    elapsed = time.monotonic() - t0
    return [100 * (cpu_seconds(p) - b) / elapsed for p, b in zip(pids, before, strict=True)]


def produce_round(chaos: ChaosCluster, topics: dict[str, int], acks: str) -> float:
    """Seconds to have one record acknowledged on every partition."""
    producer = Producer(
        {
            "bootstrap.servers": chaos.bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "queue.buffering.max.messages": 1_000_000,
            # a loaded machine's brokers may take minutes over thousands of partitions
            "request.timeout.ms": 300_000,
            "message.timeout.ms": 600_000,
        }
    )
    producer.list_topics(timeout=30)
    for topic in topics:
        producer.list_topics(topic, timeout=30)
    failed: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failed.append(str(err))

    started = time.monotonic()
    for topic, n in topics.items():
        for p in range(n):
            producer.produce(topic, RECORD, partition=p, on_delivery=on_delivery)
            producer.poll(0)
    left = producer.flush(600)
    elapsed = time.monotonic() - started
    if left or failed:
        raise RuntimeError(f"acks={acks}: {left} undelivered, errors {failed[:3]}")
    return elapsed


def busiest_follower(chaos: ChaosCluster) -> tuple[int, list[tuple[str, int]]]:
    """The broker other than the controller that leads the most partitions, and those
    partitions (the controller is left alone: its failure is a controller failover, a
    different figure)."""
    view = partition_view(chaos, chaos.serving()[0])
    controller = chaos.controller()
    counts = {
        i: sum(1 for leader, _ in view.values() if leader == i)
        for i in chaos.serving()
        if i != controller
    }
    victim = max(counts, key=lambda i: counts[i])
    return victim, [tp for tp, (leader, _) in view.items() if leader == victim]


def wait_moved(
    chaos: ChaosCluster, victim: int, led: list[tuple[str, int]], timeout: float
) -> None:
    """Until every other serving broker's Metadata names a live leader for each of ``led``.
    A broker that has shown it is not asked again (its view does not go back), so each
    poll asks only those still behind: a Metadata of thousands of partitions takes a
    while on a loaded machine, and asking both every round coarsened the figure."""
    behind = {i for i in chaos.serving() if i != victim}

    def moved() -> bool:
        for i in sorted(behind):
            now = partition_view(chaos, i)
            if not any(now[tp][0] in (victim, -1) for tp in led):
                behind.discard(i)
        return not behind

    wait_until(moved, timeout, f"leaderships of broker {victim} moved", interval=0.05)


def failover(chaos: ChaosCluster, timeout: float) -> tuple[int, int, float]:
    """kill -9 the busiest follower of the controller; (victim, partitions it led,
    seconds until the others name a live leader for each of them)."""
    victim, led = busiest_follower(chaos)
    started = time.monotonic()
    chaos.kill(victim)
    wait_moved(chaos, victim, led, timeout)
    return victim, len(led), time.monotonic() - started


def rejoin(chaos: ChaosCluster, broker: int, total: int, timeout: float) -> None:
    """Start ``broker`` again, wait for every partition in sync, then give the preferred
    replicas their leaderships back (ElectLeaders), so the next figure starts balanced."""
    chaos.restart(broker, timeout)

    def settled() -> bool:
        for i in chaos.serving():
            view = partition_view(chaos, i)
            if len(view) != total or any(
                leader < 0 or isr != REPLICAS for leader, isr in view.values()
            ):
                return False
        return True

    wait_until(settled, timeout, f"broker {broker} back in every ISR", interval=0.5)

    async def elect_preferred() -> None:
        async with KafkaClient(chaos.bootstrap) as client:
            await elect_leaders(client, PREFERRED_ELECTION, None, timeout_ms=int(timeout * 1000))

    asyncio.run(elect_preferred())

    def balanced() -> bool:
        view = partition_view(chaos, broker)
        return sum(1 for leader, _ in view.values() if leader == broker) >= total // 4

    wait_until(balanced, timeout, f"broker {broker} leading again", interval=0.5)


def controlled_shutdown(chaos: ChaosCluster, timeout: float) -> tuple[int, int, float, float]:
    """SIGTERM the busiest follower of the controller: (broker, partitions it led,
    seconds until the others name another live leader for each, seconds until it exited)."""
    victim, led = busiest_follower(chaos)
    started = time.monotonic()
    chaos.send_terminate(victim)
    wait_moved(chaos, victim, led, timeout)
    moved = time.monotonic() - started
    chaos.wait_exit(victim, timeout)
    return victim, len(led), moved, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=3000, help="partitions in all (3000)")
    parser.add_argument("--per-topic", type=int, default=30, help="partitions per topic (30)")
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--skip-failover", action="store_true")
    parser.add_argument("--skip-shutdown", action="store_true")
    parser.add_argument(
        "--only-admin",
        action="store_true",
        help="creation, failover and controlled shutdown only (no idle or produce figures)",
    )
    parser.add_argument("--dir", type=Path, help="keep the brokers' files here")
    args = parser.parse_args()
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    topics = topic_names(args.partitions, args.per_topic)
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp,
        three_brokers(args.dir or Path(tmp), args.session_timeout_ms, []) as chaos,
    ):
        target_create = 10.0 * args.partitions / 3000
        took = create_all(chaos, topics, 300)
        print(
            f"create {args.partitions} partitions (RF {REPLICAS}), led and in sync: "
            f"{took:.2f} s (target {target_create:.1f} s)",
            flush=True,
        )
        if not args.only_admin:
            # followers settle (first fetches, high watermarks) before the idle window
            time.sleep(min(5.0, args.idle_seconds / 4))
            cpu = idle_cpu(chaos, args.idle_seconds)
            for i, pct in enumerate(cpu):
                print(f"idle CPU broker {i}: {pct:.1f} % of a core (target 2.0 %)", flush=True)
            one = produce_round(chaos, topics, "1")
            every = produce_round(chaos, topics, "all")
            print(f"one record to every partition, acks=1: {one:.2f} s", flush=True)
            print(
                f"one record to every partition, acks=all: {every:.2f} s "
                f"= {every / one:.1f}x acks=1 (target 2x)",
                flush=True,
            )
        replicas_each = args.partitions * REPLICAS / len(chaos.broker_ids)
        for i in chaos.broker_ids:
            rss = rss_mb(chaos.pid(i))
            print(
                f"RSS broker {i}: {rss:.0f} MB, {1024 * rss / replicas_each:.1f} KB "
                f"per partition replica",
                flush=True,
            )
        if not args.skip_failover:
            victim, led, secs = failover(chaos, 120)
            limit = args.session_timeout_ms / 1000 + 2
            print(
                f"kill -9 broker {victim} leading {led} partitions: all moved in "
                f"{secs:.2f} s (target {limit:.1f} s)",
                flush=True,
            )
            if not args.skip_shutdown:
                rejoin(chaos, victim, args.partitions, 300)
        if not args.skip_shutdown:
            victim, led, moved, exited = controlled_shutdown(chaos, 120)
            print(
                f"controlled shutdown of broker {victim} leading {led} partitions: all moved "
                f"in {moved:.2f} s, exited in {exited:.2f} s",
                flush=True,
            )
    print(f"(total {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
