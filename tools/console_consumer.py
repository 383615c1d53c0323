"""``minikafka console-consumer``: print a topic's records to standard output.

    minikafka console-consumer --bootstrap-server H:P --topic T [--partition N]
        [--offset earliest|latest|N] [--from-beginning] [--max-messages N]
        [--timeout-ms N] [--property print.key=true --property print.timestamp=true ...]
        [--group G [--consumer-property auto.commit.interval.ms=N ...]]

Without ``--group`` the tool assigns itself every partition of the topic (or the one
``--partition`` names) and starts each at ``--offset`` (default latest;
``--from-beginning`` is earliest). A numeric offset needs ``--partition``, as in Kafka's
tool.

With ``--group G`` it joins the consumer group G (:mod:`client.group_session`): the
group's assignor gives it its partitions, each starts at the group's committed offset,
and ``--from-beginning`` only says where a partition the group never committed starts
(auto.offset.reset=earliest; latest otherwise), as in Kafka. It commits every
``auto.commit.interval.ms`` (5000) and on exit, then leaves the group. ``--partition``
and ``--offset`` do not go with ``--group``. Consumer properties read here:
``session.timeout.ms``, ``heartbeat.interval.ms``, ``partition.assignment.strategy``
(range, roundrobin), ``group.instance.id``, ``auto.commit.interval.ms``.

Output format and properties: :mod:`client.console`. It stops after
``--max-messages`` records, after ``--timeout-ms`` without a new record, or on Ctrl-C,
and then prints ``Processed a total of N messages`` on stderr.

Fetches go to each partition's leader (one request per leader at a time, long polling up
to 500 ms). A partition whose position falls out of the log's range restarts from its
earliest offset (auto.offset.reset=earliest); leader changes refresh the metadata.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import BinaryIO

from client import ClientError, KafkaClient, KafkaError, decode, list_offsets
from client.console import RecordFormat, parse_properties
from client.fetch import Fetcher, PartitionData
from client.group import GroupConfig, GroupMember
from client.group_session import GroupSession
from protocol import ErrorCode
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, READ_COMMITTED, READ_UNCOMMITTED
from timer.clock import Clock, SystemClock
from tools.command import CommandError, add_client_config, client_config, client_properties

#: errors after which the partition's leader is looked up again
_REFRESH = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.KAFKA_STORAGE_ERROR,
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partition", type=int, help="consume only this partition")
    parser.add_argument(
        "--offset", default=None, help="earliest, latest or an offset (needs --partition)"
    )
    parser.add_argument("--from-beginning", action="store_true", help="same as --offset earliest")
    parser.add_argument("--max-messages", type=int, help="stop after this many records")
    parser.add_argument("--timeout-ms", type=int, help="stop after this long without a record")
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="formatter property (print.key, print.timestamp, print.headers, key.separator, ...)",
    )
    parser.add_argument(
        "--isolation-level", choices=("read_uncommitted", "read_committed"), default=None
    )
    parser.add_argument(
        "--consumer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="consumer setting (fetch.max.wait.ms, max.partition.fetch.bytes, isolation.level)",
    )
    add_client_config(parser, "consumer")
    parser.add_argument("--group", help="join this consumer group (commits as it consumes)")


def starting_point(offset: str | None, from_beginning: bool, partition: int | None) -> int:
    """EARLIEST_TIMESTAMP, LATEST_TIMESTAMP or an absolute offset; ValueError for a bad
    combination."""
    if from_beginning:
        if offset not in (None, "earliest"):
            raise ValueError("--from-beginning conflicts with --offset " + str(offset))
        return EARLIEST_TIMESTAMP
    if offset is None or offset == "latest":
        return LATEST_TIMESTAMP
    if offset == "earliest":
        return EARLIEST_TIMESTAMP
    try:
        value = int(offset)
    except ValueError:
        raise ValueError(f"--offset must be earliest, latest or a number, not {offset!r}") from None
    if partition is None:
        raise ValueError("The partition is required when offset is specified.")
    if value < 0:
        raise ValueError(f"--offset {value} is negative")
    return value


class ConsoleConsumer:
    def __init__(
        self,
        client: KafkaClient,
        fetcher: Fetcher,
        fmt: RecordFormat,
        out: BinaryIO,
        max_messages: int | None,
        timeout_ms: int | None,
        clock: Clock,
        group: GroupSession | None = None,
    ) -> None:
        self.client = client
        self.group = group
        self.fetcher = fetcher
        self.fmt = fmt
        self.out = out
        self.max_messages = max_messages
        self.timeout_ms = timeout_ms
        self.clock = clock
        self.count = 0

    @property
    def done(self) -> bool:
        return self.max_messages is not None and self.count >= self.max_messages

    async def run(self) -> None:
        last_record_ms = self.clock.monotonic_ms()
        while not self.done:
            if self.timeout_ms is not None:
                left = self.timeout_ms - (self.clock.monotonic_ms() - last_record_ms)
                if left <= 0:
                    return
                self.fetcher.max_wait_ms = max(1, min(500, left))
            before = self.count
            if self.group is not None and await self.group.ensure_joined():
                self.fetcher.positions = self.group.positions
            await self._round()
            if self.group is not None:
                await self.group.maybe_commit()
            if self.count > before:
                last_record_ms = self.clock.monotonic_ms()

    async def _round(self) -> None:
        leaders = self.fetcher.leaders()
        if not leaders:
            await asyncio.sleep(0.2)  # a member given no partition waits for a rebalance
            return
        if any(leader < 0 for leader in leaders):
            await asyncio.sleep(0.2)  # backoff while the cluster elects a leader
            await self.client.refresh_metadata([self.fetcher.topic])
            return
        results = await asyncio.gather(
            *(self.fetcher.fetch_from(leader, parts) for leader, parts in leaders.items()),
            return_exceptions=True,
        )
        refresh = False
        for result in results:
            if isinstance(result, ClientError):
                if not result.retriable:
                    raise result
                refresh = True
                continue
            if isinstance(result, BaseException):
                raise result
            for partition, data in sorted(result.items()):
                refresh |= await self._partition(partition, data)
                if self.done:
                    return
        self.out.flush()
        if refresh:
            await asyncio.sleep(0.1)  # backoff before asking for the new leaders
            await self.client.refresh_metadata([self.fetcher.topic])

    async def _partition(self, partition: int, data: PartitionData) -> bool:
        """Print what ``data`` holds for ``partition``; True when metadata is stale."""
        positions = self.fetcher.positions
        if data.error_code in _REFRESH:
            return True
        if data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            reset = await list_offsets(
                self.client, self.fetcher.topic, {partition: EARLIEST_TIMESTAMP}
            )
            print(
                f"Offset {positions[partition]} of partition {partition} is out of range; "
                f"resetting to {reset[partition]}",
                file=sys.stderr,
            )
            positions[partition] = reset[partition]
            return False
        if data.error_code != ErrorCode.NONE:
            raise KafkaError(data.error_code, f"{self.fetcher.topic}-{partition}")
        records, next_offset = decode(
            self.fetcher.topic,
            partition,
            data.records,
            positions[partition],
            data.aborted_transactions,
        )
        for record in records:
            self.out.write(self.fmt.format(record))
            self.count += 1
            positions[partition] = record.offset + 1
            if self.done:
                return False
        if next_offset is not None and next_offset > positions[partition]:
            positions[partition] = next_offset  # past control batches and compacted gaps
        return False


def group_config(group_id: str, props: dict[str, str]) -> GroupConfig:
    """The group settings among the --consumer-property values (Kafka's names)."""
    defaults = GroupConfig(group_id)
    strategies = props.get("partition.assignment.strategy")
    return GroupConfig(
        group_id,
        session_timeout_ms=int(props.get("session.timeout.ms", defaults.session_timeout_ms)),
        heartbeat_interval_ms=int(
            props.get("heartbeat.interval.ms", defaults.heartbeat_interval_ms)
        ),
        assignors=tuple(s.strip() for s in strategies.split(",") if s.strip())
        if strategies
        else defaults.assignors,
        group_instance_id=props.get("group.instance.id") or None,
    )


async def main(args: argparse.Namespace, out: BinaryIO) -> int:
    if args.group and (args.partition is not None or args.offset is not None):
        raise ValueError("Options group and partition/offset cannot be specified together.")
    fmt = RecordFormat.from_properties(parse_properties(args.property))
    props = client_properties(args, "consumer")
    start = starting_point(args.offset, args.from_beginning, args.partition)
    isolation = args.isolation_level or props.get("isolation.level", "read_uncommitted")
    config = client_config(args, "consumer")
    async with KafkaClient(args.bootstrap_server, config) as client:
        view = await client.refresh_metadata([args.topic])
        info = view.topics.get(args.topic)
        if info is None or info.error_code != ErrorCode.NONE:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if info is None else info.error_code
            raise KafkaError(code, f"topic {args.topic}")
        partitions = sorted(info.partitions)
        if args.partition is not None:
            if args.partition not in info.partitions:
                raise ValueError(f"topic {args.topic} has no partition {args.partition}")
            partitions = [args.partition]
        group: GroupSession | None = None
        if args.group:
            member = GroupMember(client, group_config(args.group, props), [args.topic])
            interval = int(props.get("auto.commit.interval.ms", 5000))
            group = GroupSession(
                client,
                member,
                args.topic,
                start,
                interval,
                SystemClock(),
                require_stable=isolation == "read_committed",
            )
            positions: dict[int, int] = {}
        elif start in (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP):
            positions = await list_offsets(client, args.topic, dict.fromkeys(partitions, start))
        else:
            positions = {partitions[0]: start}
        fetcher = Fetcher(
            client,
            args.topic,
            positions,
            max_wait_ms=int(props.get("fetch.max.wait.ms", 500)),
            partition_max_bytes=int(props.get("max.partition.fetch.bytes", 1024 * 1024)),
            isolation_level=READ_COMMITTED if isolation == "read_committed" else READ_UNCOMMITTED,
        )
        consumer = ConsoleConsumer(
            client, fetcher, fmt, out, args.max_messages, args.timeout_ms, SystemClock(), group
        )
        try:
            await consumer.run()
        finally:
            if group is not None:
                with contextlib.suppress(ClientError):
                    await group.close()
            with contextlib.suppress(BrokenPipeError):
                out.flush()
            print(f"Processed a total of {consumer.count} messages", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(main(args, sys.stdout.buffer))
    except (ClientError, ValueError, CommandError) as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0  # the reader went away (| head): nothing more to do
