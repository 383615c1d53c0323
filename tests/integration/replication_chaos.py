"""Chaos on a local cluster: the tools the failover tests and the replication bench share.

Replication is judged from the outside, the way a user would: real broker processes
(``tools.cluster.LocalCluster``), real clients and the brokers' own segment files. None of
it is pytest-specific, so that ``tests/bench/bench_replication.py`` uses it too (the
producer that writes throughout and the checks of what it wrote are
``tests.integration.sequence_producer``):

- :class:`ChaosCluster`: broker processes by pid (SIGKILL, SIGSTOP/SIGCONT, SIGTERM,
  restart) and the cluster's view of a partition: its leader as Metadata answers it, its
  leader, epoch and ISR as ZooKeeper stores them, its high watermark as ListOffsets answers.
- :func:`replica_divergence`: whether every replica of a partition holds the same batches
  below the high watermark, byte for byte, read from each broker's log directory.
  Segment boundaries may differ between replicas (each rolls its own segments), so the
  comparison is batch by batch, by offset.
- :class:`HeldProduce`: a Produce request written to a paused broker's socket, its answer
  read after the broker resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import struct
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

import protocol
from client import KafkaClient, NewTopic, create_topics
from client.connection import ConnectionConfig, PrebuiltRequest, request_once
from client.produce import produce_body
from protocol import ApiKey, ErrorCode
from protocol.messages import ListOffsetsRequest, MetadataRequest
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from storage.reader import iter_batches
from tests.integration.cluster import start_cluster
from tests.polling import wait_until
from tools.cluster import LocalCluster
from tools.zookeeper_server import ZooKeeperServer

CLK_TCK = os.sysconf("SC_CLK_TCK")
_SIZE = struct.Struct(">i")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat


# --- the cluster ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionState:
    """A partition's state znode: who leads, in which epoch, and who is in sync."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True)
class StoredBatch:
    """One batch as a replica holds it on disk."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    data: bytes


class ChaosCluster:
    """A running LocalCluster, its processes under our control, and views of its partitions.

    Not thread safe. Every process it signals is one the LocalCluster started (by pid).
    """

    def __init__(self, local: LocalCluster) -> None:
        self.local = local
        self.layout = local.layout
        self._zk = KazooClient(hosts=self.layout.zk_connect, timeout=10.0)
        self._zk.start(timeout=15)
        self._paused: set[int] = set()

    def close(self) -> None:
        self._zk.stop()
        self._zk.close()

    @property
    def broker_ids(self) -> list[int]:
        return list(range(self.layout.brokers))

    @property
    def bootstrap(self) -> str:
        return self.layout.bootstrap_servers

    # -- processes ------------------------------------------------------------------------

    def pid(self, i: int) -> int:
        return self.local.processes[i].pid

    def is_running(self, i: int) -> bool:
        return self.local.processes[i].poll() is None

    def running(self) -> list[int]:
        """Brokers whose process exists (paused ones included)."""
        return [i for i in self.broker_ids if self.is_running(i)]

    def serving(self) -> list[int]:
        """Running brokers that are not paused: those that can answer a request."""
        return [i for i in self.running() if i not in self._paused]

    def kill(self, i: int) -> None:
        """kill -9 broker i (and reap it)."""
        self.local.kill_broker(i)

    def pause(self, i: int) -> None:
        """SIGSTOP broker i: it holds its sockets and its ZooKeeper session until that
        times out, and answers nothing."""
        os.kill(self.pid(i), signal.SIGSTOP)
        self._paused.add(i)

    def resume(self, i: int) -> None:
        os.kill(self.pid(i), signal.SIGCONT)
        self._paused.discard(i)

    def terminate(self, i: int, grace_s: float = 60.0) -> int | None:
        """SIGTERM broker i (controlled shutdown) and wait for it to exit; its status."""
        return self.local.stop_broker(i, grace_s)

    def send_terminate(self, i: int) -> None:
        """SIGTERM broker i without waiting for it (see ``wait_exit``)."""
        self.local.signal_broker(i, signal.SIGTERM)

    def wait_exit(self, i: int, timeout: float = 60.0) -> int:
        """Wait for broker i to exit (after ``send_terminate``) and reap it; its status."""
        return self.local.processes[i].wait(timeout)

    def restart(self, i: int, timeout: float = 60.0) -> None:
        """Start a stopped broker again and wait for its registration in ZooKeeper."""
        assert not self.is_running(i), f"broker {i} is still running"
        self.local.start_broker(i)
        self.local.wait_registered([i], timeout)

    def heal(self, timeout: float = 60.0) -> None:
        """Resume every broker and start again those that are not running (after a test
        that failed half way)."""
        stopped = []
        for i in self.broker_ids:
            if self.is_running(i):
                self.resume(i)
            else:
                stopped.append(i)
        for i in stopped:
            self.local.start_broker(i)
        self.local.wait_registered(self.broker_ids, timeout)

    def controller(self) -> int | None:
        """The active controller as ZooKeeper names it; None between two controllers."""
        if self._zk.exists("/controller") is None:
            return None
        data, _ = self._zk.get("/controller")
        return int(json.loads(data)["brokerid"])

    def registered(self) -> list[int]:
        if self._zk.exists("/brokers/ids") is None:
            return []
        return sorted(int(c) for c in self._zk.get_children("/brokers/ids"))

    # -- requests -------------------------------------------------------------------------

    def request(self, i: int, api_key: int, version: int, body: Any, timeout: float = 15) -> Any:
        """One request to broker i's client listener; the decoded response body."""
        port = self.layout.client_ports[i]
        config = ConnectionConfig("chaos", 5.0, request_timeout_s=timeout)
        return asyncio.run(request_once("127.0.0.1", port, api_key, version, body, config))

    def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
    ) -> None:
        """Create a topic through whichever broker is the controller (retried while the
        controller moves); raise unless it was created."""

        async def create() -> None:
            async with KafkaClient(self.bootstrap) as client:
                new = NewTopic(name, partitions, replication_factor, configs=dict(configs))
                result = (await create_topics(client, [new]))[name]
                if result.error_code != ErrorCode.NONE:
                    raise AssertionError(f"creating {name}: {result}")

        asyncio.run(create())

    def leaders(self, topic: str, via: int | None = None) -> dict[int, int]:
        """partition -> leader id, from the Metadata of broker ``via`` (the first serving
        broker by default); -1 for a partition without a leader."""
        broker = via if via is not None else self.serving()[0]
        body = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
            allow_auto_topic_creation=False,
        )
        (t,) = self.request(broker, ApiKey.METADATA, 12, body).topics
        if t.error_code != ErrorCode.NONE:
            raise AssertionError(f"metadata of {topic} from broker {broker}: error {t.error_code}")
        return {p.partition_index: p.leader_id for p in t.partitions}

    def state(self, topic: str, partition: int) -> PartitionState:
        data, _ = self._zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        doc = json.loads(data)
        return PartitionState(int(doc["leader"]), int(doc["leader_epoch"]), tuple(doc["isr"]))

    def high_watermark(self, broker: int, topic: str, partition: int) -> int:
        """The partition's high watermark as its leader ``broker`` answers ListOffsets
        (latest, read uncommitted); raises on an error code."""
        body = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(
                            partition_index=partition, current_leader_epoch=-1, timestamp=-1
                        )
                    ],
                )
            ],
        )
        (p,) = self.request(broker, ApiKey.LIST_OFFSETS, 5, body).topics[0].partitions
        if p.error_code != ErrorCode.NONE:
            raise AssertionError(f"ListOffsets {topic}-{partition} on {broker}: {p.error_code}")
        return int(p.offset)

    def metric(self, i: int, name: str) -> float | None:
        """A sample's value from broker i's /metrics (the first line starting with ``name``)."""
        with urllib.request.urlopen(self.layout.metrics_url(i), timeout=5) as response:
            text = response.read().decode()
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        return None

    # -- waits ----------------------------------------------------------------------------

    def wait_leader_moved(self, topic: str, partition: int, old: int, timeout: float) -> int:
        """Wait until every serving broker's Metadata names the same serving leader, other
        than ``old``; that leader."""

        def moved() -> int | None:
            for i in self.serving():
                leader = self.leaders(topic, via=i)[partition]
                if leader in (-1, old):
                    return None
            leader = self.leaders(topic)[partition]
            return leader if leader not in (-1, old) and leader in self.serving() else None

        return wait_until(moved, timeout, f"{topic}-{partition} to get a leader other than {old}")

    def wait_isr_full(
        self, topic: str, partitions: Iterable[int], replicas: int, timeout: float
    ) -> None:
        """Wait until every partition's ISR in ZooKeeper holds ``replicas`` brokers, all
        serving, and every serving broker's Metadata names its leader."""
        wanted = list(partitions)

        def full() -> bool:
            for p in wanted:
                state = self.state(topic, p)
                serving = self.serving()
                if len(state.isr) != replicas or not set(state.isr) <= set(serving):
                    raise AssertionError(f"partition {p}: {state}, serving {serving}")
                for i in serving:
                    seen = self.leaders(topic, via=i)[p]
                    if seen != state.leader:
                        raise AssertionError(f"partition {p}: {state}, broker {i} sees {seen}")
            return True

        wait_until(full, timeout, f"the ISR of {topic} {wanted} to hold {replicas} replicas")

    def wait_replicas_identical(
        self, topic: str, partition: int, replicas: Sequence[int], timeout: float
    ) -> None:
        """Wait until every replica holds the same batches below the high watermark (a
        follower may still be fetching the last ones); fail with the last difference."""

        def identical() -> bool:
            difference = self.divergence(topic, partition, replicas)
            if difference is not None:
                raise AssertionError(difference)
            return True

        wait_until(identical, timeout, f"identical replicas of {topic}-{partition}")

    # -- what the replicas hold -------------------------------------------------------------

    def replica_batches(self, broker: int, topic: str, partition: int) -> list[StoredBatch]:
        """Every whole batch of the partition in broker's log directory, in offset order."""
        directory = self.layout.log_dir(broker) / f"{topic}-{partition}"
        if not directory.exists():
            return []
        return [
            StoredBatch(h.base_offset, h.last_offset, h.partition_leader_epoch, data)
            for h, data in iter_batches(str(directory))
        ]

    def divergence(self, topic: str, partition: int, replicas: Sequence[int]) -> str | None:
        """None when every replica holds the same batches below the leader's high
        watermark; else what differs (for a wait's report)."""
        leader = self.state(topic, partition).leader
        hw = self.high_watermark(leader, topic, partition)
        held = {b: self.replica_batches(b, topic, partition) for b in replicas}
        return replica_divergence(held, hw)


def start_chaos(
    zookeeper: ZooKeeperServer, directory: Path, overrides: tuple[tuple[str, str], ...]
) -> Iterator[ChaosCluster]:
    """A module fixture's body: three brokers with ``overrides``, driven as a ChaosCluster,
    closed and stopped after."""
    with contextlib.contextmanager(start_cluster)(zookeeper, directory, 3, overrides) as cluster:
        chaos = ChaosCluster(cluster.local)
        try:
            yield chaos
        finally:
            chaos.close()


def replica_divergence(
    held: Mapping[int, Sequence[StoredBatch]], high_watermark: int
) -> str | None:
    """None when every replica's batches below ``high_watermark`` are the same bytes at the
    same offsets with the same leader epochs, cover the same offsets, and end exactly at
    the high watermark; else a description of the first difference. Pure."""
    below: dict[int, list[StoredBatch]] = {
        b: [s for s in batches if s.base_offset < high_watermark] for b, batches in held.items()
    }
    for broker, batches in below.items():
        end = batches[-1].last_offset + 1 if batches else None
        if batches and end != high_watermark:
            return (
                f"broker {broker}'s batches below the high watermark {high_watermark} end at {end}"
            )
    reference_broker, reference = next(iter(below.items()))
    for broker, batches in below.items():
        if len(batches) != len(reference):
            return (
                f"broker {broker} holds {len(batches)} batches below {high_watermark}, "
                f"broker {reference_broker} {len(reference)}"
            )
        for mine, theirs in zip(batches, reference, strict=True):
            if (mine.base_offset, mine.leader_epoch) != (theirs.base_offset, theirs.leader_epoch):
                return (
                    f"broker {broker} has a batch at {mine.base_offset} epoch {mine.leader_epoch}"
                    f", broker {reference_broker} at {theirs.base_offset} epoch "
                    f"{theirs.leader_epoch}"
                )
            if mine.data != theirs.data:
                return (
                    f"the batch at offset {mine.base_offset} differs in its bytes between "
                    f"brokers {broker} and {reference_broker}"
                )
    return None


# --- a request held back while a broker is paused ------------------------------------------


class HeldProduce:
    """A Produce request (one batch) written to a broker's socket, its answer read later.

    The kernel completes a TCP connection and buffers the request even while the broker
    process is stopped, so a request sent during SIGSTOP is the first thing the broker
    reads when it resumes: before it can learn, from ZooKeeper or the controller, that it
    lost its leadership meanwhile.
    """

    def __init__(
        self, port: int, topic: str, partition: int, values: Sequence[bytes], *, acks: int
    ) -> None:
        now = int(time.time() * 1000)
        batch = bytes(build_batch([SimpleRecord(None, v, (), now) for v in values]))
        body = produce_body(topic, partition, batch, acks=acks, timeout_ms=10_000)
        request = PrebuiltRequest.encode(ApiKey.PRODUCE, 7, "chaos-held", body)
        self.topic = topic
        self.partition = partition
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self._sock.sendall(bytes(request.head_with(1)) + request.tail)

    def answer(self, timeout: float = 30.0) -> tuple[int, int]:
        """(error code, base offset) of the response; the connection is closed after."""
        try:
            self._sock.settimeout(timeout)
            size = _SIZE.unpack(self._read(4))[0]
            frame = self._read(size)
        finally:
            self._sock.close()
        body = protocol.decode_response(frame, ApiKey.PRODUCE, 7).body
        (part,) = body.responses[0].partition_responses
        return int(part.error_code), int(part.base_offset)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()

    def _read(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self._sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("the broker closed the connection before answering")
            chunks += chunk
        return bytes(chunks)
