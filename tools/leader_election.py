"""``minikafka leader-election``: ask for preferred or unclean leader elections
(kafka-leader-election).

    minikafka leader-election --bootstrap-server H:P --election-type preferred|unclean \\
        (--topic T --partition P | --path-to-json-file F | --all-topic-partitions)

The JSON file lists partitions as Kafka's tool reads them::

    {"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]}

Output, as Kafka's tool prints it (partitions as ``topic-partition``, comma separated)::

    Successfully completed leader election (PREFERRED) for partitions t-0, t-1
    Valid replica already elected for partitions t-2
    Error completing leader election (PREFERRED) for partition: t-3: <ERROR>: <message>

A partition that failed makes the command exit with status 1 (after printing the lines
above, and ``Error while making request: N replica(s) could not be elected`` on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from client import ElectionResult, elect_leaders
from protocol import ErrorCode, error_name
from tools.command import CommandError, add_bootstrap_server, admin_client, run_command

ELECTION_TYPES = {"preferred": 0, "unclean": 1}


def configure(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_server(parser)
    parser.add_argument(
        "--election-type",
        required=True,
        type=str.lower,
        choices=sorted(ELECTION_TYPES),
        help="preferred: back to the first assigned replica; unclean: any live replica "
        "for partitions without a leader",
    )
    parser.add_argument("--topic", help="the topic of --partition")
    parser.add_argument("--partition", type=int, help="the partition of --topic")
    parser.add_argument(
        "--path-to-json-file", type=Path, help='{"partitions": [{"topic": T, "partition": P}]}'
    )
    parser.add_argument(
        "--all-topic-partitions", action="store_true", help="every partition of every topic"
    )
    parser.add_argument("--timeout-ms", type=int, default=30_000, help="election timeout")


def parse_json_partitions(text: str) -> list[tuple[str, int]]:
    """The partitions of a JSON file; duplicates and malformed entries are errors."""
    try:
        doc = json.loads(text)
        entries = doc["partitions"]
        out = [(str(e["topic"]), int(e["partition"])) for e in entries]
    except (ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"the partitions file is not valid: {exc}") from None
    duplicates = sorted({f"{t}-{p}" for t, p in out if out.count((t, p)) > 1})
    if duplicates:
        raise CommandError(
            f"Replica election data contains duplicate partitions: {', '.join(duplicates)}"
        )
    return out


def chosen_partitions(args: argparse.Namespace) -> list[tuple[str, int]] | None:
    """What the flags ask for (None: every partition)."""
    sources = [
        args.topic is not None,
        args.path_to_json_file is not None,
        args.all_topic_partitions,
    ]
    if sum(sources) != 1:
        raise CommandError(
            "One and only one of the following options is required: "
            "--topic, --all-topic-partitions, --path-to-json-file"
        )
    if args.all_topic_partitions:
        return None
    if args.path_to_json_file is not None:
        return parse_json_partitions(args.path_to_json_file.read_text())
    if args.partition is None:
        raise CommandError("Missing required option(s) [partition]")
    return [(args.topic, args.partition)]


def report(election_type: str, results: list[ElectionResult], out: TextIO) -> int:
    """Print the outcome as Kafka's tool does; return how many partitions failed."""
    kind = election_type.upper()
    name = {r: f"{r.topic}-{r.partition}" for r in results}
    ordered = sorted(results, key=lambda r: (r.topic, r.partition))
    done = [name[r] for r in ordered if r.error_code == ErrorCode.NONE]
    noop = [name[r] for r in ordered if r.error_code == ErrorCode.ELECTION_NOT_NEEDED]
    failed = [
        r for r in ordered if r.error_code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)
    ]
    if done:
        print(
            f"Successfully completed leader election ({kind}) for partitions {', '.join(done)}",
            file=out,
        )
    if noop:
        print(f"Valid replica already elected for partitions {', '.join(noop)}", file=out)
    for r in failed:
        try:
            error = error_name(r.error_code)
        except ValueError:
            error = f"ERROR_{r.error_code}"
        detail = f"{error}: {r.error_message}" if r.error_message else error
        print(
            f"Error completing leader election ({kind}) for partition: {name[r]}: {detail}",
            file=out,
        )
    return len(failed)


async def main(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out  # looked up now, not at import
    partitions = chosen_partitions(args)
    async with admin_client(args) as client:
        results = await elect_leaders(
            client, ELECTION_TYPES[args.election_type], partitions, timeout_ms=args.timeout_ms
        )
    return report(args.election_type, results, out)


def run(args: argparse.Namespace) -> int:
    async def elect() -> None:
        failures = await main(args)
        if failures:
            raise CommandError(f"{failures} replica(s) could not be elected")

    def report(exc: Exception) -> None:
        print(f"Error while making request: {exc}", file=sys.stderr)

    return run_command(elect(), report, also=(OSError,))
