"""``minikafka consumer-groups``: list, describe, reset and delete consumer groups
(kafka-consumer-groups).

Flags and output follow Kafka's tool::

    minikafka consumer-groups --bootstrap-server H:P --list
    minikafka consumer-groups --bootstrap-server H:P --describe (--group G | --all-groups)
        [--offsets (default) | --members [--verbose] | --state]
    minikafka consumer-groups --bootstrap-server H:P --reset-offsets --group G
        (--topic T[:P,P..] ... | --all-topics)
        (--to-earliest | --to-latest | --to-offset N | --shift-by N | --to-datetime T |
         --by-duration D) [--dry-run | --execute]
    minikafka consumer-groups --bootstrap-server H:P --delete --group G [--group G2 ..]
    minikafka consumer-groups --bootstrap-server H:P --delete-offsets --group G --topic T[:P..]

``--describe`` prints a blank line, then a table whose columns are as wide as their
widest cell (at least Kafka's minimum), separated by one space; an absent value is
``-``. The offsets view has one row per partition the group has committed or a member
is assigned::

    GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID

LAG is LOG-END-OFFSET - CURRENT-OFFSET. The members view is GROUP, CONSUMER-ID,
GROUP-INSTANCE-ID, HOST, CLIENT-ID, #PARTITIONS (and ASSIGNMENT with ``--verbose``,
``topic(0,1)``); the state view GROUP, COORDINATOR (ID), ASSIGNMENT-STRATEGY, STATE,
#MEMBERS. A group in state Empty is announced with "Consumer group 'G' has no active
members.", one Kafka does not know (Dead) with "Consumer group 'G' does not exist.", one
rebalancing with a warning.

``--reset-offsets`` (:mod:`tools.offset_reset`) is refused unless the group is inactive
(Empty or Dead: no member could be consuming), prints GROUP, TOPIC, PARTITION,
NEW-OFFSET, and commits only with ``--execute`` (a dry run otherwise). Errors print
``Error: ...`` on stderr and exit with status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from client import KafkaClient, KafkaError, list_offsets
from client.cluster_view import BrokerNode
from client.group_admin import (
    DEAD,
    EMPTY,
    GroupDescription,
    alter_group_offsets,
    delete_groups,
    delete_offsets,
    describe_groups,
    list_group_offsets,
    list_groups,
)
from client.offset_reset import plan
from protocol import ErrorCode, error_name
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TopicPartition
from timer.clock import Clock, SystemClock
from tools.command import CommandError, add_bootstrap_server, admin_client, run_command
from tools.offset_reset import KINDS, ResetSpec, parse_spec, parse_topic_partitions

ACTIONS = ("list", "describe", "reset-offsets", "delete", "delete-offsets")
MISSING = "-"


def configure(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_server(parser)
    actions = parser.add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help="list every consumer group")
    actions.add_argument("--describe", action="store_true", help="describe groups")
    actions.add_argument("--reset-offsets", action="store_true", help="move committed offsets")
    actions.add_argument("--delete", action="store_true", help="delete groups")
    actions.add_argument(
        "--delete-offsets", action="store_true", help="delete a group's committed offsets"
    )
    parser.add_argument("--group", action="append", default=[], help="the group (repeatable)")
    parser.add_argument("--all-groups", action="store_true", help="every group (--describe)")
    parser.add_argument(
        "--topic", action="append", default=[], metavar="T[:P,P..]", help="topic (partitions)"
    )
    parser.add_argument("--all-topics", action="store_true", help="every topic the group has")
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--offsets", action="store_true", help="describe: offsets and lag")
    view.add_argument("--members", action="store_true", help="describe: the members")
    view.add_argument("--state", action="store_true", help="describe: the group's state")
    parser.add_argument("--verbose", action="store_true", help="--members: their partitions")
    for kind in KINDS:
        if kind in ("to-earliest", "to-latest"):
            parser.add_argument(f"--{kind}", action="store_true", help=f"reset: {kind}")
        else:
            parser.add_argument(f"--{kind}", metavar="VALUE", help=f"reset: {kind}")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="reset: only show the new offsets")
    mode.add_argument("--execute", action="store_true", help="reset: commit the new offsets")


# -- tables (pure) ----------------------------------------------------------------------------


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], min_width: int = 0) -> str:
    """Columns left-aligned, each as wide as its widest cell and at least ``min_width``,
    one space apart; the last column is not padded. A blank line comes first, as Kafka's
    tool prints it."""
    widths = [
        max([len(header[i]), min_width, *(len(r[i]) for r in rows)]) for i in range(len(header))
    ]

    def line(cells: Sequence[str]) -> str:
        padded = [c.ljust(w) for c, w in zip(cells[:-1], widths[:-1], strict=True)]
        return " ".join([*padded, cells[-1]]).rstrip()

    return "\n".join(["", line(header), *(line(r) for r in rows)])


def _text(value: int | str | None) -> str:
    return MISSING if value is None or value == "" else str(value)


@dataclass(frozen=True)
class OffsetRow:
    topic: str
    partition: int
    current: int | None
    log_end: int | None
    consumer_id: str | None = None
    host: str | None = None
    client_id: str | None = None

    @property
    def lag(self) -> int | None:
        if self.current is None or self.log_end is None:
            return None
        return self.log_end - self.current


def offset_rows(
    group: GroupDescription,
    committed: dict[TopicPartition, int],
    log_ends: dict[TopicPartition, int],
) -> list[OffsetRow]:
    """One row per partition assigned to a member or committed by the group, sorted by
    topic and partition."""
    owner = {
        TopicPartition(t, p): m
        for m in group.members
        for t, ps in m.assignment.partitions.items()
        for p in ps
    }
    rows = []
    for tp in sorted(set(owner) | set(committed)):
        m = owner.get(tp)
        rows.append(
            OffsetRow(
                tp.topic,
                tp.partition,
                committed.get(tp),
                log_ends.get(tp),
                m.member_id if m else None,
                m.host if m else None,
                m.client_id if m else None,
            )
        )
    return rows


def format_offsets(group_id: str, rows: Sequence[OffsetRow]) -> str:
    header = (
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "CONSUMER-ID", "HOST", "CLIENT-ID",
    )  # fmt: skip
    cells = [
        [
            group_id,
            r.topic,
            str(r.partition),
            _text(r.current),
            _text(r.log_end),
            _text(r.lag),
            _text(r.consumer_id),
            _text(r.host),
            _text(r.client_id),
        ]
        for r in rows
    ]
    return format_table(header, cells, min_width=10)


def format_assignment(partitions: dict[str, list[int]]) -> str:
    """``t1(0,1),t2(3)``, or ``-`` for none (Kafka's ASSIGNMENT column)."""
    parts = [f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in sorted(partitions.items())]
    return ",".join(parts) or MISSING


def format_members(group: GroupDescription, verbose: bool) -> str:
    header = ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    if verbose:
        header.append("ASSIGNMENT")
    rows = []
    for m in sorted(group.members, key=lambda m: m.member_id):
        parts = {t: list(ps) for t, ps in m.assignment.partitions.items()}
        row = [
            group.group_id,
            m.member_id,
            _text(m.group_instance_id),
            _text(m.host),
            _text(m.client_id),
            str(sum(len(ps) for ps in parts.values())),
        ]
        if verbose:
            row.append(format_assignment(parts))
        rows.append(row)
    return format_table(header, rows, min_width=10)


def format_coordinator(node: BrokerNode | None) -> str:
    return MISSING if node is None else f"{node.host}:{node.port} ({node.node_id})"


def format_state(group: GroupDescription) -> str:
    header = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
    row = (
        group.group_id,
        format_coordinator(group.coordinator),
        _text(group.protocol),
        group.state,
        str(len(group.members)),
    )
    return format_table(header, [row], min_width=10)


def state_notice(group: GroupDescription) -> str | None:
    """Kafka's line before a group's table (None: no notice)."""
    if group.state == DEAD:
        return f"Consumer group '{group.group_id}' does not exist."
    if group.state == EMPTY:
        return f"Consumer group '{group.group_id}' has no active members."
    if group.state in ("PreparingRebalance", "CompletingRebalance"):
        return f"Warning: Consumer group '{group.group_id}' is rebalancing."
    return None


def format_reset(group_id: str, offsets: dict[TopicPartition, int]) -> str:
    return format_table(
        ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
        [(group_id, tp.topic, str(tp.partition), str(o)) for tp, o in sorted(offsets.items())],
        min_width=10,
    )


# -- actions ----------------------------------------------------------------------------------


def _groups(args: argparse.Namespace) -> list[str]:
    if not args.group:
        raise CommandError("Option --group is required")
    return list(dict.fromkeys(args.group))


def _one_group(args: argparse.Namespace) -> str:
    groups = _groups(args)
    if len(groups) > 1:
        raise CommandError("This action takes one --group")
    return groups[0]


async def _log_ends(
    client: KafkaClient, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, int]:
    return await _offsets_at(client, partitions, LATEST_TIMESTAMP)


async def _offsets_at(
    client: KafkaClient, partitions: Sequence[TopicPartition], timestamp: int
) -> dict[TopicPartition, int]:
    """ListOffsets of ``partitions`` at ``timestamp``; topics that do not exist (any
    more) are left out."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out: dict[TopicPartition, int] = {}
    view = await client.refresh_metadata(sorted(by_topic))
    for topic, parts in sorted(by_topic.items()):
        info = view.topics.get(topic)
        if info is None or info.error_code != ErrorCode.NONE:
            continue
        known = [p for p in parts if p in info.partitions]
        found = await list_offsets(client, topic, dict.fromkeys(known, timestamp))
        out.update({TopicPartition(topic, p): o for p, o in found.items()})
    return out


async def _list(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    for group_id in await list_groups(client):
        print(group_id, file=out)


async def _describe(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    if args.all_groups:
        names = list(await list_groups(client))
    else:
        names = _groups(args)
    described = await describe_groups(client, names)
    for name in names:
        group = described[name]
        notice = state_notice(group)
        if group.state == DEAD:
            print(f"Error: {notice}", file=sys.stderr)
            continue
        if args.state:
            print(format_state(group), file=out)
            continue
        if notice:
            print(f"\n{notice}", file=out)
        if args.members:
            if group.members:
                print(format_members(group, args.verbose), file=out)
            continue
        committed = await list_group_offsets(client, name)
        assigned = [
            TopicPartition(t, p)
            for m in group.members
            for t, ps in m.assignment.partitions.items()
            for p in ps
        ]
        log_ends = await _offsets_at(
            client, sorted(set(committed) | set(assigned)), LATEST_TIMESTAMP
        )
        print(format_offsets(name, offset_rows(group, committed, log_ends)), file=out)


async def _reset_partitions(
    client: KafkaClient, args: argparse.Namespace, committed: dict[TopicPartition, int]
) -> list[TopicPartition]:
    if args.all_topics == bool(args.topic):
        raise CommandError("Option --reset-offsets needs one of --topic or --all-topics")
    if args.all_topics:
        return sorted(committed)
    chosen: list[TopicPartition] = []
    for text in args.topic:
        topic, partitions = parse_topic_partitions(text)
        if partitions is None:
            view = await client.refresh_metadata([topic])
            info = view.topics.get(topic)
            if info is None or info.error_code != ErrorCode.NONE:
                raise CommandError(f"Topic '{topic}' does not exist")
            partitions = sorted(info.partitions)
        chosen.extend(TopicPartition(topic, p) for p in partitions)
    return sorted(set(chosen))


async def reset_offsets(
    client: KafkaClient, args: argparse.Namespace, out: TextIO, clock: Clock
) -> dict[TopicPartition, int]:
    group_id = _one_group(args)
    spec: ResetSpec = parse_spec(
        {k: getattr(args, k.replace("-", "_")) for k in KINDS}, clock.time_ms()
    )
    group = (await describe_groups(client, [group_id]))[group_id]
    if group.is_active:
        raise CommandError(
            f"Assignments can only be reset if the group '{group_id}' is inactive, "
            f"but the current state is {group.state}."
        )
    committed = await list_group_offsets(client, group_id)
    partitions = await _reset_partitions(client, args, committed)
    earliest = await _offsets_at(client, partitions, EARLIEST_TIMESTAMP)
    latest = await _offsets_at(client, partitions, LATEST_TIMESTAMP)
    missing = [tp for tp in partitions if tp not in latest]
    if missing:
        raise CommandError(f"Partitions do not exist: {', '.join(map(_tp, missing))}")
    by_time = await _offsets_at(client, partitions, spec.value) if spec.needs_timestamps else None
    new = plan(
        spec.target,
        partitions,
        earliest=earliest,
        latest=latest,
        committed=committed,
        by_time=by_time,
    )
    if not args.dry_run and not args.execute:
        print(
            "WARN: No action will be performed as the --execute option is missing. "
            "Add --dry-run to keep this behaviour, or --execute to reset the offsets.",
            file=sys.stderr,
        )
    if args.execute and new:
        await alter_group_offsets(client, group_id, new)
    print(format_reset(group_id, new), file=out)
    return new


def _tp(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


async def _reset(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    await reset_offsets(client, args, out, SystemClock())


async def _delete(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    names = _groups(args)
    results = await delete_groups(client, names)
    failed = {g: c for g, c in results.items() if c != ErrorCode.NONE}
    if not failed:
        listed = ", ".join(f"'{g}'" for g in names)
        print(f"Deletion of requested consumer groups ({listed}) was successful.", file=out)
        return
    ok = [g for g in names if g not in failed]
    if ok:
        listed = ", ".join(f"'{g}'" for g in ok)
        print(f"These consumer groups were deleted successfully: {listed}", file=out)
    lines = [
        f"* Group '{g}' could not be deleted due to: {error_name(c)}" for g, c in failed.items()
    ]
    raise CommandError("Deletion of some consumer groups failed:\n" + "\n".join(lines))


async def _delete_offsets(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    group_id = _one_group(args)
    if not args.topic:
        raise CommandError("Option --delete-offsets needs --topic")
    partitions: list[TopicPartition] = []
    for text in args.topic:
        topic, parts = parse_topic_partitions(text)
        if parts is None:
            view = await client.refresh_metadata([topic])
            info = view.topics.get(topic)
            parts = sorted(info.partitions) if info is not None else [0]
        partitions.extend(TopicPartition(topic, p) for p in parts)
    try:
        results = await delete_offsets(client, group_id, partitions)
    except KafkaError as exc:
        raise CommandError(f"Encounter some unknown error: {exc}") from None
    failed = any(c != ErrorCode.NONE for c in results.values())
    verb = "failed" if failed else "succeed"
    print(f"Request {verb} for deleting offsets with topic {', '.join(args.topic)} "
          f"group {group_id}", file=out)  # fmt: skip
    rows = [
        (
            tp.topic,
            str(tp.partition),
            "Successful" if c == ErrorCode.NONE else f"Error: {error_name(c)}",
        )
        for tp, c in sorted(results.items())
    ]
    print(format_table(("TOPIC", "PARTITION", "STATUS"), rows, min_width=10), file=out)


async def main(args: argparse.Namespace, out: TextIO | None = None) -> None:
    out = sys.stdout if out is None else out  # looked up now, not at import
    action = next(a for a in ACTIONS if getattr(args, a.replace("-", "_")))
    async with admin_client(args) as client:
        await {
            "list": _list,
            "describe": _describe,
            "reset-offsets": _reset,
            "delete": _delete,
            "delete-offsets": _delete_offsets,
        }[action](client, args, out)


def run(args: argparse.Namespace) -> int:
    def report(exc: Exception) -> None:
        print(f"Error: {exc}", file=sys.stderr)

    return run_command(main(args), report, also=(ValueError,))
