"""Benchmark down-conversion (Fetch v0-3) beside the zero-copy path (Fetch v4+), in one run.

    .venv/bin/python tests/bench/bench_downconversion.py [--quick]

In process (no broker), over a file of v2 batches read in fetch-sized regions (1 MiB):

- ``convert_region`` to magic 1 and to magic 0, of uncompressed and lz4 batches: MB/s of
  log bytes converted and CPU seconds per GB;
- baseline: the same regions sent with ``os.sendfile`` to a socket a thread drains (the
  zero-copy path): MB/s and the sending thread's CPU seconds per GB.

End to end, one broker (``cluster up`` machinery) and a plain fetch loop (one fetch in
flight, 1 MiB per partition, the bench's own protocol encoding), per topic of 100-byte
records (uncompressed, lz4):

- Fetch v11 (zero copy) alone: the baseline; Fetch v2 (magic 1) and v1 (magic 0), each
  converted by the broker: consumer MB/s and the broker's CPU seconds per GB;
- Fetch v11 again while a Fetch v2 loop converts another topic at the same time: what
  conversion in the broker costs a current consumer beside it.

Figures are wall-clock on a shared machine; compare within one run. MB/s counts the log's
bytes (v2 batches) a consumer advanced over, whatever format it received them in.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import protocol
from broker.down_conversion import convert_region
from protocol import ApiKey
from protocol.messages import FetchRequest
from protocol.records import Compression, SimpleRecord, build_batch, iter_batches
from protocol.records.legacy import iter_messages
from storage import FileRegion
from tests.bench.bench_broker import Peer, cpu_seconds, run_cli

MiB = 1024 * 1024
REGION = MiB
#: alternated rounds of the Fetch v11 measurements, alone and beside a conversion
ROUNDS = 3


def line(name: str, nbytes: int, seconds: float, cpu: float | None = None) -> None:
    extra = "" if cpu is None else f"  {cpu / (nbytes / 1e9):>7.2f} CPU-s/GB"
    print(f"  {name:<46} {nbytes / seconds / 1e6:>9,.1f} MB/s{extra}", flush=True)


# --- in process -----------------------------------------------------------------------------


def write_log(path: Path, size: int, codec: Compression) -> int:
    """A file of v2 batches (about 16 KiB of 100-byte records each) of ``size`` bytes."""
    # values differ (lz4 finds no repeats across records) but each is 40% padding: lz4
    # takes about a third off, as on text-like data
    values = [os.urandom(60) + b"x" * 40 for _ in range(1000)]
    offset = 0
    written = 0
    with open(path, "wb") as f:
        while written < size:
            records = [
                SimpleRecord(b"key-%d" % i, values[(offset + i) % 1000], (), 1_700_000_000_000 + i)
                for i in range(140)
            ]
            batch = build_batch(records, base_offset=offset, compression=codec)
            f.write(batch)
            written += len(batch)
            offset += len(records)
    return written


def regions(fd: int, size: int) -> list[tuple[FileRegion, int]]:
    """(region, first offset) per fetch of REGION bytes, cut at batch boundaries."""
    data = os.pread(fd, size, 0)
    out: list[tuple[FileRegion, int]] = []
    start, first, end = 0, 0, 0
    for pos, header in iter_batches(data):
        if pos + header.size - start > REGION and end > start:
            out.append((FileRegion(fd, start, end - start), first))
            start, first = end, header.base_offset
        end = pos + header.size
    out.append((FileRegion(fd, start, end - start), first))
    return out


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.thread_time()
    fn()
    return time.perf_counter() - wall, time.thread_time() - cpu


def bench_in_process(size: int) -> None:
    print(f"In process, {size // MiB} MiB of v2 batches in {REGION // MiB} MiB regions")
    with tempfile.TemporaryDirectory() as tmp:
        for codec in (Compression.NONE, Compression.LZ4):
            path = Path(tmp) / f"{codec.name}.log"
            total = write_log(path, size, codec)
            bench_file(path, total, codec.name.lower())


def bench_file(path: Path, total: int, name: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = regions(fd, total)
        for magic in (1, 0):

            def convert(m: int = magic) -> None:
                for region, first in parts:
                    convert_region(region, m, first)

            wall, cpu = timed(convert)
            line(f"down-convert {name} to magic {magic}", total, wall, cpu)
        wall, cpu = timed(lambda: send_all(parts))
        line(f"sendfile {name} (zero copy, baseline)", total, wall, cpu)
    finally:
        os.close(fd)


def send_all(parts: list[tuple[FileRegion, int]]) -> None:
    """sendfile every region to a socket that a thread drains."""
    left, right = socket.socketpair()
    total = sum(r.length for r, _ in parts)

    def drain() -> None:
        buf = bytearray(MiB)
        got = 0
        while got < total:
            n = right.recv_into(buf)
            if not n:
                return
            got += n

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        for region, _ in parts:
            sent = 0
            while sent < region.length:
                sent += os.sendfile(
                    left.fileno(), region.fd, region.position + sent, region.length - sent
                )
    finally:
        reader.join()
        left.close()
        right.close()


# --- end to end -----------------------------------------------------------------------------


def fetch_loop(
    port: int, topic: str, version: int, end_offset: int, on_first: Callable[[], None] | None = None
) -> int:
    """Fetch ``topic``-0 from offset 0 to ``end_offset`` at ``version``; the log bytes
    advanced over (v2 batches' sizes, found from the offsets reached)."""
    sock = socket.create_connection(("127.0.0.1", port))
    offset, corr, received = 0, 0, 0
    try:
        while offset < end_offset:
            corr += 1
            body = FetchRequest(
                replica_id=-1,
                max_wait_ms=500,
                min_bytes=1,
                max_bytes=50 * MiB,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=[
                    FetchRequest.FetchTopic(
                        topic=topic,
                        partitions=[
                            FetchRequest.FetchPartition(
                                partition=0, fetch_offset=offset, partition_max_bytes=REGION
                            )
                        ],
                    )
                ],
            )
            frame = protocol.encode_request(
                protocol.make_request(ApiKey.FETCH, version, corr, "bench", body)
            )
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            data = recv_exactly(sock, struct.unpack(">i", recv_exactly(sock, 4))[0])
            part = protocol.decode_response(data, ApiKey.FETCH, version).body.responses[0]
            records = part.partitions[0].records
            if records is None or len(records) == 0:
                continue
            received += len(records)
            offset = next_offset(records, version, offset)
            if on_first is not None:
                on_first()
                on_first = None
    finally:
        sock.close()
    return received


def next_offset(records: memoryview, version: int, offset: int) -> int:
    if version >= 4:
        for _, header in iter_batches(records):
            offset = header.next_offset
        return offset
    for _, message in iter_messages(records):
        offset = message.offset + 1
    return offset


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            raise ConnectionError("broker closed the connection")
        got += k
    return bytes(buf)


def log_bytes(peer: Peer, topic: str) -> int:
    """The bytes of partition 0's log (its .log files)."""
    out = run_cli(
        "log-dirs", "--bootstrap-server", peer.bootstrap, "--describe", "--topic-list", topic
    )
    import json

    doc = json.loads(out.strip().splitlines()[-1])
    return sum(p["size"] for b in doc["brokers"] for d in b["logDirs"] for p in d["partitions"])


def measure(
    peer: Peer, port: int, topic: str, version: int, end: int, size: int, passes: int = 1
) -> tuple[float, float]:
    cpu0 = cpu_seconds(peer.pid)
    start = time.perf_counter()
    for _ in range(passes):
        fetch_loop(port, topic, version, end)
    wall = time.perf_counter() - start
    return wall, cpu_seconds(peer.pid) - cpu0


def bench_broker(workdir: Path, size: int) -> None:
    from tests.bench.bench_broker import minikafka_peer

    records = size // 170  # a 100-byte record takes about 170 bytes in 64 KiB batches
    with minikafka_peer(workdir) as peer:
        port = int(peer.bootstrap.rsplit(":", 1)[1])
        topics = {"plain": "none", "lz4": "lz4", "side": "none"}
        for topic, codec in topics.items():
            peer.create_topic(topic)
            run_cli(
                "perf", "produce", "--bootstrap-server", peer.bootstrap, "--topic", topic,
                "--partition", "0", "--num-records", str(records), "--record-size", "100",
                "--throughput", "-1", "--acks", "1", "--batch-size", "65536",
                "--linger-ms", "5", "--compression", codec,
            )  # fmt: skip
        print(f"End to end, one broker, {records:,} records of 100 bytes per topic")
        for topic in ("plain", "lz4"):
            total = log_bytes(peer, topic)
            for version, what in ((11, "zero copy, baseline"), (2, "magic 1"), (1, "magic 0")):
                fetch_loop(port, topic, version, min(records, 20_000))  # warm the page cache
                wall, cpu = measure(peer, port, topic, version, records, total)
                line(f"{topic}: Fetch v{version} ({what})", total, wall, cpu)
        total = log_bytes(peer, "plain")
        passes = 8
        alone: list[tuple[float, float]] = []
        beside: list[tuple[float, float]] = []
        for _ in range(ROUNDS):  # alternated, best of each: the machine is shared
            alone.append(measure(peer, port, "plain", 11, records, total, passes))
            beside.append(measure_beside_conversion(peer, port, records, total, passes))
        wall, cpu = min(alone)
        line(f"plain: Fetch v11 alone, {passes} passes (baseline)", total * passes, wall, cpu)
        wall, cpu = min(beside)
        line("plain: Fetch v11 beside a Fetch v2 converting", total * passes, wall, cpu)


def measure_beside_conversion(
    peer: Peer, port: int, records: int, total: int, passes: int
) -> tuple[float, float]:
    """The Fetch v11 loop while another process's Fetch v2 loop has the broker convert
    (in this process it would take the bench's own GIL from the Fetch v11 loop)."""
    side = subprocess.Popen(
        [sys.executable, __file__, "--side-consumer", str(port), "side", str(records)],
        stdout=subprocess.PIPE,
    )
    try:
        assert side.stdout is not None
        side.stdout.readline()  # its first fetch is answered: conversion under way
        return measure(peer, port, "plain", 11, records, total, passes)
    finally:
        side.terminate()
        side.wait(10)


def side_consumer(port: int, topic: str, records: int) -> None:
    """Fetch v2 over ``topic`` again and again until terminated (the bench's side load)."""
    first = True
    while True:
        fetch_loop(
            port,
            topic,
            2,
            records,
            on_first=(lambda: print("converting", flush=True)) if first else None,
        )
        first = False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller data (a quick look)")
    parser.add_argument("--no-broker", action="store_true", help="the in-process figures only")
    parser.add_argument("--no-in-process", action="store_true", help="the broker figures only")
    parser.add_argument("--side-consumer", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side_consumer:
        port, topic, records = args.side_consumer
        side_consumer(int(port), topic, int(records))
        return 0
    size = (16 if args.quick else 64) * MiB
    if not args.no_in_process:
        bench_in_process(size)
    if not args.no_broker:
        with tempfile.TemporaryDirectory() as tmp:
            bench_broker(Path(tmp), size)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
