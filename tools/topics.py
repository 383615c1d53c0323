"""``minikafka topics``: create, list, describe, alter and delete topics (kafka-topics).

Flags and output follow Kafka's tool::

    minikafka topics --bootstrap-server H:P --create --topic T --partitions 3 \\
        --replication-factor 2 [--config k=v ...] [--if-not-exists]
    minikafka topics --bootstrap-server H:P --list [--topic REGEX] [--exclude-internal]
    minikafka topics --bootstrap-server H:P --describe [--topic REGEX] \
        [--under-replicated-partitions | --unavailable-partitions |
         --under-min-isr-partitions | --at-min-isr-partitions]
    minikafka topics --bootstrap-server H:P --alter --topic T --partitions N
    minikafka topics --bootstrap-server H:P --delete --topic T [--if-exists]

``--describe`` prints, per topic, a line of tab-separated ``Key: value`` fields, then one
indented line per partition::

    Topic: T  TopicId: <base64url id>  PartitionCount: 2  ReplicationFactor: 2  Configs: k=v
        Topic: T  Partition: 0  Leader: 1  Replicas: 1,2  Isr: 1,2

(separators are tabs; the partition lines start with one).

The partition filters print only the partition lines, as Kafka's tool does:
under-replicated (ISR smaller than the replicas), unavailable (no leader), under min ISR
(no leader, or ISR smaller than the topic's ``min.insync.replicas``: its override, else
the broker's value, as DescribeConfigs reports it) and at min ISR (ISR exactly that).

Configs lists the entries whose source is not the built-in default (topic overrides and
broker settings), as Kafka's tool does. Errors print ``Error while executing topic
command : ...`` on stderr and exit with status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Sequence
from typing import TextIO

from client import (
    KafkaClient,
    KafkaError,
    NewTopic,
    TopicInfo,
    UnsupportedApi,
    create_partitions,
    create_topics,
    delete_topics,
    describe_topic_configs,
    describe_topics,
)
from client.admin import ConfigEntry
from client.cluster_view import PartitionInfo
from client.console import parse_properties
from protocol import ErrorCode
from protocol.uuids import uuid_to_base64
from protocol.values import NO_LEADER
from tools.command import CommandError, add_bootstrap_server, admin_client, run_command

ACTIONS = ("create", "list", "describe", "alter", "delete")


def configure(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_server(parser)
    actions = parser.add_mutually_exclusive_group(required=True)
    for action in ACTIONS:
        actions.add_argument(f"--{action}", action="store_true", help=f"{action} topics")
    parser.add_argument("--topic", help="the topic (a regular expression for list/describe)")
    parser.add_argument("--partitions", type=int, help="partition count (create, alter)")
    parser.add_argument("--replication-factor", type=int, help="replicas per partition")
    parser.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="topic config"
    )
    parser.add_argument(
        "--replica-assignment",
        metavar="B1:B2,B3:B4",
        help="broker ids per partition, partitions separated by commas",
    )
    parser.add_argument(
        "--if-not-exists", action="store_true", help="create: no error if it exists"
    )
    parser.add_argument(
        "--if-exists", action="store_true", help="alter/delete/describe: skip if absent"
    )
    parser.add_argument(
        "--exclude-internal", action="store_true", help="list/describe: no internal topics"
    )
    parser.add_argument(
        "--under-replicated-partitions", action="store_true", help="describe: ISR < replicas only"
    )
    parser.add_argument(
        "--unavailable-partitions", action="store_true", help="describe: leaderless partitions only"
    )
    parser.add_argument(
        "--under-min-isr-partitions",
        action="store_true",
        help="describe: partitions without a leader or with fewer in sync than min.insync.replicas",
    )
    parser.add_argument(
        "--at-min-isr-partitions",
        action="store_true",
        help="describe: partitions whose ISR size equals min.insync.replicas",
    )
    parser.add_argument("--timeout-ms", type=int, default=30_000, help="admin request timeout")


def parse_assignment(text: str) -> dict[int, list[int]]:
    """``"0:1,1:2"`` -> {0: [0, 1], 1: [1, 2]}: partitions by comma, replicas by colon."""
    out: dict[int, list[int]] = {}
    for p, part in enumerate(text.split(",")):
        try:
            brokers = [int(b) for b in part.split(":")]
        except ValueError:
            raise CommandError(f"replica assignment {text!r} is not B:B,B:B...") from None
        if len(set(brokers)) != len(brokers):
            raise CommandError(f"partition {p} lists a broker twice in {text!r}")
        out[p] = brokers
    return out


def _ids(nodes: Sequence[int]) -> str:
    return ",".join(str(n) for n in nodes)


def format_topic(info: TopicInfo, configs: Sequence[ConfigEntry] | None) -> str:
    shown = ",".join(
        f"{e.name}={'******' if e.is_sensitive else e.value}"
        for e in (configs or [])
        if not e.is_default
    )
    return (
        f"Topic: {info.name}\tTopicId: {uuid_to_base64(info.topic_id)}\t"
        f"PartitionCount: {len(info.partitions)}\tReplicationFactor: {info.replication_factor}\t"
        f"Configs: {shown}"
    )


def format_partition(topic: str, p: PartitionInfo) -> str:
    leader = "none" if p.leader == NO_LEADER else str(p.leader)
    line = (
        f"\tTopic: {topic}\tPartition: {p.partition}\tLeader: {leader}\t"
        f"Replicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}"
    )
    if p.offline:
        line += f"\tOffline: {_ids(p.offline)}"
    return line


def _matching(names: Sequence[str], pattern: str | None) -> list[str]:
    if pattern is None:
        return sorted(names)
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise CommandError(f"--topic {pattern!r} is not a regular expression: {exc}") from None
    return sorted(n for n in names if regex.fullmatch(n))


async def _create(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    if not args.topic:
        raise CommandError("--create needs --topic")
    configs = parse_properties(args.config, "--config")
    assignments = parse_assignment(args.replica_assignment) if args.replica_assignment else None
    if assignments and (args.partitions is not None or args.replication_factor is not None):
        raise CommandError("--replica-assignment excludes --partitions and --replication-factor")
    topic = NewTopic(
        args.topic,
        -1 if args.partitions is None else args.partitions,
        -1 if args.replication_factor is None else args.replication_factor,
        configs,
        assignments,
    )
    if "." in args.topic or "_" in args.topic:
        print(
            "WARNING: Due to limitations in metric names, topics with a period ('.') or "
            "underscore ('_') could collide. To avoid issues it is best to use either, "
            "but not both.",
            file=out,
        )
    result = (await create_topics(client, [topic], timeout_ms=args.timeout_ms))[args.topic]
    if result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
        return
    if result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS:
        raise CommandError(f"Topic '{args.topic}' already exists.")
    if not result.ok:
        raise CommandError(result.describe_error())
    print(f"Created topic {args.topic}.", file=out)


async def _list(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    topics = await describe_topics(client)
    names = [n for n, t in topics.items() if not (args.exclude_internal and t.is_internal)]
    for name in _matching(names, args.topic):
        print(name, file=out)


async def _describe(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    topics = await describe_topics(client)
    names = [n for n, t in topics.items() if not (args.exclude_internal and t.is_internal)]
    chosen = _matching(names, args.topic)
    if args.topic and not chosen and not args.if_exists:
        raise CommandError(f"Topic '{args.topic}' does not exist as expected")
    min_isr_filter = args.under_min_isr_partitions or args.at_min_isr_partitions
    partition_filter = (
        args.under_replicated_partitions or args.unavailable_partitions or min_isr_filter
    )
    configs: dict[str, list[ConfigEntry] | KafkaError] = {}
    if not partition_filter or min_isr_filter:
        # a broker without DescribeConfigs: describe the topics without their configs
        with contextlib.suppress(UnsupportedApi):
            configs = await describe_topic_configs(client, chosen)

    for name in chosen:
        info = topics[name]
        entries = configs.get(name)
        listed = entries if isinstance(entries, list) else None
        if not partition_filter:
            print(format_topic(info, listed), file=out)
        min_isr = min_insync_replicas(listed)
        for p in sorted(info.partitions.values(), key=lambda p: p.partition):
            if args.under_replicated_partitions and len(p.isr) >= len(p.replicas):
                continue
            if args.unavailable_partitions and p.leader != NO_LEADER:
                continue
            if args.under_min_isr_partitions and not is_under_min_isr(p, min_isr):
                continue
            if args.at_min_isr_partitions and len(p.isr) != min_isr:
                continue
            print(format_partition(name, p), file=out)


def min_insync_replicas(configs: Sequence[ConfigEntry] | None) -> int | None:
    """The topic's effective min.insync.replicas (None when its configs are unknown)."""
    for entry in configs or ():
        if entry.name == "min.insync.replicas" and entry.value is not None:
            with contextlib.suppress(ValueError):
                return int(entry.value)
    return None


def is_under_min_isr(p: PartitionInfo, min_isr: int | None) -> bool:
    """Kafka's rule: no leader, or fewer in sync than min.insync.replicas."""
    return p.leader == NO_LEADER or (min_isr is not None and len(p.isr) < min_isr)


async def _existing(client: KafkaClient, args: argparse.Namespace) -> list[str]:
    if not args.topic:
        raise CommandError("--topic is required")
    topics = await describe_topics(client)
    chosen = _matching(list(topics), args.topic)
    if not chosen and not args.if_exists:
        raise CommandError(f"Topic '{args.topic}' does not exist as expected")
    return chosen


async def _alter(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    if args.partitions is None:
        raise CommandError("--alter needs --partitions (config changes are not supported yet)")
    chosen = await _existing(client, args)
    results = await create_partitions(
        client, {t: args.partitions for t in chosen}, timeout_ms=args.timeout_ms
    )
    failed = [r for r in results.values() if not r.ok]
    if failed:
        raise CommandError("; ".join(f"{r.name}: {r.describe_error()}" for r in failed))


async def _delete(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    chosen = await _existing(client, args)
    if not chosen:
        return
    results = await delete_topics(client, chosen, timeout_ms=args.timeout_ms)
    failed = [r for r in results.values() if not r.ok]
    if failed:
        raise CommandError("; ".join(f"{r.name}: {r.describe_error()}" for r in failed))


async def main(args: argparse.Namespace, out: TextIO | None = None) -> None:
    out = sys.stdout if out is None else out  # looked up now, not at import
    action = next(a for a in ACTIONS if getattr(args, a))
    async with admin_client(args) as client:
        await {
            "create": _create,
            "list": _list,
            "describe": _describe,
            "alter": _alter,
            "delete": _delete,
        }[action](client, args, out)


def run(args: argparse.Namespace) -> int:
    def report(exc: Exception) -> None:
        print(f"Error while executing topic command : {exc}", file=sys.stderr)

    return run_command(main(args), report, also=(ValueError,))
