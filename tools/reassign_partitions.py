"""``minikafka reassign-partitions``: move partitions between brokers (kafka-reassign-partitions).

Flags, files and output follow Kafka's tool::

    minikafka reassign-partitions --bootstrap-server H:P --generate \\
        --topics-to-move-json-file topics.json --broker-list 1,2,3
    minikafka reassign-partitions --bootstrap-server H:P --execute \\
        --reassignment-json-file plan.json [--additional] [--throttle BYTES/S]
    minikafka reassign-partitions --bootstrap-server H:P --verify \\
        --reassignment-json-file plan.json [--preserve-throttles]
    minikafka reassign-partitions --bootstrap-server H:P --cancel \\
        --reassignment-json-file plan.json [--preserve-throttles]
    minikafka reassign-partitions --bootstrap-server H:P --list

Files::

    topics to move   {"version":1,"topics":[{"topic":"foo"}]}
    reassignment     {"version":1,"partitions":[{"topic":"foo","partition":0,
                      "replicas":[1,2],"log_dirs":["any","any"]}]}

``log_dirs`` is optional; only "any" is accepted (a replica cannot be placed on a chosen
log directory). ``--generate`` prints the topics' current assignment and a proposal that
spreads their partitions over the listed brokers with the replication factor they have
(the layout topic creation uses), both as reassignment files; nothing changes until
``--execute`` submits a file (AlterPartitionReassignments, printing the current assignment
first, to keep for a rollback). ``--verify`` tells, per partition of a file, whether its
reassignment completed; ``--cancel`` cancels those still in progress; ``--list`` shows
every reassignment in progress. ``--throttle`` limits the moves' replication and
``--verify`` of a completed file, or ``--cancel``, removes that throttle
(``tools.reassign_throttle``) unless ``--preserve-throttles`` is given.
Errors print on stderr and exit with status 1.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from client import (
    KafkaClient,
    OngoingReassignment,
    alter_partition_reassignments,
    describe_topics,
    list_partition_reassignments,
)
from protocol import ErrorCode
from protocol.values import TopicPartition
from tools.command import CommandError, add_bootstrap_server, admin_client, run_command
from tools.reassign_throttle import VERIFY_WARNING, clear_throttles, set_throttles

ACTIONS = ("generate", "execute", "verify", "cancel", "list")

#: a reassignment file's partition -> target replicas
Plan = dict[TopicPartition, list[int]]


def configure(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_server(parser)
    actions = parser.add_mutually_exclusive_group(required=True)
    actions.add_argument("--generate", action="store_true", help="propose a reassignment")
    actions.add_argument("--execute", action="store_true", help="start the reassignment in a file")
    actions.add_argument("--verify", action="store_true", help="is a file's reassignment done?")
    actions.add_argument("--cancel", action="store_true", help="cancel a file's reassignments")
    actions.add_argument("--list", action="store_true", help="list reassignments in progress")
    parser.add_argument(
        "--topics-to-move-json-file", metavar="FILE", help='generate: {"topics":[{"topic":T}]}'
    )
    parser.add_argument("--broker-list", metavar="1,2,3", help="generate: the brokers to use")
    parser.add_argument(
        "--reassignment-json-file", metavar="FILE", help="execute/verify/cancel: the plan"
    )
    parser.add_argument(
        "--additional",
        action="store_true",
        help="execute even while other reassignments are in progress",
    )
    parser.add_argument(
        "--disable-rack-aware", action="store_true", help="generate: ignore racks (always)"
    )
    parser.add_argument("--timeout-ms", type=int, default=30_000, help="admin request timeout")
    parser.add_argument(
        "--throttle",
        type=int,
        default=-1,
        metavar="BYTES/S",
        help="execute: throttle the moves' replication to this rate (cleared by --verify)",
    )
    parser.add_argument(
        "--preserve-throttles",
        action="store_true",
        help="verify, cancel: leave the throttles in place",
    )


# -- files (pure) ------------------------------------------------------------------------


def _load(text: str, what: str) -> dict[str, object]:
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise CommandError(f"{what} is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise CommandError(f"{what} must be a JSON object")
    version = obj.get("version", 1)
    if version != 1:
        raise CommandError(f"Not able to parse the {what}: unknown version {version}")
    return obj


def parse_topics_to_move(text: str) -> list[str]:
    """The topic names of a ``{"version":1,"topics":[{"topic":T}]}`` file, in order."""
    topics = _load(text, "topics-to-move file").get("topics")
    if not isinstance(topics, list):
        raise CommandError('the topics-to-move file has no "topics" list')
    names = []
    for entry in topics:
        name = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            raise CommandError(f"bad topic entry {entry!r} in the topics-to-move file")
        names.append(name)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CommandError(f"List of topics to reassign contains duplicate entries: {duplicates}")
    if not names:
        raise CommandError("List of topics to reassign cannot be empty")
    return names


def parse_reassignment(text: str) -> Plan:
    """The partitions and target replicas of a reassignment file, in file order."""
    partitions = _load(text, "reassignment file").get("partitions")
    if not isinstance(partitions, list):
        raise CommandError('the reassignment file has no "partitions" list')
    plan: Plan = {}
    for entry in partitions:
        if not isinstance(entry, dict):
            raise CommandError(f"bad partition entry {entry!r}")
        topic, partition, replicas = (
            entry.get("topic"),
            entry.get("partition"),
            entry.get("replicas"),
        )
        if (
            not isinstance(topic, str)
            or not isinstance(partition, int)
            or not isinstance(replicas, list)
            or not all(isinstance(r, int) for r in replicas)
        ):
            raise CommandError(f"bad partition entry {entry!r}: topic, partition and replicas")
        tp = TopicPartition(topic, partition)
        if tp in plan:
            raise CommandError(f"Duplicate reassignment of partition {tp} in the reassignment file")
        if not replicas:
            raise CommandError(f"Partition replica list for {tp} cannot be empty")
        if len(set(replicas)) != len(replicas):
            raise CommandError(
                f"Duplicate replicas in the replica list of {tp}: {','.join(map(str, replicas))}"
            )
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None:
            if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
                raise CommandError(f"The log_dirs of {tp} must list one entry per replica")
            if any(d != "any" for d in log_dirs):
                raise CommandError(
                    f"{tp}: moving replicas between log directories is not supported "
                    '(log_dirs must be "any")'
                )
        plan[tp] = list(replicas)
    if not plan:
        raise CommandError("Partition reassignment list cannot be empty")
    return plan


def parse_broker_list(text: str) -> list[int]:
    try:
        brokers = [int(b) for b in text.split(",")]
    except ValueError:
        raise CommandError(f"--broker-list {text!r} is not a list of broker ids") from None
    if len(set(brokers)) != len(brokers):
        raise CommandError("Duplicate broker ids in --broker-list")
    return brokers


def format_reassignment(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """A reassignment file's JSON (compact, partitions sorted, log_dirs all "any")."""
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "replicas": list(replicas),
                    "log_dirs": ["any"] * len(replicas),
                }
                for tp, replicas in sorted(assignment.items())
            ],
        },
        separators=(",", ":"),
    )


def propose(
    current: Mapping[TopicPartition, Sequence[int]],
    brokers: Sequence[int],
    rng: random.Random | None = None,
) -> Plan:
    """Each topic's partitions spread over ``brokers`` with the topic's replication
    factor (its partition 0's), as topic creation lays them out."""
    from broker.admin.assignment import AssignmentError, assign_replicas

    by_topic: dict[str, dict[int, Sequence[int]]] = {}
    for tp, replicas in current.items():
        by_topic.setdefault(tp.topic, {})[tp.partition] = replicas
    plan: Plan = {}
    for topic, partitions in sorted(by_topic.items()):
        factor = len(partitions.get(0) or next(iter(partitions.values())))
        try:
            layout = assign_replicas(brokers, len(partitions), factor, rng=rng)
        except AssignmentError as exc:
            raise CommandError(f"{topic}: {exc.message}") from None
        for p in partitions:
            plan[TopicPartition(topic, p)] = layout[p]
    return plan


def verify_lines(
    plan: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
    ongoing: Mapping[TopicPartition, OngoingReassignment],
) -> list[str]:
    """Kafka's status lines: in progress, completed, or done with other replicas."""
    lines = ["Status of partition reassignment:"]
    for tp, target in sorted(plan.items()):
        if tp in ongoing:
            lines.append(f"Reassignment of partition {tp} is still in progress.")
        elif list(current.get(tp, ())) == list(target):
            lines.append(f"Reassignment of partition {tp} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {tp}, but replica set is "
                f"{_ids(current.get(tp, ()))} rather than {_ids(target)}."
            )
    return lines


def list_lines(ongoing: Mapping[TopicPartition, OngoingReassignment]) -> list[str]:
    if not ongoing:
        return ["No partition reassignments found."]
    lines = ["Current partition reassignments:"]
    for tp, r in sorted(ongoing.items()):
        adding = f" adding: {_ids(r.adding)}." if r.adding else ""
        removing = f" removing: {_ids(r.removing)}." if r.removing else ""
        lines.append(f"{tp}: replicas: {_ids(r.replicas)}.{adding}{removing}")
    return lines


def _ids(ids: Sequence[int]) -> str:
    return ",".join(str(i) for i in ids)


def _plural(n: int) -> str:
    return "" if n == 1 else "s"


def _names(tps: Sequence[TopicPartition]) -> str:
    return ",".join(str(tp) for tp in sorted(tps))


# -- the actions -------------------------------------------------------------------------


def _read(path: str | None, flag: str) -> str:
    if not path:
        raise CommandError(f"this action needs {flag}")
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None


async def _current(client: KafkaClient, partitions: Sequence[TopicPartition]) -> Plan:
    """The replicas each partition has now; CommandError for unknown ones."""
    topics = await describe_topics(client, sorted({tp.topic for tp in partitions}))
    out: Plan = {}
    for tp in partitions:
        info = topics.get(tp.topic)
        if info is None or info.error_code != ErrorCode.NONE:
            raise CommandError(f"Topic {tp.topic} not found")
        p = info.partitions.get(tp.partition)
        if p is None:
            raise CommandError(f"Unable to find partition: {tp}")
        out[tp] = list(p.replicas)
    return out


async def _generate(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    topics = parse_topics_to_move(
        _read(args.topics_to_move_json_file, "--topics-to-move-json-file")
    )
    if not args.broker_list:
        raise CommandError("--generate needs --broker-list")
    brokers = parse_broker_list(args.broker_list)
    described = await describe_topics(client, topics)
    current: Plan = {}
    for name in topics:
        info = described.get(name)
        if info is None or info.error_code != ErrorCode.NONE:
            raise CommandError(f"Topic {name} not found")
        for p, part in info.partitions.items():
            current[TopicPartition(name, p)] = list(part.replicas)
    unknown = sorted(set(brokers) - set(client.view.brokers))
    if unknown:
        raise CommandError(f"The following brokers are not known: {_ids(unknown)}")
    proposal = propose(current, brokers)
    print(f"Current partition replica assignment\n{format_reassignment(current)}\n", file=out)
    print(
        f"Proposed partition reassignment configuration\n{format_reassignment(proposal)}", file=out
    )


async def _execute(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    plan = parse_reassignment(_read(args.reassignment_json_file, "--reassignment-json-file"))
    if not args.additional and await list_partition_reassignments(client):
        raise CommandError(
            "Cannot execute because there is an existing partition assignment.  Use "
            "--additional to override this and create a new partition assignment in "
            "addition to the existing one."
        )
    current = await _current(client, list(plan))
    print(
        f"Current partition replica assignment\n\n{format_reassignment(current)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback",
        file=out,
    )
    if args.throttle >= 0:
        print(VERIFY_WARNING, file=out)
        await set_throttles(client, plan, current, args.throttle, out)
    results = await alter_partition_reassignments(
        client, {tp: r for tp, r in plan.items()}, timeout_ms=args.timeout_ms
    )
    failed = {tp: err for tp, err in results.items() if err is not None}
    if failed:
        raise CommandError(
            f"Error reassigning partition{_plural(len(failed))}:\n"
            + "\n".join(f"{tp}: {err}" for tp, err in sorted(failed.items()))
        )
    print(
        f"Successfully started partition reassignment{_plural(len(plan))} for {_names(list(plan))}",
        file=out,
    )


async def _verify(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    plan = parse_reassignment(_read(args.reassignment_json_file, "--reassignment-json-file"))
    ongoing = await list_partition_reassignments(client, list(plan))
    current = await _current(client, list(plan))
    for line in verify_lines(plan, current, ongoing):
        print(line, file=out)
    if ongoing:
        if not args.preserve_throttles:
            print("Throttles stay until every reassignment of the file completes.", file=out)
    elif not args.preserve_throttles:
        topics = {tp.topic for tp in plan}
        await clear_throttles(client, topics, sorted(client.view.brokers), out)


async def _cancel(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    plan = parse_reassignment(_read(args.reassignment_json_file, "--reassignment-json-file"))
    ongoing = sorted(await list_partition_reassignments(client, list(plan)))
    if not ongoing:
        print("None of the specified partition reassignments are active.", file=out)
    else:
        results = await alter_partition_reassignments(
            client, dict.fromkeys(ongoing), timeout_ms=args.timeout_ms
        )
        failed = {tp: err for tp, err in results.items() if err is not None}
        if failed:
            raise CommandError(
                f"Error cancelling partition reassignment{_plural(len(failed))} for:\n"
                + "\n".join(f"{tp}: {err}" for tp, err in sorted(failed.items()))
            )
        plural = _plural(len(ongoing))
        names = _names(ongoing)
        print(f"Successfully cancelled partition reassignment{plural} for: {names}", file=out)
    if not args.preserve_throttles:  # a cancelled move's throttle would outlive it
        topics = {tp.topic for tp in plan}
        await clear_throttles(client, topics, sorted(client.view.brokers), out)


async def _list(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    for line in list_lines(await list_partition_reassignments(client)):
        print(line, file=out)


async def main(args: argparse.Namespace, out: TextIO | None = None) -> None:
    out = sys.stdout if out is None else out  # looked up now, not at import
    action = next(a for a in ACTIONS if getattr(args, a))
    async with admin_client(args) as client:
        await {
            "generate": _generate,
            "execute": _execute,
            "verify": _verify,
            "cancel": _cancel,
            "list": _list,
        }[action](client, args, out)


def run(args: argparse.Namespace) -> int:
    return run_command(main(args), lambda exc: print(f"Error: {exc}", file=sys.stderr))
