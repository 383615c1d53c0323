"""``minikafka console-producer``: each line of standard input becomes a record.

    minikafka console-producer --bootstrap-server H:P --topic T \\
        [--property parse.key=true --property key.separator=: --property parse.headers=true]
        [--producer-property acks=all] [--compression-codec gzip|snappy|lz4|zstd]
        [--partition N] [--batch-size BYTES] [--timeout LINGER_MS]

Line syntax and properties: :mod:`client.console`. Records are batched per
partition as Kafka's producer batches them: a batch is sent once it holds
``--batch-size`` bytes or its first record has waited ``--timeout`` ms (linger.ms), and
at end of input everything left is sent. Keyed records go to murmur2(key) mod
partitions, unkeyed ones stick to one partition per batch, rotating (the sticky
partitioner); ``--partition`` sends everything to one partition. Batches of a partition
are sent in order, one at a time.

Standard input is read by a thread in 64 KiB chunks (a pipe, a file or a terminal alike)
and handed to the event loop. Exit status 1 if any record failed; each failure is
reported on stderr with Kafka's wording.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
from dataclasses import dataclass, field

from client import ClientError, KafkaClient, parse_acks, partition_for_key
from client.console import LineError, LineFormat, parse_properties
from client.produce import produce
from protocol.records import BatchBuilder, Compression
from timer.clock import Clock, SystemClock
from tools.command import (
    CommandError,
    add_client_config,
    client_config,
    client_properties,
    is_security_key,
)

CODECS = {c.name.lower(): c for c in Compression}
KNOWN_PRODUCER_PROPERTIES = {
    "acks", "batch.size", "linger.ms", "compression.type", "request.timeout.ms",
    "client.id", "bootstrap.servers",
}  # fmt: skip


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]")
    parser.add_argument("--topic", required=True)
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="line reader property (parse.key, key.separator, parse.headers, ...)",
    )
    parser.add_argument(
        "--producer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="producer setting (acks, batch.size, linger.ms, compression.type)",
    )
    add_client_config(parser, "producer")
    parser.add_argument(
        "--compression-codec",
        nargs="?",
        const="gzip",
        choices=sorted(CODECS),
        help="compress batches (gzip when given without a codec)",
    )
    parser.add_argument("--partition", type=int, help="send every record to this partition")
    parser.add_argument("--batch-size", type=int, help="batch.size in bytes (16384)")
    parser.add_argument("--timeout", type=int, help="linger.ms: how long a batch waits (1000)")
    parser.add_argument("--request-required-acks", help="acks: all, -1, 0 or 1 (all)")
    parser.add_argument("--request-timeout-ms", type=int, help="request.timeout.ms (30000)")


@dataclass(frozen=True)
class ProducerSettings:
    acks: int = -1
    batch_size: int = 16384
    linger_ms: int = 1000
    compression: Compression = Compression.NONE
    request_timeout_ms: int = 30_000
    client_id: str = "console-producer"
    warnings: tuple[str, ...] = ()

    @staticmethod
    def from_args(args: argparse.Namespace) -> ProducerSettings:
        props = client_properties(args, "producer")
        warnings = tuple(
            f"WARN The configuration '{k}' was supplied but isn't a known config."
            for k in sorted(set(props) - KNOWN_PRODUCER_PROPERTIES)
            if not is_security_key(k)
        )
        acks = args.request_required_acks or props.get("acks", "all")
        codec = args.compression_codec or props.get("compression.type", "none")
        if codec not in CODECS:
            raise ValueError(f"compression.type {codec!r} is not one of {', '.join(CODECS)}")
        settings = ProducerSettings(
            acks=parse_acks(acks),
            batch_size=args.batch_size or int(props.get("batch.size", 16384)),
            linger_ms=args.timeout
            if args.timeout is not None
            else int(props.get("linger.ms", 1000)),
            compression=CODECS[codec],
            request_timeout_ms=args.request_timeout_ms
            or int(props.get("request.timeout.ms", 30_000)),
            client_id=props.get("client.id", "console-producer"),
            warnings=warnings,
        )
        if settings.batch_size < 1 or settings.linger_ms < 0:
            raise ValueError("batch.size must be positive and linger.ms not negative")
        return settings


@dataclass
class _Open:
    """A partition's batch being filled: its builder and when it must go at the latest."""

    builder: BatchBuilder
    deadline_ms: int
    first_key: bytes | None
    first_value_size: int


@dataclass
class Accumulator:
    """Records per partition until a batch is full or lingers too long (pure: no I/O).

    ``add`` returns the batches made ready by the new record; ``due`` those whose
    linger expired; ``drain`` all of them."""

    settings: ProducerSettings
    partitions: int
    fixed_partition: int | None = None
    _open: dict[int, _Open] = field(default_factory=dict)
    _sticky: int = 0

    def partition_for(self, key: bytes | None) -> int:
        if self.fixed_partition is not None:
            return self.fixed_partition
        if key is not None:
            return partition_for_key(key, self.partitions)
        return self._sticky % self.partitions

    def add(
        self, now_ms: int, timestamp_ms: int, key: bytes | None, value: bytes | None,
        headers: list[tuple[str, bytes | None]],
    ) -> list[tuple[int, _Open]]:  # fmt: skip
        partition = self.partition_for(key)
        batch = self._open.get(partition)
        if batch is None:
            builder = BatchBuilder(compression=self.settings.compression)
            batch = _Open(builder, now_ms + self.settings.linger_ms, key, len(value or b""))
            self._open[partition] = batch
        batch.builder.append(timestamp_ms, key, value, headers)
        if batch.builder.uncompressed_size >= self.settings.batch_size:
            return [self._close(partition)]
        return []

    def _close(self, partition: int) -> tuple[int, _Open]:
        batch = self._open.pop(partition)
        if self.fixed_partition is None and partition == self._sticky % self.partitions:
            self._sticky += 1  # the sticky partitioner moves on once its batch is sent
        return partition, batch

    def next_deadline_ms(self) -> int | None:
        return min((b.deadline_ms for b in self._open.values()), default=None)

    def due(self, now_ms: int) -> list[tuple[int, _Open]]:
        return [self._close(p) for p, b in list(self._open.items()) if b.deadline_ms <= now_ms]

    def drain(self) -> list[tuple[int, _Open]]:
        return [self._close(p) for p in list(self._open)]


def _start_reader(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes | None]) -> None:
    fd = sys.stdin.fileno()

    def read() -> None:
        try:
            while chunk := os.read(fd, 65536):
                loop.call_soon_threadsafe(queue.put_nowait, chunk)
        except OSError:
            pass  # stdin closed under us: treat it as end of input
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=read, name="stdin-reader", daemon=True).start()


class ConsoleProducer:
    def __init__(
        self, client: KafkaClient, topic: str, fmt: LineFormat, settings: ProducerSettings,
        partitions: int, fixed_partition: int | None, clock: Clock,
    ) -> None:  # fmt: skip
        self.client = client
        self.topic = topic
        self.fmt = fmt
        self.settings = settings
        self.clock = clock
        self.acc = Accumulator(settings, partitions, fixed_partition)
        self.failures = 0
        self._locks: dict[int, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._line_number = 0

    def feed_line(self, raw: bytes) -> None:
        self._line_number += 1
        line = raw.removesuffix(b"\r").decode("utf-8", "surrogateescape")
        try:
            key, value, headers = self.fmt.parse(line, self._line_number)
        except LineError as exc:
            print(f"ERROR {exc}", file=sys.stderr)
            self.failures += 1
            return
        now = self.clock.monotonic_ms()
        for partition, batch in self.acc.add(now, self.clock.time_ms(), key, value, headers):
            self._send(partition, batch)

    def flush_due(self) -> None:
        for partition, batch in self.acc.due(self.clock.monotonic_ms()):
            self._send(partition, batch)

    def _send(self, partition: int, batch: _Open) -> None:
        task = asyncio.create_task(self._send_in_order(partition, batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_in_order(self, partition: int, batch: _Open) -> None:
        lock = self._locks.setdefault(partition, asyncio.Lock())
        records = bytes(batch.builder.build())
        async with lock:  # FIFO: batches of a partition go in the order they were closed
            try:
                await produce(
                    self.client, self.topic, partition, records,
                    acks=self.settings.acks, timeout_ms=self.settings.request_timeout_ms,
                )  # fmt: skip
            except ClientError as exc:
                self.failures += len(batch.builder)
                key = "null" if batch.first_key is None else repr(batch.first_key)
                print(
                    f"ERROR Error when sending message to topic {self.topic} with key: {key}, "
                    f"value: {batch.first_value_size} bytes with error: {exc}",
                    file=sys.stderr,
                )

    async def run(self, queue: asyncio.Queue[bytes | None]) -> None:
        pending = b""
        while True:
            deadline = self.acc.next_deadline_ms()
            timeout = None
            if deadline is not None:
                timeout = max(0, deadline - self.clock.monotonic_ms()) / 1000
            try:
                chunk = await asyncio.wait_for(queue.get(), timeout)
            except TimeoutError:
                self.flush_due()
                continue
            if chunk is None:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                self.feed_line(raw)
            self.flush_due()
        if pending:
            self.feed_line(pending)
        for partition, batch in self.acc.drain():
            self._send(partition, batch)
        while self._tasks:
            await asyncio.gather(*list(self._tasks))


async def main(args: argparse.Namespace) -> int:
    fmt = LineFormat.from_properties(parse_properties(args.property))
    settings = ProducerSettings.from_args(args)
    for warning in settings.warnings:
        print(warning, file=sys.stderr)
    config = client_config(args, "producer", client_id=settings.client_id)
    async with KafkaClient(args.bootstrap_server, config) as client:
        view = await client.retrying(lambda: _topic_partitions(client, args.topic), timeout_s=30)
        if args.partition is not None and args.partition not in view:
            raise ValueError(f"topic {args.topic} has no partition {args.partition}")
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        _start_reader(asyncio.get_running_loop(), queue)
        producer = ConsoleProducer(
            client, args.topic, fmt, settings, len(view), args.partition, SystemClock()
        )
        await producer.run(queue)
        return 1 if producer.failures else 0


async def _topic_partitions(client: KafkaClient, topic: str) -> list[int]:
    """The topic's partitions, creating it when the brokers auto-create topics."""
    from client.errors import KafkaError
    from protocol import ErrorCode

    view = await client.refresh_metadata([topic], allow_auto_create=True)
    info = view.topics.get(topic)
    if info is None or info.error_code != ErrorCode.NONE or not info.partitions:
        raise KafkaError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if info is None else info.error_code,
            f"topic {topic} is not available",
        )
    return sorted(info.partitions)


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(main(args))
    except (ClientError, ValueError, CommandError) as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        return 1
