"""Capture golden frames of clients configured for old brokers: legacy message sets on the wire.

    .venv/bin/python -m tests.tools.capture_legacy_golden [--out tests/golden/legacy]

(from the repository root; takes about half a minute.)

kafka-python with ``api_version=(0, 10)`` sends Produce v2 with magic 1 message sets and
reads with Fetch v2; with ``(0, 9)``, Produce v1 with magic 0 sets and Fetch v1 (that
client needs Metadata v0 from the broker: when its run fails, it is reported and
skipped). Each client produces three records uncompressed, and three each with gzip,
lz4 (0.10 only: kafka-python writes magic 0's lz4 only with the xxhash package) and
snappy, then consumes them back.

Upstream is a real minikafka broker (``tools.cluster.LocalCluster``, one broker with its
own ZooKeeper, on free ports), behind tests.tools.recording_proxy; Metadata answers are
rewritten (with kafka-python's codec) to name the proxy, so every request passes it. Only
the Produce and Fetch exchanges are kept, written as

    <out>/<NNN>_<ApiName>_v<version>_{request,response}.bin

(frames without the int32 size prefix) with ``<out>/index.json`` (client, api version,
codec, file names). The requests are the clients' own bytes; the responses are what this
broker answered (down-converted Fetch answers among them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.tools import kp
from tests.tools.recording_proxy import UPSTREAM, Exchange, Recorder, RecordingProxy

REPO = Path(__file__).resolve().parents[2]
CODECS = ("none", "gzip", "lz4", "snappy")
CLIENTS = {"kafka-python-0.10": (0, 10), "kafka-python-0.9": (0, 9)}

#: run in a subprocess against the proxy: produce per codec, then read everything back
FLOW = r"""
import sys
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
bootstrap, major, minor, topic = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
version = (major, minor)
# kafka-python writes magic 0's lz4 (with its wrong header checksum) only with the xxhash
# package, which is not installed here
codecs = ("none", "gzip", "lz4", "snappy") if version >= (0, 10) else ("none", "gzip", "snappy")
for codec in codecs:
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=version, linger_ms=20,
                             max_block_ms=10000,
                             compression_type=None if codec == "none" else codec,
                             client_id=f"golden-{codec}")
    for i in range(3):
        producer.send(topic, key=b"key-%d" % i, value=(b"%s-%d " % (codec.encode(), i)) * 8,
                      partition=0)
    producer.flush(10)
    try:
        producer.close(5)
    except Exception:  # kafka-python 3 at (0, 9) may time out closing: the records are sent
        pass
consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=version, group_id=None,
                         enable_auto_commit=False, client_id="golden-consumer")
tp = TopicPartition(topic, 0)
consumer.assign([tp])
consumer.seek(tp, 0)
got = 0
for _ in range(40):
    got += sum(len(v) for v in consumer.poll(timeout_ms=250).values())
    if got >= 3 * len(codecs):
        break
consumer.close()
print(got)
sys.exit(0 if got == 3 * len(codecs) else 1)
"""


class Capture:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.recorder = Recorder()
        self.proxy = RecordingProxy(
            upstream, lambda header: UPSTREAM, self._no_fake, self.rewrite, self.recorder
        )

    async def _no_fake(self, header: kp.FrameHeader, frame: bytes) -> bytes | None:
        raise AssertionError("every request goes to the broker")

    def rewrite(self, header: kp.FrameHeader, frame: bytes) -> bytes | None:
        """Metadata names the proxy as the broker, so the client comes back through it."""
        if header.api_key != 3:
            return None
        body = kp.decode_response(frame, 3, header.api_version)
        for broker in body.brokers:
            broker.host, broker.port = "127.0.0.1", self.proxy.port
        return bytes(
            kp.encode_response(body, kp.read_response_correlation_id(frame), header.api_version)
        )


def create_topic(bootstrap: str, topic: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "tools.main", "topics", "--bootstrap-server", bootstrap,
         "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1"],
        cwd=REPO, check=True, capture_output=True, timeout=60,
    )  # fmt: skip


async def run_client(
    upstream: tuple[str, int], version: tuple[int, int], topic: str
) -> list[Exchange]:
    capture = Capture(upstream)
    await capture.proxy.start()
    try:
        cmd = [sys.executable, "-c", FLOW, f"127.0.0.1:{capture.proxy.port}",
               str(version[0]), str(version[1]), topic]  # fmt: skip
        process = await asyncio.create_subprocess_exec(
            *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO
        )
        _, err = await asyncio.wait_for(process.communicate(), 90)
        if process.returncode != 0:
            print(f"  {version}: the client failed: {err.decode()[-3000:]}", file=sys.stderr)
            return []
    finally:
        await capture.proxy.close()
    return [e for e in capture.recorder.exchanges if e.header.api_key in (0, 1)]


def keep(exchanges: list[Exchange]) -> list[Exchange]:
    """Every Produce; the Fetch exchanges that carried records."""
    kept = []
    for e in exchanges:
        if e.header.api_key == 1:
            body = kp.decode_response(e.response or b"", 1, e.header.api_version)
            if not any(p.records for t in body.responses for p in t.partitions):
                continue
        kept.append(e)
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "tests" / "golden" / "legacy"))
    args = parser.parse_args()
    from tools.cluster import ClusterLayout, LocalCluster
    from tools.zookeeper_server import free_port

    out = Path(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        ports = [free_port() for _ in range(4)]
        layout = ClusterLayout(
            directory=Path(tmp) / "cluster",
            client_ports=(ports[0],),
            control_ports=(ports[1],),
            metrics_ports=(ports[2],),
            zookeeper_port=ports[3],
        )
        cluster = LocalCluster(layout)
        cluster.start(timeout_s=90)
        try:
            entries: list[dict[str, Any]] = []
            files: dict[str, bytes] = {}
            for client, version in CLIENTS.items():
                topic = "golden-" + client.replace(".", "")
                create_topic(layout.bootstrap_servers, topic)
                exchanges = keep(asyncio.run(run_client(("127.0.0.1", ports[0]), version, topic)))
                print(f"{client}: {len(exchanges)} Produce/Fetch exchanges")
                for e in exchanges:
                    n = len(entries) + 1
                    name = f"{n:03d}_{kp.api_name(e.header.api_key)}_v{e.header.api_version}"
                    entry: dict[str, Any] = {
                        "client": client,
                        "api_key": e.header.api_key,
                        "api_version": e.header.api_version,
                        "client_id": e.header.client_id,
                        "request": f"{name}_request.bin",
                        "response": f"{name}_response.bin" if e.response else None,
                    }
                    files[f"{name}_request.bin"] = e.request
                    if e.response:
                        files[f"{name}_response.bin"] = e.response
                    entries.append(entry)
        finally:
            cluster.stop(grace_s=30)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
    (out / "index.json").write_text(json.dumps({"frames": entries}, indent=1) + "\n")
    print(f"wrote {len(files)} frames under {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
