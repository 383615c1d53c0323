"""Capture golden frames of old protocol versions, as kafka-python sends them to minikafka.

    .venv/bin/python -m tests.tools.capture_old_versions [--out tests/golden/old-versions]

(from the repository root; takes about half a minute).

kafka-python configured with an old ``api_version`` (0.8.1 ... 0.11) skips ApiVersions and
sends the versions those brokers served: Metadata v0, OffsetCommit v0 (offsets kept in
ZooKeeper) and v1, OffsetFetch v0 and v1, FindCoordinator v0, ListOffsets v0,
CreateTopics v0, DeleteTopics v0, DescribeConfigs v0. The clients talk to a real
single-broker minikafka (with its ZooKeeper) through a RecordingProxy that points the
broker addresses of Metadata and FindCoordinator answers back at itself. The first
exchange of each (API, version) is kept, as

    <out>/<NNN>_<ApiName>_v<version>_{request,response}.bin  and  <out>/index.json

(frames without their size prefix); tests/unit/protocol/test_golden_old_versions.py
decodes and re-encodes them. Every wait is bounded; only the processes started here are
stopped, by their handles.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import protocol
from protocol import ApiKey
from protocol.api import api_name
from tests.tools import kp
from tests.tools.recording_proxy import UPSTREAM, Exchange, Recorder, RecordingProxy
from tools.cluster import ClusterLayout, LocalCluster
from tools.zookeeper_server import ZooKeeperServer, free_port

REPO = Path(__file__).resolve().parent.parent.parent
OUT = REPO / "tests" / "golden" / "old-versions"
TOPIC = "old-t"


class Capture:
    """A proxy in front of one broker, rewriting addresses to itself."""

    def __init__(self, broker_port: int) -> None:
        self.recorder = Recorder()
        self.proxy = RecordingProxy(
            ("127.0.0.1", broker_port), self.route, self.fake, self.rewrite, self.recorder
        )

    def route(self, header: kp.FrameHeader) -> str:
        return UPSTREAM

    async def fake(self, header: kp.FrameHeader, frame: bytes) -> bytes | None:
        raise AssertionError("every request goes to the broker")

    def rewrite(self, header: kp.FrameHeader, frame: bytes) -> bytes | None:
        key, version = header.api_key, header.api_version
        if key not in (ApiKey.METADATA, ApiKey.FIND_COORDINATOR):
            return None
        response = protocol.decode_response(frame, key, version)
        body = response.body
        if key == ApiKey.METADATA:
            for broker in body.brokers:
                broker.port = self.proxy.port
        elif version >= 4:
            for node in body.coordinators:
                node.port = self.proxy.port if node.node_id >= 0 else node.port
        elif body.node_id >= 0:
            body.port = self.proxy.port
        return protocol.encode_response(response)


def flows(bootstrap: str) -> None:
    """kafka-python as a client of old brokers (blocking; run on a thread)."""
    from kafka import KafkaConsumer
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
    from kafka.structs import OffsetAndMetadata, TopicPartition

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, api_version=(0, 10, 1))
    admin.create_topics([NewTopic(TOPIC, 1, 1), NewTopic("old-gone", 1, 1)], timeout_ms=30_000)
    admin.close()
    tp = TopicPartition(TOPIC, 0)
    for version, group, offset in (((0, 8, 1), "old-zk", 5), ((0, 8, 2), "old-kafka", 7)):
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            api_version=version,
            enable_auto_commit=False,
        )
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
        assert consumer.committed(tp) == offset
        consumer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=(0, 10, 0))
    consumer.end_offsets([tp])
    consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, api_version=(0, 11, 0))
    admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
    admin.delete_topics(["old-gone"], timeout_ms=30_000)
    admin.close()


def select(exchanges: list[Exchange]) -> list[Exchange]:
    """The first answered exchange of each (API, version)."""
    seen: set[tuple[int, int]] = set()
    kept = []
    for ex in exchanges:
        key = (ex.header.api_key, ex.header.api_version)
        if key in seen or ex.response is None:
            continue
        seen.add(key)
        kept.append(ex)
    return kept


def write(out: Path, selected: list[Exchange], client_version: str) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    entries: list[dict[str, Any]] = []
    for n, ex in enumerate(selected, 1):
        h = ex.header
        stem = f"{n:03d}_{api_name(h.api_key)}_v{h.api_version}"
        (out / f"{stem}_request.bin").write_bytes(ex.request)
        assert ex.response is not None
        (out / f"{stem}_response.bin").write_bytes(ex.response)
        entries.append(
            {
                "api_key": h.api_key,
                "api_version": h.api_version,
                "client_id": h.client_id,
                "request": f"{stem}_request.bin",
                "response": f"{stem}_response.bin",
            }
        )
    about = (
        f"kafka-python {client_version} with old api_version settings against a real "
        "minikafka broker (tests/tools/capture_old_versions.py); responses as the broker sent "
        "them (the client saw its own port in Metadata and FindCoordinator)"
    )
    index = {"about": about, "frames": entries}
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")


async def capture(out: Path) -> list[Exchange]:
    import kafka

    with tempfile.TemporaryDirectory(prefix="old-versions-") as tmp:
        directory = Path(tmp)
        zookeeper = ZooKeeperServer(data_dir=directory / "zookeeper", port=free_port())
        zookeeper.start()
        local: LocalCluster | None = None
        proxy: Capture | None = None
        try:
            connect = f"{zookeeper.connect_string}/old-{uuid.uuid4().hex[:8]}"
            ports = [free_port() for _ in range(3)]
            layout = ClusterLayout(
                directory=directory / "cluster",
                client_ports=(ports[0],),
                control_ports=(ports[1],),
                metrics_ports=(ports[2],),
                zookeeper_connect=connect,
                overrides=(("zookeeper.connect", connect),),
            )
            local = LocalCluster(layout)
            await asyncio.to_thread(local.start, 90)
            proxy = Capture(ports[0])
            await proxy.proxy.start()
            await asyncio.wait_for(
                asyncio.to_thread(flows, f"127.0.0.1:{proxy.proxy.port}"), timeout=120
            )
        finally:
            if proxy is not None:
                await proxy.proxy.close()
            if local is not None:
                await asyncio.to_thread(local.stop, 30)
            zookeeper.stop()
    selected = select(proxy.recorder.exchanges)
    write(out, selected, kafka.__version__)
    return selected


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    selected = asyncio.run(capture(args.out))
    names = ", ".join(f"{api_name(ex.header.api_key)} v{ex.header.api_version}" for ex in selected)
    print(f"wrote {len(selected)} exchanges under {args.out}: {names}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
