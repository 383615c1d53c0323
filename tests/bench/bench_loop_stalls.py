"""Event-loop stalls under produce load: how long a tiny request waits while segments roll.

    .venv/bin/python tests/bench/bench_loop_stalls.py [--seconds 30] [--rate 4000]
        [--partitions 6] [--segment-mib 1] [--probe-ms 5] [--py-spy BROKER] [--dir DIR]

A broker runs every client's requests on one event loop, so anything that blocks it (a
disk call that waits on the journal, a long CPU-bound step) delays every connection at
once. This benchmark makes a 3-broker ``LocalCluster`` (embedded ZooKeeper) and one topic
of ``--partitions`` partitions, replication factor 3, min.insync.replicas 2, and a small
``segment.bytes`` (``--segment-mib``) so that segments roll often: at the default 4,000
records/s of 1 KiB each, every broker (each holds a replica of every partition) rolls a
segment several times a second. A confluent-kafka producer (acks=all, linger 5 ms) sends
that paced load for ``--seconds``.

Meanwhile one probe thread per broker, on its own connection, sends an ApiVersions v0
request every ``--probe-ms`` and times the answer. ApiVersions does no work to speak of,
so its latency is the time the request waited for the broker's event loop: a stall shows
as one slow probe (and the probes queued behind it). Printed per broker: probes, p50,
p99, p99.9 and max latency, how many took over 50 and 100 ms, and the worst few with
when they happened; then the segments each broker rolled (the .log files of the topic
in its data directory at the end).

``--py-spy BROKER``: sample that broker with py-spy during the load (non-blocking, idle
frames included, so time spent waiting in a system call is seen; a chrometrace, so each
sample has its time) and print where the event-loop thread spent its time outside the
selector -- the innermost frame of storage (else of the broker's own code) of each
sample, in milliseconds -- then every uninterrupted busy stretch of the loop of at
least ``--stall-ms``, with when it began and what it did. Blocking disk work on the loop
shows there as os.* calls under storage/.

Figures are printed, never asserted. Everything shares the machine's two cores: compare
the rows of one run, or two revisions with tests/bench/compare_revisions.py.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools.cluster import ClusterLayout, LocalCluster  # noqa: E402
from tools.zookeeper_server import free_port  # noqa: E402

TOPIC = "stalls"
RECORD_SIZE = 1024
#: py-spy is not a dependency of the project: ``pip install py-spy`` (into the venv or
#: anywhere on PATH) for ``--py-spy``
PY_SPY_NAME = "py-spy"
SPY_RATE = 200  # samples a second
#: functions whose time on the loop (with their callees) is summed: a roll, an append's
#: write to the .log and its index entries
SPANS = ("Log.roll", "LogSegment._write", "_Index._write_entry", "_Index.reserve")
#: frames of the broker's own code (the innermost of them names the work)
OWN_CODE = ("storage/", "broker/", "protocol/", "timer/", "zk/", "controller/")


def api_versions_frame(correlation_id: int) -> bytes:
    client_id = b"probe"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


def read_exact(sock: socket.socket, n: int) -> bytes:
    parts: list[bytes] = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("broker closed the probe connection")
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


@dataclass
class Probe:
    """Times an ApiVersions round trip to one broker every ``interval_s``."""

    port: int
    interval_s: float
    samples: list[tuple[float, float]] = field(default_factory=list)  # (start, latency)
    errors: int = 0

    def run(self, stop: threading.Event, t0: float) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        correlation = 0
        try:
            while not stop.is_set():
                correlation += 1
                start = time.perf_counter()
                try:
                    sock.sendall(api_versions_frame(correlation))
                    (size,) = struct.unpack(">i", read_exact(sock, 4))
                    read_exact(sock, size)
                except OSError:
                    self.errors += 1
                    sock.close()
                    sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
                    continue
                end = time.perf_counter()
                self.samples.append((start - t0, end - start))
                pause = self.interval_s - (time.perf_counter() - start)
                if pause > 0:
                    stop.wait(pause)
        finally:
            sock.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]


def produce(bootstrap: str, rate: int, seconds: float, partitions: int) -> tuple[int, int]:
    """Send ``rate`` records a second for ``seconds``; (acknowledged, failed)."""
    from confluent_kafka import Producer

    outcome = Counter[str]()

    def on_delivery(err: object, _msg: object) -> None:
        outcome["failed" if err is not None else "acked"] += 1

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "enable.idempotence": False,
            "queue.buffering.max.kbytes": 256 * 1024,
        }
    )
    value = os.urandom(RECORD_SIZE)
    start = time.perf_counter()
    sent = 0
    while (now := time.perf_counter()) - start < seconds:
        due = int((now - start) * rate)
        while sent < due:
            try:
                producer.produce(TOPIC, value, partition=sent % partitions, on_delivery=on_delivery)
            except BufferError:
                producer.poll(0.01)
                continue
            sent += 1
        producer.poll(0.002)
    producer.flush(60)
    return outcome["acked"], outcome["failed"]


def create_topic(bootstrap: str, partitions: int, segment_bytes: int) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(
        TOPIC,
        partitions,
        3,
        config={"segment.bytes": str(segment_bytes), "min.insync.replicas": "2"},
    )
    for future in admin.create_topics([topic], operation_timeout=30).values():
        future.result(60)


def find_py_spy() -> str:
    """py-spy beside this Python (the venv) or on PATH; exits naming the fix if neither."""
    beside = Path(sys.executable).with_name(PY_SPY_NAME)
    found = str(beside) if beside.exists() else shutil.which(PY_SPY_NAME)
    if found is None:
        sys.exit("--py-spy needs py-spy: pip install py-spy")
    return found


def start_spy(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [find_py_spy(), "record", "--pid", str(pid), "--rate", str(SPY_RATE), "--duration",
         str(int(seconds)), "--nonblocking", "--idle", "--format", "chrometrace",
         "--output", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


Frame = tuple[str, str, int]  # function, file, line


def _frame_name(frame: Frame) -> str:
    name, filename, line = frame
    for part in OWN_CODE:
        at = filename.find(part)
        if at >= 0:
            filename = filename[at:]
            break
    else:
        filename = os.path.basename(filename)
    return f"{name} ({filename}:{line})"


def _culprit(stack: list[Frame]) -> str:
    """The innermost frame of storage (else of the broker's own code), with the leaf
    when that is deeper: what the loop thread was doing."""
    own = [f for f in stack if any(part in f[1] for part in OWN_CODE)]
    storage = [f for f in own if "storage/" in f[1]]
    inner = storage[-1] if storage else own[-1] if own else stack[-1]
    leaf = stack[-1]
    return _frame_name(inner) if inner == leaf else f"{_frame_name(inner)} -> {_frame_name(leaf)}"


@dataclass
class LoopProfile:
    """The event-loop thread's time, from a py-spy chrometrace: where it went outside
    the selector (``busy``: culprit -> seconds; ``longest``: culprit -> its longest run
    of consecutive samples, about its slowest single call) and each uninterrupted busy
    stretch at least ``min_stall_s`` long (start s from the first sample, length s, its
    culprits with their seconds, longest first)."""

    busy: dict[str, float]
    longest: dict[str, float]
    stalls: list[tuple[float, float, list[tuple[str, float]]]]
    #: for each of ``SPANS``: (seconds the loop spent inside it, callees included;
    #: the longest uninterrupted stretch of it)
    spans: dict[str, tuple[float, float]]


def most_common(times: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(times.items(), key=lambda item: -item[1])


def loop_profile(trace: Path, min_stall_s: float) -> LoopProfile:
    """Read a chrometrace (begin/end events of frames per thread, timestamps in us).
    The loop thread is the one whose stacks pass through ``Runner.run``; it waits for
    events when ``Runner.run`` is its innermost Python frame (uvloop's select is C)."""
    import json

    events = json.loads(trace.read_text())
    stacks: dict[int, list[Frame]] = {}
    timeline: dict[int, list[tuple[float, list[Frame]]]] = {}
    for ev in events:
        tid, ts = ev["tid"], ev["ts"] / 1e6
        stack = stacks.setdefault(tid, [])
        if ev["ph"] == "B":
            stack.append((ev["name"], ev["args"].get("filename", ""), ev["args"].get("line", 0)))
        elif ev["ph"] == "E" and stack:
            stack.pop()
        timeline.setdefault(tid, []).append((ts, list(stack)))
    loop_tids = [
        t for t, line in timeline.items() if any(f[0] == "Runner.run" for _, s in line for f in s)
    ]
    loop_tid = loop_tids[0] if loop_tids else None
    busy: dict[str, float] = defaultdict(float)
    longest: dict[str, float] = {}
    stalls: list[tuple[float, float, list[tuple[str, float]]]] = []
    span_total = dict.fromkeys(SPANS, 0.0)
    span_run = dict.fromkeys(SPANS, 0.0)
    span_longest = dict.fromkeys(SPANS, 0.0)

    def spans() -> dict[str, tuple[float, float]]:
        return {k: (span_total[k], span_longest[k]) for k in SPANS}

    if loop_tid is None:
        return LoopProfile(busy, longest, stalls, spans())
    line = timeline[loop_tid]
    origin = line[0][0]
    run_start: float | None = None
    run_work: dict[str, float] = defaultdict(float)
    same: tuple[str, float] = ("", 0.0)  # the current culprit and its run so far
    for (ts, stack), (next_ts, _) in itertools.pairwise(line):
        width = next_ts - ts
        if width <= 0:
            continue
        idle = not stack or stack[-1][0] == "Runner.run"
        names = {f[0] for f in stack}
        for span in SPANS:
            if span in names and not idle:
                span_total[span] += width
                span_run[span] += width
                span_longest[span] = max(span_longest[span], span_run[span])
            else:
                span_run[span] = 0.0
        if idle or "Runner.run" not in names:
            same = ("", 0.0)
        if idle:
            if run_start is not None:
                if ts - run_start >= min_stall_s:
                    stalls.append((run_start - origin, ts - run_start, most_common(run_work)[:3]))
                run_start, run_work = None, defaultdict(float)
            continue
        if "Runner.run" not in names:
            continue
        culprit = _culprit(stack)
        busy[culprit] += width
        same = (culprit, same[1] + width if same[0] == culprit else width)
        longest[culprit] = max(longest.get(culprit, 0.0), same[1])
        if run_start is None:
            run_start = ts
        run_work[culprit] += width
    return LoopProfile(busy, longest, stalls, spans())


def print_profile(profile: LoopProfile, broker: int) -> None:
    def row(frame: str, secs: float) -> str:
        return f"  {secs * 1000:8.0f} {profile.longest[frame] * 1000:6.0f}  {frame}"

    print(f"py-spy, broker {broker}'s event loop outside select (ms in all, longest run):")
    for frame, secs in most_common(profile.busy)[:20]:
        print(row(frame, secs))
    for span, (total, run) in profile.spans.items():
        ms = f"{total * 1000:.0f} ms, longest {run * 1000:.0f} ms"
        print(f"py-spy, broker {broker}'s loop in {span} (callees too): {ms}")
    print(f"py-spy, broker {broker}'s storage frames (ms in all, longest run):")
    storage = [(f, secs) for f, secs in most_common(profile.busy) if "storage/" in f]
    for frame, secs in storage[:15]:
        print(row(frame, secs))
    print(f"py-spy, broker {broker}'s longest busy stretches ({len(profile.stalls)} in all):")
    for start, length, work in sorted(profile.stalls, key=lambda s: -s[1])[:15]:
        what = "; ".join(f"{w} {secs * 1000:.0f} ms" for w, secs in work)
        print(f"  {length * 1000:6.0f} ms at {start:6.1f} s: {what}")


def segments_of(directory: Path) -> int:
    return sum(1 for p in directory.rglob(f"{TOPIC}-*/*.log"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="load duration (30)")
    parser.add_argument("--rate", type=int, default=4000, help="records a second (4000)")
    parser.add_argument("--partitions", type=int, default=6, help="partitions (6)")
    parser.add_argument("--segment-mib", type=float, default=1.0, help="segment.bytes (1 MiB)")
    parser.add_argument("--probe-ms", type=float, default=5.0, help="probe interval (5 ms)")
    parser.add_argument("--worst", type=int, default=5, help="worst probes to list per broker")
    parser.add_argument("--py-spy", type=int, default=None, metavar="BROKER",
                        help="profile this broker (0-2) with py-spy")  # fmt: skip
    parser.add_argument("--stall-ms", type=float, default=30.0,
                        help="list the loop's busy stretches from this long (30 ms)")  # fmt: skip
    parser.add_argument("--dir", type=Path, default=None, help="cluster directory (a temp one)")
    args = parser.parse_args()
    if args.py_spy is not None:
        find_py_spy()  # before the cluster starts: a missing py-spy says so at once

    with tempfile.TemporaryDirectory(prefix="bench-stalls-") as tmp:
        directory = args.dir or Path(tmp)
        ports = [free_port() for _ in range(10)]
        layout = ClusterLayout(
            directory=directory,
            client_ports=tuple(ports[0:3]),
            control_ports=tuple(ports[3:6]),
            metrics_ports=tuple(ports[6:9]),
            zookeeper_port=ports[9],
        )
        cluster = LocalCluster(layout)
        cluster.start(timeout_s=90)
        try:
            bootstrap = f"127.0.0.1:{ports[0]}"
            segment_bytes = int(args.segment_mib * 1024 * 1024)
            create_topic(bootstrap, args.partitions, segment_bytes)
            print(
                f"load: {args.rate} records/s of {RECORD_SIZE} B for {args.seconds:.0f} s, "
                f"{args.partitions} partitions, RF 3, acks=all, segment.bytes {segment_bytes}"
            )
            probes = [Probe(port, args.probe_ms / 1000) for port in ports[0:3]]
            stop = threading.Event()
            t0 = time.perf_counter()
            threads = [threading.Thread(target=p.run, args=(stop, t0), daemon=True) for p in probes]
            for t in threads:
                t.start()
            spy_out = directory / "py-spy.json"
            spy = None
            if args.py_spy is not None:
                spy = start_spy(cluster.processes[args.py_spy].pid, args.seconds, spy_out)
            acked, failed = produce(bootstrap, args.rate, args.seconds, args.partitions)
            stop.set()
            for t in threads:
                t.join(30)
            print(f"records acknowledged {acked} failed {failed}")
            for i, probe in enumerate(probes):
                lat = [s[1] * 1000 for s in probe.samples]
                if not lat:
                    print(f"broker {i}: no probe answered")
                    continue
                print(
                    f"broker {i} probe ms: n {len(lat)} p50 {percentile(lat, 0.5):.2f} "
                    f"p99 {percentile(lat, 0.99):.2f} p99.9 {percentile(lat, 0.999):.2f} "
                    f"max {max(lat):.1f} over50 {sum(x > 50 for x in lat)} "
                    f"over100 {sum(x > 100 for x in lat)}"
                )
                worst = sorted(probe.samples, key=lambda s: -s[1])[: args.worst]
                listed = ", ".join(f"{s[1] * 1000:.0f} ms at {s[0]:.1f} s" for s in sorted(worst))
                print(f"  broker {i} worst probes: {listed}")
            for i in range(3):
                segs = segments_of(directory / f"broker-{i}")
                print(f"broker {i} segments of the topic at the end: {segs}")
            if spy is not None:
                spy.wait(args.seconds + 60)
                if spy_out.exists():
                    print_profile(loop_profile(spy_out, args.stall_ms / 1000), args.py_spy)
                else:
                    print("py-spy wrote nothing")
        finally:
            cluster.stop(grace_s=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
