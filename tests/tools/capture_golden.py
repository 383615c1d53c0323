"""Capture golden Kafka frames from the four real clients.

    .venv/bin/python -m tests.tools.capture_golden [--clients kcat,confluent,...]
                                                   [--out tests/golden] [--explore]

(from the repository root; takes about 1.5 minutes).

For each client: start a fresh librdkafka mock cluster (confluent-kafka with
``test.mock.num.brokers``), put a RecordingProxy in front of it with a FakeBroker for
what the mock lacks, run the client's normal flows against the proxy (kcat commands, or
client_flows.py in a subprocess), then keep a small, de-duplicated selection of the
recorded exchanges and write them as

    tests/golden/<client>/<NNN>_<ApiName>_v<version>_{request,response}.bin

(frame bytes without the 4-byte size prefix) plus tests/golden/index.json.

What the proxy advertises in ApiVersions is minikafka's table (protocol.SUPPORTED_VERSIONS),
so clients pick the versions they would pick against minikafka. A request goes to the mock
when the mock implements that API at that version, otherwise to the fake. The
group-coordinator APIs share state, so per client each unit of them goes to one side
(GROUP_UPSTREAM). Responses are recorded as the upstream sent them; what the client got may
have been rewritten (broker addresses, the ApiVersions table, leader epochs for the "-epoch"
consumer), which the index notes.

Every wait is bounded; only processes started here are killed, by pid. Set
GOLDEN_FLOW_LOG=<file> (and GOLDEN_FLOW_DEBUG=1 for client debug logs) to keep the
clients' whole stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import struct
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import protocol
from tests.tools import kp
from tests.tools.fake_broker import FakeBroker, api_table, build
from tests.tools.recording_proxy import FAKE, UPSTREAM, Exchange, Recorder, RecordingProxy

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

#: What minikafka advertises to clients (protocol.SUPPORTED_VERSIONS); the inter-broker
#: APIs (4-7) are left out, no client sends them.
INTER_BROKER_APIS = frozenset({4, 5, 6, 7})
ADVERTISED: dict[int, tuple[int, int]] = {
    api: versions
    for api, versions in protocol.SUPPORTED_VERSIONS.items()
    if api not in INTER_BROKER_APIS
}
# The group coordinator's APIs share state, so each unit below is answered by one side for a
# whole client run: the mock where it implements every version that client sends in the
# unit (seen with --explore), else the fake. Offsets are a unit apart from membership: a
# commit does not need the fake to know the mock's members.
MEMBERSHIP = frozenset({10, 11, 12, 13, 14})  # FindCoordinator, Join/Heartbeat/Leave/Sync
OFFSETS = frozenset({8, 9})  # OffsetCommit, OffsetFetch
GROUP_UPSTREAM: dict[str, dict[str, str]] = {
    # librdkafka 2.0: FindCoordinator v2, JoinGroup v5, SyncGroup v3; OffsetFetch v7 > 6
    "kcat": {"membership": "mock", "offsets": "fake"},
    # librdkafka 2.16: same membership versions; OffsetFetch v8 > 6
    "confluent": {"membership": "mock", "offsets": "fake"},
    # kafka-python 3: FindCoordinator v4, JoinGroup v7, SyncGroup v5, OffsetFetch v8
    "kafka-python": {"membership": "fake", "offsets": "fake"},
    # aiokafka: FindCoordinator v1, JoinGroup v5, SyncGroup v3, OffsetCommit/Fetch v3
    "aiokafka": {"membership": "mock", "offsets": "mock"},
}
CLIENTS = ["kcat", "confluent", "kafka-python", "aiokafka"]
# Clients whose client.id ends so see leader epochs bumped (Session.rewrite_request).
EPOCH_CLIENT_SUFFIX = "-epoch"
CLIENT_TIMEOUT = 240.0
IO_TIMEOUT = 15.0
# At most this many exchanges per (client, api, version, variant) are kept: the first
# ones, plus the one with the largest response (e.g. a Fetch that carried records).
KEEP_FIRST = 2


# -- the mock cluster -----------------------------------------------------------------------


def start_mock() -> tuple[Any, tuple[str, int], str]:
    """A one-broker librdkafka mock cluster; it lives as long as the returned handle."""
    from confluent_kafka import Producer

    handle = Producer({"test.mock.num.brokers": 1, "log_level": 3})
    metadata = handle.list_topics(timeout=10)
    broker = next(iter(metadata.brokers.values()))
    return handle, (broker.host, int(broker.port)), str(metadata.cluster_id)


async def probe_mock_versions(address: tuple[str, int]) -> dict[int, tuple[int, int]]:
    """The mock's own ApiVersions table (asked with v0, which every broker answers)."""
    req = kp.REQUEST_CLASSES[kp.API_VERSIONS_KEY][0]()
    req.with_header(correlation_id=1, client_id="golden-probe")
    reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), IO_TIMEOUT)
    try:
        writer.write(bytes(req.encode(header=True, framed=True)))
        (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), IO_TIMEOUT))
        frame = await asyncio.wait_for(reader.readexactly(size), IO_TIMEOUT)
    finally:
        writer.close()
    resp = kp.decode_response(frame, kp.API_VERSIONS_KEY, 0)
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


# -- routing and rewriting --------------------------------------------------------------------


class Session:
    """One client's capture: mock + fake + proxy."""

    def __init__(self, client: str) -> None:
        self.client = client
        self.group_upstream = GROUP_UPSTREAM[client]
        self.recorder = Recorder()
        self.mock_versions: dict[int, tuple[int, int]] = {}
        self.proxy: RecordingProxy | None = None
        self.epoch_bump = 0
        self._mock_handle: Any = None

    async def start(self) -> str:
        self._mock_handle, mock_address, cluster_id = start_mock()
        self.mock_versions = await probe_mock_versions(mock_address)
        fake = FakeBroker(ADVERTISED, mock_address, cluster_id, lambda: self.port)
        self.proxy = RecordingProxy(
            mock_address,
            self.route,
            fake.handle,
            self.rewrite,
            self.recorder,
            io_timeout=60.0,
            rewrite_request=self.rewrite_request,
        )
        await self.proxy.start()
        return f"127.0.0.1:{self.port}"

    @property
    def port(self) -> int:
        return self.proxy.port if self.proxy is not None else 0

    async def stop(self) -> None:
        if self.proxy is not None:
            await self.proxy.close()
        self._mock_handle = None

    def mock_serves(self, api_key: int, version: int) -> bool:
        lo, hi = self.mock_versions.get(api_key, (1, 0))
        return lo <= version <= hi

    def route(self, header: kp.FrameHeader) -> str:
        for unit, keys in (("membership", MEMBERSHIP), ("offsets", OFFSETS)):
            if header.api_key in keys:
                return UPSTREAM if self.group_upstream[unit] == UPSTREAM else FAKE
        return UPSTREAM if self.mock_serves(header.api_key, header.api_version) else FAKE

    def rewrite(self, header: kp.FrameHeader, frame: bytes) -> bytes | None:
        """Point broker addresses at the proxy; advertise the matrix in ApiVersions."""
        key, version = header.api_key, header.api_version
        if key not in (3, 10, 18):
            return None
        body = kp.decode_response(frame, key, version)
        if key == 3:
            for broker in body.brokers:
                broker.host, broker.port = "127.0.0.1", self.port
            if (header.client_id or "").endswith(EPOCH_CLIENT_SUFFIX):
                # Every refresh shows a newer leader epoch, as if leadership kept moving.
                self.epoch_bump += 1
                for topic in body.topics:
                    for part in topic.partitions:
                        part.leader_epoch += self.epoch_bump
            # The mock names controller 0, a broker that does not exist; admin clients
            # then wait for it forever. Name the one real broker instead.
            if body.brokers and body.controller_id not in {b.node_id for b in body.brokers}:
                body.controller_id = body.brokers[0].node_id
        elif key == 10:
            nodes = body.coordinators if version >= 4 else [body]
            for node in nodes:
                if node.node_id >= 0:
                    node.host, node.port = "127.0.0.1", self.port
        else:
            if body.error_code != 0:
                return None
            cls = kp.RESPONSE_CLASSES[key]
            body.api_keys = build(cls, version, {"api_keys": api_table(ADVERTISED)}).api_keys
        return bytes(kp.encode_response(body, kp.read_response_correlation_id(frame), version))

    def rewrite_request(self, header: kp.FrameHeader, frame: bytes) -> bytes | None:
        """For the epoch-bumped client: drop leader fencing on its way to the mock.

        That client sees leader epochs above the mock's, growing with each Metadata
        (see rewrite), as after leader changes, so it validates positions with OffsetForLeaderEpoch
        (KIP-320). The mock would fence the higher epoch it never had, so the requests that
        carry it are forwarded with current_leader_epoch -1 (no check); what the client
        sent is still what gets recorded.
        """
        if not (header.client_id or "").endswith(EPOCH_CLIENT_SUFFIX) or header.api_key not in (
            1,
            2,
            23,
        ):
            return None
        request = kp.decode_request(frame)
        for topic in request.topics:
            for part in topic.partitions:
                part.current_leader_epoch = -1
        request.with_header(correlation_id=header.correlation_id, client_id=header.client_id)
        return bytes(request.encode(header=True))


# -- running the clients ----------------------------------------------------------------------


async def run_process(argv: list[str], timeout: float, stdin: bytes | None = None) -> str:
    """Run one client process; kill it (by its pid) when it outlives its deadline."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    try:
        _, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except TimeoutError:
        proc.kill()
        _, err = await proc.communicate()
        return f"TIMEOUT {argv}\n{err.decode(errors='replace')[-2000:]}"
    log_path = os.environ.get("GOLDEN_FLOW_LOG")  # debugging aid: keep whole logs
    if log_path:
        with open(log_path, "ab") as log:
            log.write(err)
    return f"rc={proc.returncode} {argv[:6]}\n{err.decode(errors='replace')[-4000:]}"


async def run_kcat(bootstrap: str, prefix: str, deadline: float) -> list[str]:
    topic, group = f"{prefix}-t1", f"{prefix}-g"
    base = ["kcat", "-b", bootstrap, "-X", f"client.id={prefix}-client"]
    lines = b"".join(f"k{i}:{f'golden-{i} ' * 30}\n".encode() for i in range(3))
    runs: list[tuple[list[str], bytes | None]] = [([*base, "-L"], None)]
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
        runs.append(
            ([*base, "-P", "-t", topic, "-p", "0", "-K", ":", "-z", codec, "-X", "acks=all"], lines)
        )
    for acks in ("0", "1"):
        runs.append(([*base, "-P", "-t", topic, "-p", "1", "-X", f"acks={acks}"], b"m\n"))
    runs.append(([*base, "-P", "-t", topic, "-p", "2", "-X", "enable.idempotence=true"], b"idem\n"))
    runs.append(([*base, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-c", "6"], None))
    # Twice: the second run finds the first one's committed offsets.
    for _ in range(2):
        runs.append(
            (
                [
                    *base,
                    "-G",
                    group,
                    "-e",
                    "-X",
                    "auto.offset.reset=earliest",
                    "-X",
                    "heartbeat.interval.ms=300",
                    "-X",
                    "session.timeout.ms=6000",
                    topic,
                ],
                None,
            )
        )
    runs.append(([*base, "-Q", "-t", f"{topic}:0:-1"], None))
    runs.append(
        (
            [
                *base,
                "-X",
                "security.protocol=SASL_PLAINTEXT",
                "-X",
                "sasl.mechanisms=PLAIN",
                "-X",
                "sasl.username=golden",
                "-X",
                "sasl.password=golden",
                "-L",
            ],
            None,
        )
    )
    logs = []
    for argv, stdin in runs:
        left = deadline - time.monotonic()
        if left <= 0:
            logs.append("deadline reached")
            break
        logs.append(await run_process(argv, min(left, 40.0), stdin))
    return logs


async def capture_client(client: str) -> tuple[Session, list[str]]:
    session = Session(client)
    bootstrap = await session.start()
    prefix = f"golden-{client}"
    deadline = time.monotonic() + CLIENT_TIMEOUT
    try:
        if client == "kcat":
            logs = await run_kcat(bootstrap, prefix, deadline)
        else:
            argv = [sys.executable, "-m", "tests.tools.client_flows", client, bootstrap, prefix]
            logs = [await run_process(argv, CLIENT_TIMEOUT)]
    finally:
        await session.stop()
    return session, logs


# -- selecting and writing --------------------------------------------------------------------


def consumed_length(frame: bytes, api_key: int, version: int, request: bool = False) -> int:
    """How many bytes kafka-python's decoder reads from a frame.

    The mock cluster sometimes appends bytes after a response (one extra byte after every
    Metadata v12); clients ignore them, a byte-exact round trip cannot, so those are cut.
    Requests are kept as sent: librdkafka 2.16 sends Metadata v9+ "all topics" with the
    null array as a 4-byte int32 instead of a 1-byte varint (confluentinc/librdkafka#5049),
    which Kafka reads as null followed by 3 ignored bytes; the index records that count.
    """
    import io

    cls = (kp.REQUEST_CLASSES if request else kp.RESPONSE_CLASSES)[api_key]
    stream = io.BytesIO(frame)
    cls.parse_header(stream, version=version)
    pos = stream.tell()
    if (
        not request
        and api_key == kp.API_VERSIONS_KEY
        and struct.unpack_from(">h", frame, pos)[0] != 0
    ):
        version = 0
    flexible = cls.flexible_version_q(version)
    decode = cls._struct.compiled_decode_from(
        version, compact=flexible, tagged=flexible, data_class=cls[None]
    )
    _, end = decode(memoryview(frame), pos)
    return int(end)


def variant(exchange: Exchange) -> str:
    """What makes two exchanges of one API version worth keeping both."""
    if exchange.header.api_key != kp.PRODUCE_KEY:
        return ""
    req = kp.decode_request(exchange.request)
    codec, idempotent = "?", False
    for topic in req.topic_data:
        for part in topic.partition_data:
            records = part.records
            if records and len(records) >= 61:  # a RecordBatch v2 header
                codec = str(struct.unpack_from(">h", records, 21)[0] & 0x7)
                idempotent = struct.unpack_from(">q", records, 43)[0] >= 0
    return f"acks={req.acks},codec={codec}" + (",idempotent" if idempotent else "")


def select(exchanges: list[Exchange]) -> list[Exchange]:
    seen: set[bytes] = set()
    groups: dict[tuple[int, int, str, str], list[Exchange]] = defaultdict(list)
    for ex in exchanges:
        if ex.response is None and kp.expects_response(ex.request):
            continue  # cut off by the end of the connection
        masked = ex.request[:4] + ex.request[8:]  # correlation id masked
        if masked in seen:
            continue
        seen.add(masked)
        key = (ex.header.api_key, ex.header.api_version, ex.upstream, variant(ex))
        groups[key].append(ex)
    keep: set[int] = set()
    for members in groups.values():
        keep.update(id(ex) for ex in members[:KEEP_FIRST])
        largest = max(members, key=lambda ex: len(ex.response or b""))
        keep.add(id(largest))
    return [ex for ex in exchanges if id(ex) in keep]


def write_client(out: Path, client: str, selected: list[Exchange]) -> list[dict[str, Any]]:
    folder = out / client
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    entries = []
    for n, ex in enumerate(selected, 1):
        h = ex.header
        stem = f"{n:03d}_{kp.api_name(h.api_key)}_v{h.api_version}"
        req_name = f"{client}/{stem}_request.bin"
        (out / req_name).write_bytes(ex.request)
        entry: dict[str, Any] = {
            "client": client,
            "api_key": h.api_key,
            "api_name": kp.api_name(h.api_key),
            "api_version": h.api_version,
            "correlation_id": h.correlation_id,
            "client_id": h.client_id,
            "request": req_name,
            "response": None,
            "upstream": ex.upstream,
            "response_rewritten_for_client": ex.rewritten,
            "variant": variant(ex) or None,
        }
        extra = len(ex.request) - consumed_length(ex.request, h.api_key, h.api_version, True)
        if extra:
            entry["request_trailing_bytes"] = extra
        if ex.response is not None:
            response = ex.response
            end = consumed_length(response, h.api_key, h.api_version)
            if end < len(response):
                entry["upstream_trailing_bytes_cut"] = len(response) - end
                response = response[:end]
            if h.api_key == kp.API_VERSIONS_KEY and h.api_version > ADVERTISED[h.api_key][1]:
                # The answer to a too-new ApiVersions request carries a v0 body.
                entry["response_body_version"] = 0
            resp_name = f"{client}/{stem}_response.bin"
            (out / resp_name).write_bytes(response)
            entry["response"] = resp_name
        entries.append(entry)
    return entries


def summarize(client: str, exchanges: list[Exchange]) -> str:
    seen: dict[tuple[int, int, str], int] = defaultdict(int)
    for ex in exchanges:
        seen[(ex.header.api_key, ex.header.api_version, ex.upstream)] += 1
    parts = [
        f"{kp.api_name(k)}v{v}{'*' if up == FAKE else ''}x{n}"
        for (k, v, up), n in sorted(seen.items())
    ]
    return f"{client}: " + " ".join(parts)


def client_versions() -> dict[str, str]:
    import aiokafka
    import confluent_kafka
    import kafka

    kcat = "kcat (librdkafka 2.0.2, Debian)"
    with contextlib.suppress(OSError):
        import subprocess

        proc = subprocess.run(["kcat", "-V"], capture_output=True, timeout=10, text=True)
        for line in proc.stdout.splitlines():
            if line.startswith("Version"):
                kcat = line.split("(")[0].strip() + " " + line[line.find("librdkafka") :][:17]
    return {
        "kcat": kcat,
        "confluent": f"confluent-kafka {confluent_kafka.version()[0]} "
        f"(librdkafka {confluent_kafka.libversion()[0]})",
        "kafka-python": f"kafka-python {kafka.__version__}",
        "aiokafka": f"aiokafka {aiokafka.__version__}",
    }


async def main_async(args: argparse.Namespace) -> int:
    out = Path(args.out)
    index_path = out / "index.json"
    index: dict[str, Any] = {"frames": []}
    if index_path.exists() and not args.explore:
        index = json.loads(index_path.read_text())
    clients = args.clients.split(",")
    mock_versions: dict[int, tuple[int, int]] = {}
    for client in clients:
        started = time.monotonic()
        session, logs = await capture_client(client)
        mock_versions = session.mock_versions
        exchanges = session.recorder.exchanges
        print(summarize(client, exchanges), f"({time.monotonic() - started:.0f}s)")
        if args.verbose:
            print("\n".join(logs))
        else:
            for log in logs:
                failed = [
                    ln
                    for ln in log.splitlines()
                    if "FAILED" in ln
                    or "TIMEOUT" in ln
                    or (ln.startswith("rc=") and not ln.startswith("rc=0"))
                ]
                if failed:
                    print("   ", "\n    ".join(failed))
        if args.explore:
            continue
        entries = write_client(out, client, select(exchanges))
        index["frames"] = [e for e in index["frames"] if e["client"] != client] + entries
    if args.explore:
        return 0
    index["frames"].sort(key=lambda e: (CLIENTS.index(e["client"]), e["request"]))
    index["clients"] = {
        **index.get("clients", {}),
        **{c: v for c, v in client_versions().items() if c in clients},
    }
    index["advertised"] = {str(k): list(v) for k, v in sorted(ADVERTISED.items())}
    index["mock_api_versions"] = {str(k): list(v) for k, v in sorted(mock_versions.items())}
    index["group_upstream"] = GROUP_UPSTREAM
    index["about"] = (
        "Frames without the int32 size prefix. upstream 'mock' = librdkafka "
        "mock cluster (confluent-kafka test.mock.num.brokers), 'fake' = "
        "tests/tools/fake_broker.py. Made by tests/tools/capture_golden.py."
    )
    out.mkdir(parents=True, exist_ok=True)
    index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {len(index['frames'])} exchanges, {total} bytes under {out}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--out", default=str(REPO / "tests" / "golden"))
    parser.add_argument(
        "--explore",
        action="store_true",
        help="run the flows and print what was sent; write nothing",
    )
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument(
        "--group-upstream",
        choices=["mock", "fake"],
        help="override GROUP_UPSTREAM for every client (exploring)",
    )
    args = parser.parse_args()
    if args.group_upstream:
        for units in GROUP_UPSTREAM.values():
            units.update(dict.fromkeys(units, args.group_upstream))
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
