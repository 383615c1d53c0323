"""``minikafka perf produce|consume``: load tests modelled on Kafka's perf test tools.

    minikafka perf produce --bootstrap-server H:P --topic T (--num-records N | --duration S)
        [--record-size 100] [--throughput -1] [--acks 1] [--batch-size 16384]
        [--linger-ms 0] [--compression none] [--max-in-flight 5] [--connections 1]
        [--max-block-ms 60000]
    minikafka perf consume --bootstrap-server H:P --topic T (--messages N | --duration S)
        [--fetch-size 1048576] [--in-flight 2] [--timeout 10000] [--from-latest]
        [--hide-header]

produce: a load generator, not a producer. Every distinct batch and every Produce request
around it is built before the clock starts (:mod:`client.loadgen`); a send only
stamps a correlation id, so the figures measure the broker. Sends go round robin over
the partitions, up to ``--max-in-flight`` requests pipelined on each of ``--connections``
connections per leader. ``--linger-ms`` matters only under a ``--throughput`` cap: a
batch then holds the records that arrive within linger (at most ``--batch-size`` bytes).
Every 5 s it prints Kafka's progress line, at the end Kafka's summary line
(records/s, MB/s of record values, latency avg/max and 50th/95th/99th/99.9th
percentiles). Latency is per request, from the write to its acknowledgement. Before the clock
starts it waits, as Kafka's producer does for its first metadata, until every partition
has a leader: a topic the brokers auto-create on that very Metadata request answers
LEADER_NOT_AVAILABLE until the controller has elected its leaders, and one that does not
exist yet answers UNKNOWN_TOPIC_OR_PARTITION; both are asked again, for at most
``--max-block-ms`` (``max.block.ms``), then the command fails saying which it was.

consume: fetches every partition from the earliest offset (``--from-latest``: the end)
from its leader on a connection of its own, with ``--in-flight`` fetches pipelined per
partition (:mod:`client.prefetch`: the next fetch's offset is predicted, and
records are taken only where they continue the partition, so none is counted twice or
skipped), and counts records and bytes from the batch headers alone, never decoding a
record. Responses are read straight into their own buffers (:mod:`client.receiver`).
MB counts whole batches (headers and record framing included, about 10% above the values
alone for 100-byte records). Prints Kafka's consumer perf test header and result row.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import protocol
from client import (
    ClientConfig,
    ClientError,
    Connection,
    KafkaClient,
    KafkaError,
    list_offsets,
    parse_acks,
)
from client.cluster_view import ClusterView
from client.connection import PrebuiltRequest
from client.console import parse_properties
from client.loadgen import ProducePlan, records_per_batch
from client.prefetch import PartitionPrefetcher, Taken
from client.produce import read_produce_response
from client.stats import (
    CONSUMER_HEADER,
    ProduceStats,
    consumer_line,
    progress_line,
    summary_line,
    throttle_delay_ms,
)
from protocol import ApiKey, ErrorCode
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from timer.clock import Clock, SystemClock
from tools.command import (
    CommandError,
    add_client_config,
    client_properties,
    is_security_key,
    security_of,
)
from tools.console_producer import CODECS

#: nanoseconds on a monotonic clock; injected so that tests can drive time
NowNs = Callable[[], int]


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="mode", metavar="MODE", required=True)
    p = sub.add_parser("produce", help="producer load test (pre-built batches)")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]")
    p.add_argument("--topic", required=True)
    amount = p.add_mutually_exclusive_group(required=True)
    amount.add_argument("--num-records", type=int, help="records to send")
    amount.add_argument("--duration", type=float, help="seconds to send for")
    p.add_argument("--record-size", type=int, default=100, help="value bytes per record (100)")
    p.add_argument("--throughput", type=float, default=-1, help="records/s cap; -1 for none (-1)")
    p.add_argument("--acks", default="1", help="all, -1, 0 or 1 (1)")
    p.add_argument("--batch-size", type=int, default=16384, help="batch.size in bytes (16384)")
    p.add_argument("--linger-ms", type=float, default=0, help="linger.ms (0)")
    p.add_argument("--compression", choices=sorted(CODECS), default="none")
    p.add_argument(
        "--producer-props",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="Kafka's spelling of the settings above: acks, batch.size, linger.ms, "
        "compression.type (they override the flags)",
    )
    add_client_config(p, "producer")
    p.add_argument("--max-in-flight", type=int, default=5, help="requests in flight per connection")
    p.add_argument("--connections", type=int, default=1, help="connections per leader (1)")
    p.add_argument(
        "--distinct-batches", type=int, default=16, help="different batches to cycle through"
    )
    p.add_argument("--partition", type=int, help="send to this partition only (default: all)")
    p.add_argument("--request-timeout-ms", type=int, default=30_000)
    p.add_argument(
        "--max-block-ms",
        type=int,
        default=60_000,
        help="how long to wait for the topic's leaders, e.g. while the brokers auto-create "
        "it (60000)",
    )
    p.add_argument("--reporting-interval", type=int, default=5000, help="ms between progress lines")
    p.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")

    c = sub.add_parser("consume", help="consumer load test (counts batch headers)")
    c.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]")
    c.add_argument("--topic", required=True)
    amount = c.add_mutually_exclusive_group(required=True)
    amount.add_argument("--messages", type=int, help="records to consume")
    amount.add_argument("--duration", type=float, help="seconds to consume for")
    c.add_argument("--fetch-size", type=int, default=1024 * 1024, help="bytes per partition")
    c.add_argument("--in-flight", type=int, default=2, help="fetches pipelined per partition (2)")
    c.add_argument(
        "--timeout", type=int, default=10_000, help="ms without data after which it stops"
    )
    add_client_config(c, "consumer")
    c.add_argument("--from-latest", action="store_true", help="start at the end of the log")
    c.add_argument("--partition", type=int, help="consume this partition only (default: all)")
    c.add_argument("--hide-header", action="store_true")
    c.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")


async def _partitions(
    client: KafkaClient, topic: str, only: int | None, *, auto_create: bool
) -> list[int]:
    view = await client.refresh_metadata([topic], allow_auto_create=auto_create)
    info = view.topics.get(topic)
    if info is None or info.error_code != ErrorCode.NONE or not info.partitions:
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if info is None else info.error_code
        raise KafkaError(code, f"topic {topic}")
    return _chosen(topic, sorted(info.partitions), only)


def _chosen(topic: str, partitions: list[int], only: int | None) -> list[int]:
    if only is None:
        return partitions
    if only not in partitions:
        raise ValueError(f"topic {topic} has no partition {only}")
    return [only]


#: the topic errors a producer waits out: the topic is being created (auto-created by this
#: very metadata request, or by someone else) and has no leaders yet
WAITED_OUT = frozenset({ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


def led_partitions(view: ClusterView, topic: str, only: int | None) -> list[int] | int:
    """The partitions to send to when every one of them has a leader; else the error that
    says what is missing, for the caller to wait out (one of WAITED_OUT). Raises
    KafkaError for any other topic error and ValueError for an ``only`` the topic lacks."""
    info = view.topics.get(topic)
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if info.error_code in WAITED_OUT:
        return info.error_code
    if info.error_code != ErrorCode.NONE:
        raise KafkaError(info.error_code, f"topic {topic}")
    if not info.partitions:
        return ErrorCode.LEADER_NOT_AVAILABLE
    chosen = _chosen(topic, sorted(info.partitions), only)
    if any(view.leader(topic, p) < 0 for p in chosen):
        return ErrorCode.LEADER_NOT_AVAILABLE
    return chosen


async def wait_for_leaders(
    client: KafkaClient,
    topic: str,
    only: int | None,
    clock: Clock,
    max_block_ms: int,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> list[int]:
    """The partitions to produce to, once the metadata names a leader for each, asking
    the brokers to auto-create the topic. As Kafka's producer waits for its first
    metadata, LEADER_NOT_AVAILABLE and UNKNOWN_TOPIC_OR_PARTITION are retried (with a
    backoff from 50 ms to 1 s) for at most ``max_block_ms``; then a KafkaError says so."""
    deadline = clock.monotonic_ms() + max_block_ms
    backoff_s = 0.05
    while True:
        view = await client.refresh_metadata([topic], allow_auto_create=True)
        found = led_partitions(view, topic, only)
        if isinstance(found, list):
            return found
        remaining_ms = deadline - clock.monotonic_ms()
        if remaining_ms <= 0:
            if found == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                what = "does not exist (and the brokers did not auto-create it)"
            else:
                what = "has no leader for every partition yet"
            raise KafkaError(found, f"topic {topic} {what} after {max_block_ms} ms (max.block.ms)")
        await sleep(min(backoff_s, remaining_ms / 1000))
        backoff_s = min(backoff_s * 2, 1.0)


# -- produce ---------------------------------------------------------------------------------


@dataclass
class _Slot:
    """One connection and the permits for its requests in flight."""

    conn: Connection
    permits: asyncio.Semaphore


@dataclass
class PerfProducer:
    client: KafkaClient
    plan: ProducePlan
    num_records: int | None
    duration_s: float | None
    throughput: float
    acks: int
    request_timeout_s: float
    reporting_interval_ms: int
    now_ns: NowNs = time.perf_counter_ns
    stats: ProduceStats = field(default_factory=ProduceStats)
    _slots: dict[int, list[_Slot]] = field(default_factory=dict)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _errors_shown: int = 0

    async def connect(self, connections: int, max_in_flight: int) -> None:
        """Open ``connections`` dedicated connections per leader of the plan's partitions."""
        by_leader: dict[int, list[_Slot]] = {}
        topic = self.plan.topic
        for p in self.plan.partitions:
            leader = self.client.view.leader(topic, p)
            if leader < 0:
                raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{p}")
            if leader not in by_leader:
                by_leader[leader] = [
                    _Slot(
                        await self.client.open_connection(leader), asyncio.Semaphore(max_in_flight)
                    )
                    for _ in range(connections)
                ]
            self._slots[p] = by_leader[leader]

    def close(self) -> None:
        for slots in self._slots.values():
            for slot in slots:
                slot.conn.close()

    def _elapsed_ms(self, start_ns: int) -> float:
        return (self.now_ns() - start_ns) / 1e6

    async def run(self) -> float:
        """Send the load; return the elapsed milliseconds (until the last answer)."""
        start = self.now_ns()
        reporter = asyncio.create_task(self._report(start))
        sent = 0
        turn = 0
        try:
            while True:
                left = None if self.num_records is None else self.num_records - sent
                if left is not None and left <= 0:
                    break
                elapsed = self._elapsed_ms(start)
                if self.duration_s is not None and elapsed >= self.duration_s * 1000:
                    break
                delay = throttle_delay_ms(sent, elapsed, self.throughput)
                if delay > 0:
                    await asyncio.sleep(delay / 1000)
                send = self.plan.next(left)
                slots = self._slots[send.partition]
                slot = slots[turn % len(slots)]
                turn += 1
                await slot.permits.acquire()
                sent += send.records
                task = asyncio.create_task(
                    self._send(slot, send.records, send.payload_bytes, send.request)
                )
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            while self._tasks:
                await asyncio.gather(*list(self._tasks))
            return self._elapsed_ms(start)
        finally:
            reporter.cancel()

    async def _send(self, slot: _Slot, records: int, nbytes: int, request: PrebuiltRequest) -> None:
        t0 = self.now_ns()
        try:
            frame = await slot.conn.send_prebuilt(
                request, expect_response=self.acks != 0, timeout_s=self.request_timeout_s
            )
            if frame is not None:
                body = protocol.decode_response(frame, ApiKey.PRODUCE, request.api_version).body
                partition = body.responses[0].partition_responses[0].index
                read_produce_response(body, self.plan.topic, partition)
            self.stats.record(records, nbytes, (self.now_ns() - t0) / 1e6)
        except KafkaError as exc:
            self.stats.errors += records
            if self._errors_shown < 5:
                self._errors_shown += 1
                print(f"ERROR produce failed: {exc}", file=sys.stderr)
        finally:
            slot.permits.release()

    async def _report(self, start_ns: int) -> None:
        last = start_ns
        while True:
            await asyncio.sleep(self.reporting_interval_ms / 1000)
            now = self.now_ns()
            print(progress_line(self.stats.take_window(), (now - last) / 1e6), flush=True)
            last = now


#: --producer-props key -> the flag (attribute) it sets, and how to read its value
PRODUCER_PROPS: dict[str, tuple[str, Callable[[str], object]]] = {
    "acks": ("acks", str),
    "batch.size": ("batch_size", int),
    "linger.ms": ("linger_ms", float),
    "compression.type": ("compression", str),
    "max.block.ms": ("max_block_ms", int),
}


def perf_client_config(args: argparse.Namespace, role: str) -> ClientConfig:
    """The client's settings: the security keys of ``--<role>.config`` and, producing,
    of ``--producer-props``."""
    props = client_properties(args, role)
    singles = parse_properties(getattr(args, "producer_props", []), "--producer-props")
    props.update((k, v) for k, v in singles.items() if is_security_key(k))
    return ClientConfig(security=security_of(props))


def apply_producer_props(args: argparse.Namespace) -> None:
    """Fold ``--producer-props k=v ...`` into the flags; ValueError for unknown keys."""
    for key, value in parse_properties(args.producer_props, "--producer-props").items():
        if key == "bootstrap.servers" or is_security_key(key):
            continue
        if key not in PRODUCER_PROPS:
            known = ", ".join(sorted(PRODUCER_PROPS))
            raise ValueError(f"--producer-props {key} is not supported (known: {known})")
        attr, convert = PRODUCER_PROPS[key]
        setattr(args, attr, convert(value))
    if args.compression not in CODECS:
        raise ValueError(f"compression.type {args.compression!r} is not one of {sorted(CODECS)}")


async def produce_main(args: argparse.Namespace, clock: Clock) -> int:
    apply_producer_props(args)
    acks = parse_acks(args.acks)
    if args.record_size < 0 or args.batch_size < 1 or args.max_in_flight < 1:
        raise ValueError("--record-size, --batch-size and --max-in-flight must be positive")
    async with KafkaClient(args.bootstrap_server, perf_client_config(args, "producer")) as client:
        # as a producer does, let brokers that auto-create topics create it, and wait for it
        partitions = await wait_for_leaders(
            client, args.topic, args.partition, clock, args.max_block_ms
        )
        conn = await client.any_connection()
        per_batch = records_per_batch(
            args.record_size, args.batch_size, args.throughput, args.linger_ms
        )
        plan = ProducePlan(
            args.topic,
            partitions,
            record_size=args.record_size,
            per_batch=per_batch,
            distinct=max(1, args.distinct_batches),
            acks=acks,
            timeout_ms=args.request_timeout_ms,
            api_version=conn.version(ApiKey.PRODUCE),
            timestamp_ms=clock.time_ms(),
            compression=CODECS[args.compression],
        )
        producer = PerfProducer(
            client,
            plan,
            args.num_records,
            args.duration,
            args.throughput,
            acks,
            args.request_timeout_ms / 1000,
            args.reporting_interval,
        )
        await producer.connect(max(1, args.connections), args.max_in_flight)
        try:
            elapsed_ms = await producer.run()
        finally:
            producer.close()
        print(summary_line(producer.stats, elapsed_ms), flush=True)
        if producer.stats.errors:
            print(f"{producer.stats.errors} records failed", file=sys.stderr)
            return 1
    return 0


# -- consume ---------------------------------------------------------------------------------


async def _open_prefetchers(
    client: KafkaClient, args: argparse.Namespace, positions: dict[int, int]
) -> dict[int, PartitionPrefetcher]:
    streams: dict[int, PartitionPrefetcher] = {}
    try:
        for p, position in sorted(positions.items()):
            leader = client.view.leader(args.topic, p)
            if leader < 0:
                raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{args.topic}-{p}")
            streams[p] = PartitionPrefetcher(
                await client.open_connection(leader),
                args.topic,
                p,
                position,
                depth=args.in_flight,
                max_wait_ms=min(500, args.timeout),
                partition_max_bytes=args.fetch_size,
                request_timeout_s=client.config.request_timeout_s,
            )
    except BaseException:
        _close_prefetchers(streams)
        raise
    return streams


def _close_prefetchers(streams: dict[int, PartitionPrefetcher]) -> None:
    for stream in streams.values():
        stream.close()
        stream.conn.close()


async def consume_main(args: argparse.Namespace, clock: Clock) -> int:
    if args.in_flight < 1 or args.fetch_size < 1:
        raise ValueError("--in-flight and --fetch-size must be positive")
    async with KafkaClient(args.bootstrap_server, perf_client_config(args, "consumer")) as client:
        partitions = await _partitions(client, args.topic, args.partition, auto_create=False)
        start_at = LATEST_TIMESTAMP if args.from_latest else EARLIEST_TIMESTAMP
        positions = await list_offsets(client, args.topic, dict.fromkeys(partitions, start_at))
        streams = await _open_prefetchers(client, args, positions)
        # one next() per partition outstanding; whichever answers first is counted first
        pending: dict[asyncio.Task[Taken], int] = {}
        start_wall = clock.time_ms()
        start = clock.monotonic_ms()
        last_data = start
        records = nbytes = 0
        try:
            while True:
                now = clock.monotonic_ms()
                if args.messages is not None and records >= args.messages:
                    break
                if args.duration is not None and now - start >= args.duration * 1000:
                    break
                if now - last_data >= args.timeout:
                    print(
                        f"WARNING: Exiting before consuming the expected number of messages: "
                        f"timeout ({args.timeout} ms) exceeded.",
                        file=sys.stderr,
                    )
                    break
                for p, stream in streams.items():
                    if p not in pending.values():
                        pending[asyncio.ensure_future(stream.next())] = p
                wait_ms = last_data + args.timeout - now
                if args.duration is not None:
                    wait_ms = min(wait_ms, start + args.duration * 1000 - now)
                done, _ = await asyncio.wait(
                    pending, timeout=max(wait_ms, 0) / 1000, return_when=asyncio.FIRST_COMPLETED
                )
                for task in done:
                    del pending[task]
                    taken = task.result()
                    if taken.records:
                        records += taken.records
                        nbytes += taken.bytes
                        last_data = clock.monotonic_ms()
        finally:
            for task in pending:
                task.cancel()
            _close_prefetchers(streams)
        elapsed = clock.monotonic_ms() - start
        if not args.hide_header:
            print(CONSUMER_HEADER)
        print(consumer_line(start_wall, clock.time_ms(), nbytes, records, elapsed), flush=True)
    return 0


def run(args: argparse.Namespace) -> int:
    from broker.network.loop import run as run_loop

    clock = SystemClock()
    main = produce_main if args.mode == "produce" else consume_main
    try:
        return run_loop(main(args, clock), args.loop)
    except (ClientError, ValueError, CommandError) as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        return 1
