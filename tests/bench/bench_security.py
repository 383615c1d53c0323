"""Security benchmark: what TLS and SASL cost, beside PLAINTEXT on the same broker, same run.

    .venv/bin/python tests/bench/bench_security.py [--mb 200] [--connections 200]
        [--rounds 1] [--phases produce,fetch,connections] [--profile DIR] [--keep]

One broker (``LocalCluster``, embedded ZooKeeper) with three client listeners: PLAINTEXT,
SSL and SASL_SSL (SCRAM-SHA-512, a user created with ``minikafka configs --zookeeper``).
Certificates come from ``tools.certificates`` (EC P-256). The load is confluent-kafka in a
process of its own (1 KiB records, linger 5 ms, 64 KiB batches, acks 1), so the broker's
CPU is measured apart from it (utime + stime of the broker process).

Figures, each beside its PLAINTEXT baseline:

- produce MB/s and broker (and client) CPU-s per GB over PLAINTEXT and SASL_SSL (target: SASL_SSL at
  least 0.7x PLAINTEXT);
- catch-up fetch MB/s and CPU-s per GB over PLAINTEXT (sendfile) and over SSL (the same
  read path with one copy into the TLS layer; target: at least 0.5x);
- new SASL_SSL connections per second, each a full TLS handshake, ApiVersions,
  SaslHandshake and a SCRAM-SHA-512 exchange (the project's client, one after another),
  with the broker's CPU milliseconds per connection; PLAINTEXT connections beside them.

The load shares the machine's 2 cores with the broker: compare the rows, not absolute
numbers. ``--rounds N`` repeats the produce and fetch pairs (each round on fresh topics),
since on a shared machine a single ratio is noise; ``--profile DIR`` records the broker
with py-spy during each phase (collapsed stacks, ``DIR/<phase>.txt``); ``--keep`` leaves
the broker's directory, its log included.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client.connection import Connection, ConnectionConfig  # noqa: E402
from client.security import ClientSecurity, SaslCredentials  # noqa: E402
from tools.certificates import CertificateAuthority  # noqa: E402
from tools.cluster import ClusterLayout, LocalCluster  # noqa: E402
from tools.zookeeper_server import free_port  # noqa: E402

PY = sys.executable
MB = 1024 * 1024
RECORD = 1024
USER, PASSWORD = "bench", "bench-secret"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


LOAD = r"""
import json, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
mode, topic, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
conf = json.loads(sys.argv[5])
conf["log_level"] = 0
if mode == "consume":
    c = Consumer({**conf, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 1048576,
                  "fetch.queue.backoff.ms": 10})
    c.assign([TopicPartition(topic, 0, -2)])
    n = nbytes = 0
    start = None
    last = time.monotonic()
    while n < count and time.monotonic() - last < 10:
        msgs = c.consume(num_messages=min(10000, count - n), timeout=0.5)
        if msgs and start is None:
            start, cpu = time.monotonic(), time.process_time()
        for m in msgs:
            if m.error() is None:
                n += 1
                nbytes += len(m.value())
        if msgs:
            last = time.monotonic()
    c.close()
    print(json.dumps({"records": n, "bytes": nbytes, "seconds": (last - start) if start else 0,
                      "cpu": time.process_time() - cpu if start else 0}))
    sys.exit(0)
p = Producer({**conf, "linger.ms": 5, "batch.size": 65536, "acks": 1,
              "enable.idempotence": False, "queue.buffering.max.messages": 1000000,
              "queue.buffering.max.kbytes": 1048576})
errors = 0
def report(err, msg):
    global errors
    if err is not None:
        errors += 1
p.produce(topic, b"warm", partition=0, on_delivery=report)
p.flush(30)
value = b"x" * size
start, cpu = time.monotonic(), time.process_time()
sent = 0
while sent < count:
    try:
        p.produce(topic, value, partition=0, on_delivery=report)
        sent += 1
    except BufferError:
        p.poll(0.001)
    if sent % 1000 == 0:
        p.poll(0)
p.flush(120)
print(json.dumps({"records": sent, "bytes": sent * size, "seconds": time.monotonic() - start,
                  "cpu": time.process_time() - cpu, "errors": errors}))
"""


def load(mode: str, topic: str, count: int, conf: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [PY, "-c", LOAD, mode, topic, str(count), str(RECORD), json.dumps(conf)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"confluent {mode} failed: {done.stderr.strip()[-800:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_cli(*args: str) -> str:
    done = subprocess.run(
        [PY, "-m", "tools.main", *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    if done.returncode != 0:
        raise RuntimeError(f"minikafka {' '.join(args[:2])} failed: {done.stderr.strip()[-800:]}")
    return done.stdout


class Profiler:
    """``py-spy record`` of the broker during one phase (``--profile DIR``): collapsed
    stacks in ``DIR/<label>.txt``, one line per stack with its sample count. py-spy is
    not a dependency of the project: install it into the venv to use this."""

    def __init__(self, directory: Path | None, pid: int) -> None:
        self._directory = directory
        self._pid = pid
        spy = Path(PY).with_name("py-spy")
        self._spy = str(spy) if spy.exists() else shutil.which("py-spy")
        if directory is not None and self._spy is None:
            raise SystemExit("--profile needs py-spy (pip install py-spy into the venv)")

    @contextlib.contextmanager
    def phase(self, label: str) -> Iterator[None]:
        if self._directory is None or self._spy is None:
            yield
            return
        self._directory.mkdir(parents=True, exist_ok=True)
        out = self._directory / f"{label.replace(' ', '-')}.txt"
        spy = subprocess.Popen(
            [self._spy, "record", "--pid", str(self._pid), "--format", "raw", "--rate", "250",
             "--nonblocking", "--output", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            yield
        finally:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            spy.wait(60)


def measured(pid: int, action: Callable[[], dict[str, float]]) -> tuple[dict[str, float], float]:
    """(the action's result, broker CPU seconds it cost)."""
    before = cpu_seconds(pid)
    result = action()
    return result, cpu_seconds(pid) - before


async def connect_many(port: int, security: ClientSecurity, count: int) -> float:
    """Seconds to open (and close) ``count`` connections one after another."""
    config = ConnectionConfig("bench-connect", 10.0, request_timeout_s=10.0, security=security)
    start = time.perf_counter()
    for _ in range(count):
        conn = await Connection.open("127.0.0.1", port, config)
        conn.close()
        await conn.wait_closed()
    return time.perf_counter() - start


def start_broker(work: Path) -> tuple[LocalCluster, dict[str, int]]:
    """One broker with PLAINTEXT, SSL and SASL_SSL client listeners (its own ZooKeeper),
    and the bench user's SCRAM-SHA-512 credentials, written to ZooKeeper as an operator
    creates them (``minikafka configs --zookeeper``)."""
    ca = CertificateAuthority()
    (work / "ca.crt").write_bytes(ca.cert_pem)
    server = ca.issue("localhost", hosts=["127.0.0.1", "localhost"])
    (work / "broker.pem").write_bytes(server.keystore_pem)
    ports = dict(zip(("PLAINTEXT", "CONTROLLER", "SSL", "SASL_SSL", "metrics", "zookeeper"),
                     (free_port() for _ in range(6)), strict=True))  # fmt: skip
    listeners = ",".join(
        f"{name}://127.0.0.1:{ports[name]}"
        for name in ("PLAINTEXT", "CONTROLLER", "SSL", "SASL_SSL")
    )
    overrides = (
        ("listeners", listeners),
        ("advertised.listeners", listeners),
        ("listener.security.protocol.map",
         "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL"),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", str(work / "broker.pem")),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", str(work / "ca.crt")),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
        ("num.partitions", "1"),
        ("offsets.topic.num.partitions", "1"),
    )  # fmt: skip
    layout = ClusterLayout(
        directory=work / "cluster",
        client_ports=(ports["PLAINTEXT"],),
        control_ports=(ports["CONTROLLER"],),
        metrics_ports=(ports["metrics"],),
        zookeeper_port=ports["zookeeper"],
        overrides=overrides,
    )
    cluster = LocalCluster(layout)
    cluster.start(timeout_s=90)
    try:
        # the broker follows credential changes live (/config/changes)
        run_cli(
            "configs", "--zookeeper", f"127.0.0.1:{ports['zookeeper']}", "--alter",
            "--entity-type", "users", "--entity-name", USER,
            "--add-config", f"SCRAM-SHA-512=[password={PASSWORD}]",
        )  # fmt: skip
    except BaseException:
        cluster.stop(grace_s=30)
        raise
    return cluster, ports


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="MB of record values per run")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1, help="produce and fetch pairs run")
    parser.add_argument(
        "--phases", default="produce,fetch,connections", help="which of the three to run"
    )
    parser.add_argument("--profile", type=Path, help="py-spy the broker into this directory")
    parser.add_argument(
        "--keep", action="store_true", help="keep the broker's directory (its log) and say where"
    )
    args = parser.parse_args()
    count = args.mb * MB // RECORD
    phases = set(args.phases.split(","))

    work = Path(tempfile.mkdtemp(prefix="bench-security-"))
    if args.keep:
        print(f"broker directory {work}")
    try:
        cluster, ports = start_broker(work)
        try:
            pid = cluster.processes[0].pid
            profiler = Profiler(args.profile, pid)
            tls_conf = {"ssl.ca.location": str(work / "ca.crt")}
            confs = {
                "PLAINTEXT": {"bootstrap.servers": f"127.0.0.1:{ports['PLAINTEXT']}"},
                "SSL": {"bootstrap.servers": f"127.0.0.1:{ports['SSL']}",
                        "security.protocol": "SSL", **tls_conf},
                "SASL_SSL": {"bootstrap.servers": f"127.0.0.1:{ports['SASL_SSL']}",
                             "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                             "sasl.username": USER, "sasl.password": PASSWORD, **tls_conf},
            }  # fmt: skip
            print(f"1 KiB records, {args.mb} MB per run; broker CPU from /proc (load apart)")
            for round_ in range(1, args.rounds + 1):
                rows: dict[str, tuple[float, float, float]] = {}
                if "produce" in phases:
                    for name in ("PLAINTEXT", "SASL_SSL"):
                        topic = f"bench-{name.lower()}-{round_}"
                        run_cli(
                            "topics", "--bootstrap-server", f"127.0.0.1:{ports['PLAINTEXT']}",
                            "--create", "--topic", topic, "--partitions", "1",
                            "--replication-factor", "1",
                        )  # fmt: skip
                        with profiler.phase(f"produce {name} {round_}"):
                            action = functools.partial(load, "produce", topic, count, confs[name])
                            result, cpu = measured(pid, action)
                        gb = result["bytes"] / 1e9
                        mbs = result["bytes"] / MB / result["seconds"]
                        rows[f"produce {name}"] = (mbs, cpu / gb, result["cpu"] / gb)
                if "fetch" in phases:
                    source = f"bench-fetch-{round_}"
                    run_cli(
                        "topics", "--bootstrap-server", f"127.0.0.1:{ports['PLAINTEXT']}",
                        "--create", "--topic", source, "--partitions", "1",
                        "--replication-factor", "1",
                    )  # fmt: skip
                    load("produce", source, count, confs["PLAINTEXT"])
                    # the group coordinator's topic is made by the first consumer: not
                    # by a measured one
                    load("consume", source, 10, confs["PLAINTEXT"])
                    for name in ("PLAINTEXT", "SSL"):
                        with profiler.phase(f"fetch {name} {round_}"):
                            action = functools.partial(load, "consume", source, count, confs[name])
                            result, cpu = measured(pid, action)
                        gb = result["bytes"] / 1e9
                        mbs = result["bytes"] / MB / result["seconds"] if result["seconds"] else 0
                        rows[f"fetch {name}"] = (mbs, cpu / gb, result["cpu"] / gb)
                if rows:
                    print(f"round {round_}")
                for label, (mbs, cpu_gb, client_gb) in rows.items():
                    print(
                        f"  {label:<20} {mbs:8.1f} MB/s   {cpu_gb:6.2f} broker CPU-s/GB"
                        f"   {client_gb:6.2f} client CPU-s/GB"
                    )
                if "produce" in phases:
                    ratio = rows["produce SASL_SSL"][0] / rows["produce PLAINTEXT"][0]
                    print(f"  produce SASL_SSL / PLAINTEXT: {ratio:.2f}x (target 0.7x)")
                if "fetch" in phases:
                    ratio = rows["fetch SSL"][0] / rows["fetch PLAINTEXT"][0]
                    print(f"  fetch SSL / PLAINTEXT (sendfile): {ratio:.2f}x (target 0.5x)")

            if "connections" in phases:
                client_tls = ssl.create_default_context(cafile=str(work / "ca.crt"))
                secured = ClientSecurity(
                    "SASL_SSL", client_tls, SaslCredentials("SCRAM-SHA-512", USER, PASSWORD)
                )
                for name, security in (("PLAINTEXT", ClientSecurity()), ("SASL_SSL", secured)):
                    before = cpu_seconds(pid)
                    with profiler.phase(f"connections {name}"):
                        seconds = asyncio.run(connect_many(ports[name], security, args.connections))
                    cpu = cpu_seconds(pid) - before
                    print(
                        f"connections {name:<10} {args.connections / seconds:8.1f} /s   "
                        f"{1000 * cpu / args.connections:6.2f} broker CPU-ms each"
                    )
        finally:
            cluster.stop(grace_s=30)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
