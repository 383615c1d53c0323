"""Replication benchmark: what RF 3 costs, and how long a partition is unwritable in a failover.

    .venv/bin/python tests/bench/bench_replication.py [--seconds 10] [--rounds 4] [--cycles 10]
        [--soak-cycles 0] [--session-timeout-ms 6000] [--override KEY=VALUE ...]
        [--skip-throughput] [--skip-failover] [--dir DIR]

One run starts three local brokers (``LocalCluster``, the machinery of ``minikafka cluster
up``, with an embedded ZooKeeper) and measures, on that one cluster:

1. Throughput and cost, 1 KiB records, with the project's load generator (``minikafka perf
   produce``: pre-built batches, 64 KiB batches, linger 5 ms, 5 requests in flight), on a
   3-partition topic each way: RF 1 with acks=1 against RF 3 (min.insync.replicas=2) with
   acks=all. ``--rounds`` times, a full-speed run of each on a fresh topic, back to back,
   RF 1 first in even rounds and RF 3 first in odd ones (each topic is deleted after its
   run). Figures per run: records/s and MB/s (2**20 bytes of record values), produce
   latency p50/p99, and broker CPU seconds per GB (10**9 value bytes): utime+stime from
   /proc/<pid>/stat of the three broker processes, summed, before and after the run. Each
   round prints its pair and their ratios; the table gives the medians over the rounds,
   plus produce latency at a fixed pace (``--latency-rate``, one run each), and the
   targets line the median of the rounds' ratios (targets: throughput at least 1/3 of RF
   1's, CPU-s/GB at most 3.5x). Rounds, not one long run, because this machine's speed
   drifts by tens of percent within minutes: a pair run back to back shares its
   conditions, and alternating the order cancels a steady drift.

2. Failover timing, on an RF 3 topic of three partitions written throughout by an
   idempotent acks=all confluent-kafka producer (500 records/s): ``--cycles`` times each,
   the leader of a partition is killed with SIGKILL, or stopped with SIGTERM (controlled
   shutdown), then restarted once its partitions have moved, and the next cycle waits for
   a full ISR. Every other cycle takes down the controller (when it leads a partition),
   the others a leader that is not the controller: losing the controller too is a
   different failover, and the figures are printed for each kind apart. Per cycle:

   - *first write*: from the signal until every partition the victim led has acknowledged
     a record enqueued after the signal (only a new leader can acknowledge those after a
     SIGKILL);
   - *worst write*: the longest any record on those partitions waited for its
     acknowledgement, among those enqueued from 1 s before the signal until that moment
     (records in flight when the leader went included).

   p50 and p99 over the cycles are printed beside the targets (kill -9: at most the
   ZooKeeper session timeout + 2 s; SIGTERM: under 1 s). Afterwards the producer is
   flushed and everything is read back: the run reports lost acknowledged records,
   acknowledgements without an offset (a write that outwaited the producer's request
   timeout), duplicates, gaps and reorders
   (tests.integration.sequence_producer.delivery_problems) and any difference between
   the replicas' batches below the high watermark.

3. ``--soak-cycles M``: the kill -9 loop again, M cycles on a fresh topic, with the same
   read-back checks (timings printed too).

Figures are printed, never asserted; the exit status is 1 only when a read-back check
found lost, duplicated or reordered records, acknowledgements without an offset or
diverging replicas. Everything shares the machine's cores (two here): the load
generator, the producer and the three brokers compete, so compare the rows of one run
rather than absolute numbers.
"""

from __future__ import annotations

import argparse
import logging
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.integration.replication_chaos import ChaosCluster, cpu_seconds  # noqa: E402
from tests.integration.sequence_producer import (  # noqa: E402
    SequenceProducer,
    consume_all,
    delivery_problems,
)
from tests.polling import wait_until  # noqa: E402
from tools.cluster import ClusterLayout, LocalCluster  # noqa: E402
from tools.zookeeper_server import free_port  # noqa: E402

PY = sys.executable
MB = 1024 * 1024
RECORD_SIZE = 1024
PARTITIONS = 3
REPLICAS = (0, 1, 2)


@contextmanager
def three_brokers(
    directory: Path, session_timeout_ms: int, overrides: list[tuple[str, str]]
) -> Iterator[ChaosCluster]:
    ports = [free_port() for _ in range(10)]
    layout = ClusterLayout(
        directory=directory,
        client_ports=tuple(ports[0:3]),
        control_ports=tuple(ports[3:6]),
        metrics_ports=tuple(ports[6:9]),
        zookeeper_port=ports[9],
        overrides=(("zookeeper.session.timeout.ms", str(session_timeout_ms)), *overrides),
    )
    local = LocalCluster(layout)
    local.start(timeout_s=90)
    chaos = ChaosCluster(local)
    try:
        yield chaos
    finally:
        chaos.close()
        local.stop(grace_s=30)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]


# --- 1. throughput and cost ---------------------------------------------------------------------

SUMMARY = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, ([\d.]+) ms 99th"
)


@dataclass
class PerfRun:
    records: int
    records_per_s: float
    mb_per_s: float
    p50_ms: float
    p99_ms: float
    cpu_s_per_gb: float = 0.0  # the brokers' summed CPU per 10**9 value bytes, when measured


def perf_produce(bootstrap: str, topic: str, acks: str, seconds: float, rate: float) -> PerfRun:
    done = subprocess.run(
        [PY, "-m", "tools.main", "perf", "produce", "--bootstrap-server", bootstrap,
         "--topic", topic, "--duration", str(seconds), "--record-size", str(RECORD_SIZE),
         "--throughput", str(rate), "--acks", acks, "--batch-size", "65536",
         "--linger-ms", "5"],
        capture_output=True, text=True, timeout=seconds + 120, cwd=ROOT,
    )  # fmt: skip
    m = SUMMARY.search(done.stdout)
    if done.returncode != 0 or m is None:
        raise RuntimeError(f"perf produce failed: {(done.stderr or done.stdout).strip()[-500:]}")
    return PerfRun(int(m[1]), float(m[2]), float(m[2]) * RECORD_SIZE / MB, float(m[6]), float(m[8]))


def delete_topic(bootstrap: str, topic: str) -> None:
    """Delete a finished round's topic, so rounds do not pile gigabytes of logs up."""
    subprocess.run(
        [PY, "-m", "tools.main", "topics", "--bootstrap-server", bootstrap, "--delete",
         "--topic", topic, "--if-exists"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=True,
    )  # fmt: skip


def full_speed_round(
    chaos: ChaosCluster, topic: str, rf: int, acks: str, seconds: float
) -> PerfRun:
    """One full-speed run on a fresh topic; its records/s, latency, and broker CPU-s/GB."""
    chaos.create_topic(topic, PARTITIONS, rf, {"min.insync.replicas": str(min(rf, 2))})
    chaos.wait_isr_full(topic, range(PARTITIONS), rf, 30)
    pids = [chaos.pid(i) for i in chaos.broker_ids]
    cpu0 = sum(cpu_seconds(pid) for pid in pids)
    run = perf_produce(chaos.bootstrap, topic, acks, seconds, -1)
    cpu1 = sum(cpu_seconds(pid) for pid in pids)
    run.cpu_s_per_gb = (cpu1 - cpu0) / (run.records * RECORD_SIZE / 1e9)
    return run


def bench_throughput(chaos: ChaosCluster, seconds: float, latency_rate: float, rounds: int) -> None:
    """``rounds`` pairs of full-speed runs, RF 1 and RF 3 back to back, in alternating order
    (this machine's speed drifts by tens of percent within minutes, so each pair is
    compared within itself and the medians are reported), then one paced run of each for
    latency."""
    kinds = (("RF1 acks=1", 1, "1"), ("RF3 acks=all", 3, "all"))
    runs: dict[str, list[PerfRun]] = {name: [] for name, _, _ in kinds}
    for n in range(rounds):
        # Odd rounds run RF 3 first: a speed that drifts steadily then favours neither.
        for name, rf, acks in kinds if n % 2 == 0 else kinds[::-1]:
            topic = f"bench-rf{rf}-{n}"
            runs[name].append(full_speed_round(chaos, topic, rf, acks, seconds))
            delete_topic(chaos.bootstrap, topic)
        one, three = runs["RF1 acks=1"][-1], runs["RF3 acks=all"][-1]
        print(
            f"  round {n + 1}: RF1 {one.records_per_s:,.0f} records/s at {one.cpu_s_per_gb:.2f} "
            f"CPU-s/GB, RF3 {three.records_per_s:,.0f} at {three.cpu_s_per_gb:.2f}: ratios "
            f"{three.records_per_s / one.records_per_s:.2f} and "
            f"{three.cpu_s_per_gb / one.cpu_s_per_gb:.2f}x",
            flush=True,
        )
    rows: dict[str, dict[str, float]] = {}
    for name, rf, acks in kinds:
        full = runs[name]
        topic = f"bench-rf{rf}-paced"
        chaos.create_topic(topic, PARTITIONS, rf, {"min.insync.replicas": str(min(rf, 2))})
        chaos.wait_isr_full(topic, range(PARTITIONS), rf, 30)
        paced = perf_produce(chaos.bootstrap, topic, acks, min(seconds, 5.0), latency_rate)
        rows[name] = {
            "records/s": median([r.records_per_s for r in full]),
            "MB/s": median([r.mb_per_s for r in full]),
            "p50 ms (full speed)": median([r.p50_ms for r in full]),
            "p99 ms (full speed)": median([r.p99_ms for r in full]),
            f"p50 ms @ {latency_rate:.0f}/s": paced.p50_ms,
            f"p99 ms @ {latency_rate:.0f}/s": paced.p99_ms,
            "broker CPU-s/GB": median([r.cpu_s_per_gb for r in full]),
        }
    rf1, rf3 = rows["RF1 acks=1"], rows["RF3 acks=all"]
    print()
    header = (f"medians of {rounds} rounds", "RF1 acks=1", "RF3 acks=all", "RF3/RF1")
    print(f"{header[0]:<28} {header[1]:>12} {header[2]:>13} {header[3]:>9}")
    for metric in rf1:
        ratio = rf3[metric] / rf1[metric] if rf1[metric] else float("nan")
        print(f"{metric:<28} {rf1[metric]:>12,.1f} {rf3[metric]:>13,.1f} {ratio:>9.2f}")
    pairs = list(zip(runs["RF1 acks=1"], runs["RF3 acks=all"], strict=True))
    speed = median([b.records_per_s / a.records_per_s for a, b in pairs])
    cost = median([b.cpu_s_per_gb / a.cpu_s_per_gb for a, b in pairs])
    print(
        f"targets: RF3 records/s >= 1/3 of RF1's (median of the rounds' ratios {speed:.2f}); "
        f"CPU-s/GB at most 3.5x RF1's (median {cost:.2f}x)"
    )


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


# --- 2. and 3. failover -----------------------------------------------------------------------


@dataclass
class Cycle:
    victim: int
    was_controller: bool
    partitions: list[int]
    first_write_s: float
    worst_write_s: float


def pick_victim(leaders: set[int], controller: int | None, cycle: int) -> int:
    """A leader to take down: in odd cycles the controller when it leads a partition, in
    even ones a leader that is not the controller (when there is one). The two cases fail
    over differently (the controller's death also moves the controller), so both are
    measured whatever the placement drifts to."""
    others = sorted(leaders - {controller})
    if controller in leaders and (cycle % 2 == 1 or not others):
        return controller
    return others[cycle // 2 % len(others)]


def one_cycle(chaos: ChaosCluster, producer: SequenceProducer, cycle: int, kind: str) -> Cycle:
    topic = producer.topic
    placement = chaos.leaders(topic)
    controller = chaos.controller()
    victim = pick_victim(set(placement.values()), controller, cycle)
    led = [p for p, leader in placement.items() if leader == victim]
    signalled = time.monotonic()
    if kind == "kill":
        chaos.kill(victim)
    else:
        chaos.send_terminate(victim)

    def all_written() -> float | None:
        firsts = [producer.first_ack_after([p], signalled) for p in led]
        if any(a is None for a in firsts):
            return None
        return max(a.acknowledged for a in firsts if a is not None)

    written = wait_until(all_written, 120, f"writes on {led} after broker {victim} went")
    worst = max(
        (
            a.acknowledged - a.enqueued
            for p, acks in producer.acked().items()
            if p in led
            for a in acks
            if signalled - 1.0 <= a.enqueued <= written
        ),
        default=0.0,
    )
    if kind == "term":
        chaos.wait_exit(victim)
    chaos.restart(victim)
    chaos.wait_isr_full(topic, range(PARTITIONS), len(REPLICAS), 120)
    return Cycle(victim, victim == controller, led, written - signalled, worst)


def failover_loop(chaos: ChaosCluster, topic: str, kind: str, cycles: int) -> bool:
    """``cycles`` failovers of one kind under a running producer; print the timings and
    the read-back checks. True when nothing was lost, duplicated or diverged."""
    chaos.create_topic(topic, PARTITIONS, len(REPLICAS), {"min.insync.replicas": "2"})
    chaos.wait_isr_full(topic, range(PARTITIONS), len(REPLICAS), 30)
    results: list[Cycle] = []
    with SequenceProducer(chaos.bootstrap, topic, PARTITIONS, rate=500) as producer:
        wait_until(
            lambda: all(producer.acked_count(p) > 0 for p in range(PARTITIONS)),
            30,
            "first acknowledgements",
        )
        for cycle in range(cycles):
            result = one_cycle(chaos, producer, cycle, kind)
            results.append(result)
            role = "controller, " if result.was_controller else ""
            print(
                f"  {kind} #{cycle + 1}: broker {result.victim} ({role}leader of "
                f"{result.partitions}): first write {result.first_write_s * 1000:.0f} ms,"
                f" worst write {result.worst_write_s * 1000:.0f} ms",
                flush=True,
            )
    label = "kill -9" if kind == "kill" else "SIGTERM"
    summarise(f"{label}, all", results)
    summarise(f"{label}, leader only", [r for r in results if not r.was_controller])
    summarise(f"{label}, controller and leader", [r for r in results if r.was_controller])
    return read_back(chaos, producer)


def summarise(label: str, results: list[Cycle]) -> None:
    if not results:
        return
    first = [r.first_write_s * 1000 for r in results]
    worst = [r.worst_write_s * 1000 for r in results]
    print(
        f"{label}: {len(results)} cycles; first write p50 {percentile(first, 0.5):.0f} ms,"
        f" p99 {percentile(first, 0.99):.0f} ms, max {max(first):.0f} ms; worst write p50"
        f" {percentile(worst, 0.5):.0f} ms, p99 {percentile(worst, 0.99):.0f} ms"
    )


def read_back(chaos: ChaosCluster, producer: SequenceProducer) -> bool:
    topic = producer.topic
    ends = {
        p: chaos.high_watermark(chaos.state(topic, p).leader, topic, p) for p in range(PARTITIONS)
    }
    consumed = consume_all(chaos.bootstrap, topic, PARTITIONS, ends)
    acked = producer.acked()
    problems = delivery_problems(producer.sent(), acked, consumed)
    problems += [f"failed delivery: {f}" for f in producer.failed()]
    for p in range(PARTITIONS):
        try:
            chaos.wait_replicas_identical(topic, p, REPLICAS, 30)
        except AssertionError as exc:
            problems.append(str(exc))
    records = sum(len(v) for v in consumed.values())
    unplaced = sum(1 for a in acked.values() for ack in a if ack.offset < 0)
    print(
        f"  read back {records} records of {producer.next_sequence} sent, "
        f"{sum(len(a) for a in acked.values())} acknowledged ({unplaced} without an offset): "
        + ("no loss, no duplicates, no gaps, replicas identical" if not problems else "PROBLEMS")
    )
    for problem in problems[:20]:
        print(f"    {problem}")
    return not problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="full-speed run length (10)")
    parser.add_argument(
        "--rounds", type=int, default=4, help="full-speed RF1/RF3 pairs, medians reported (4)"
    )
    parser.add_argument(
        "--latency-rate", type=float, default=2000.0, help="records/s of the paced run (2000)"
    )
    parser.add_argument("--cycles", type=int, default=10, help="failovers of each kind (10)")
    parser.add_argument("--soak-cycles", type=int, default=0, help="kill -9 soak cycles (0)")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker setting for all three brokers (e.g. replica.lag.time.max.ms=10000)",
    )
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-failover", action="store_true")
    parser.add_argument(
        "--dir",
        type=Path,
        help="keep the brokers' logs and data here (default: a temporary directory, deleted after)",
    )
    args = parser.parse_args()
    # kazoo reconnecting while the embedded ZooKeeper starts is not worth a console line
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    overrides = [(k.strip(), v.strip()) for k, _, v in (o.partition("=") for o in args.override)]
    started = time.monotonic()
    healthy = True
    with (
        tempfile.TemporaryDirectory(prefix="bench-replication-") as tmp,
        three_brokers(args.dir or Path(tmp), args.session_timeout_ms, overrides) as chaos,
    ):
        if not args.skip_throughput:
            print("== throughput and cost", flush=True)
            bench_throughput(chaos, args.seconds, args.latency_rate, args.rounds)
        session_s = args.session_timeout_ms / 1000
        if not args.skip_failover and args.cycles > 0:
            print(f"\n== failover (session timeout {session_s:.1f} s)", flush=True)
            healthy &= failover_loop(chaos, "bench-kill", "kill", args.cycles)
            healthy &= failover_loop(chaos, "bench-term", "term", args.cycles)
            print(f"targets: kill -9 p99 <= {session_s + 2:.1f} s; SIGTERM p99 < 1 s")
        if args.soak_cycles > 0:
            print(f"\n== soak: {args.soak_cycles} kill -9 cycles", flush=True)
            healthy &= failover_loop(chaos, "bench-soak", "kill", args.soak_cycles)
    print(f"\n(total {time.monotonic() - started:.0f} s)")
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
