"""The web console's latency and memory: a topics page and messages pages at any offset,
beside the plain client round trips they are made of.

    .venv/bin/python tests/bench/bench_console.py [--partitions 3000] [--records 1000000]
        [--topics 30] [--requests 30] [--dir DIR]

One run starts three local brokers (``LocalCluster``, the machinery of ``minikafka cluster
up``, with an embedded ZooKeeper), creates ``--topics`` topics holding ``--partitions``
partitions in all (RF 1, so creating them stays quick on a small machine), and writes
``--records`` records of 100 bytes to partition 0 of the first topic (batches of 5,000
built once, sent with the project's client). Then ``minikafka console`` runs as its own
process (scraping every broker's metrics endpoint every 5 s, as ``cluster up`` starts it),
and ``--requests`` times each, through HTTP (urllib, a new connection per
request as a browser's first visit):

- ``GET /topics``: the topics page (one Metadata of every topic, rendered);
- ``GET /topics/<t>/messages?partition=0&offset=X&limit=50`` at random offsets X over the
  whole partition (ListOffsets for the page's bounds, one Fetch);

beside, in the same run, the project's client doing a plain Metadata of every topic and a
plain Fetch at a random offset on a connection already open. The medians are printed, and
the console's resident memory (VmRSS, VmHWM from /proc) after the run. Figures are
printed, never asserted; the issue's targets (under 300 ms at the median, under 150 MB)
are printed beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client import KafkaClient, NewTopic, create_topics, produce  # noqa: E402
from protocol.records.builder import build_batch  # noqa: E402
from protocol.records.record import SimpleRecord  # noqa: E402
from tools.cluster import ClusterLayout, LocalCluster  # noqa: E402
from tools.zookeeper_server import free_port  # noqa: E402
from web.reading import fetch_at  # noqa: E402

BATCH = 5_000


def three_brokers(directory: Path) -> LocalCluster:
    ports = [free_port() for _ in range(10)]
    layout = ClusterLayout(
        directory=directory,
        client_ports=tuple(ports[0:3]),
        control_ports=tuple(ports[3:6]),
        metrics_ports=tuple(ports[6:9]),
        zookeeper_port=ports[9],
        overrides=(),
    )
    local = LocalCluster(layout)
    local.start(timeout_s=120)
    return local


async def fill(bootstrap: str, topics: int, partitions: int, records: int) -> str:
    per_topic = max(1, partitions // topics)
    names = [f"bench-console-{i:03d}" for i in range(topics)]
    async with KafkaClient(bootstrap) as client:
        for start in range(0, len(names), 10):
            created = await create_topics(
                client, [NewTopic(n, per_topic, 1) for n in names[start : start + 10]]
            )
            failed = {n: r.describe_error() for n, r in created.items() if not r.ok}
            assert not failed, failed
        await client.refresh_metadata([names[0]])
        value = b"v" * 100
        batch = bytes(
            build_batch(
                SimpleRecord(b"k%d" % i, value, (), int(time.time() * 1000)) for i in range(BATCH)
            )
        )
        for _ in range(records // BATCH):
            await produce(client, names[0], 0, batch, acks=1)
    return names[0]


async def client_round_trips(
    bootstrap: str, topic: str, records: int, n: int
) -> tuple[list[float], list[float]]:
    metadata: list[float] = []
    fetches: list[float] = []
    async with KafkaClient(bootstrap) as client:
        await client.refresh_metadata(None)
        for _ in range(n):
            t0 = time.perf_counter()
            await client.refresh_metadata(None)
            metadata.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await fetch_at(client, topic, 0, random.randrange(max(1, records)), 50)
            fetches.append(time.perf_counter() - t0)
    return metadata, fetches


def http_times(url: str, paths: list[str]) -> list[float]:
    out = []
    for path in paths:
        t0 = time.perf_counter()
        with urllib.request.urlopen(url + path, timeout=60) as response:
            response.read()
            assert response.status == 200, path
        out.append(time.perf_counter() - t0)
    return out


def memory_kb(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(rest.split()[0])
    return fields


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=3000)
    parser.add_argument("--topics", type=int, default=30)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-console-") as tmp:
        directory = args.dir or Path(tmp)
        t0 = time.perf_counter()
        local = three_brokers(directory)
        console = None
        try:
            bootstrap = local.layout.bootstrap_servers
            topic = asyncio.run(fill(bootstrap, args.topics, args.partitions, args.records))
            print(f"cluster, {args.partitions} partitions and {args.records} records ready in "
                  f"{time.perf_counter() - t0:.0f} s")  # fmt: skip
            port = free_port()
            metrics = [
                arg
                for i in range(local.layout.brokers)
                for arg in ("--metrics-url", f"{i}={local.layout.metrics_url(i)}")
            ]
            console = subprocess.Popen(
                [sys.executable, "-m", "tools.main", "console", "--bootstrap-server", bootstrap,
                 "--port", str(port), *metrics],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    http_times(url, ["/api/csrf"])
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            n = args.requests
            memory = {"started": memory_kb(console.pid)}
            http_times(url, ["/topics"])  # the console's first connections and metadata
            topics_page = http_times(url, ["/topics"] * n)
            memory["topics pages"] = memory_kb(console.pid)
            offsets = [random.randrange(max(1, args.records)) for _ in range(n)]
            pages = http_times(
                url, [f"/topics/{topic}/messages?partition=0&offset={o}&limit=50" for o in offsets]
            )
            memory["messages pages"] = memory_kb(console.pid)
            metadata, fetches = asyncio.run(client_round_trips(bootstrap, topic, args.records, n))
        finally:
            if console is not None:
                console.terminate()
                console.wait(15)
            local.stop(grace_s=30)

    def ms(xs: list[float]) -> str:
        return f"{1000 * statistics.median(xs):7.1f} ms"

    print(f"median over {n} requests ({args.partitions} partitions, {args.records} records):")
    print(f"  topics page (HTTP)          {ms(topics_page)}   target < 300 ms")
    print(f"  messages page (HTTP)        {ms(pages)}   target < 300 ms")
    print(f"  client Metadata (all)       {ms(metadata)}")
    print(f"  client Fetch (one page)     {ms(fetches)}")
    for when, kb in memory.items():
        print(f"console memory after {when}: RSS {kb.get('VmRSS', 0) / 1024:.0f} MB, "
              f"peak {kb.get('VmHWM', 0) / 1024:.0f} MB   target < 150 MB")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
