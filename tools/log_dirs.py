"""``minikafka log-dirs``: each broker's log directories and their partitions
(kafka-log-dirs).

    minikafka log-dirs --bootstrap-server H:P --describe [--broker-list 0,1] \\
        [--topic-list t1,t2]

Prints Kafka's two status lines, then one JSON document::

    Querying brokers for log directories information
    Received log directory information from brokers 0,1,2
    {"brokers":[{"broker":0,"logDirs":[{"partitions":[{"partition":"t-0","size":1234,
     "offsetLag":0,"isFuture":false}],"error":null,"logDir":"/data/broker-0"}]}],"version":1}

Every live broker is asked unless ``--broker-list`` names some; ``--topic-list`` keeps only
those topics' partitions. ``error`` names the error of an offline directory.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection, Mapping, Sequence
from typing import Any, TextIO

from client import describe_log_dirs
from client.admin import LogDirInfo
from tools.command import CommandError, add_bootstrap_server, admin_client, run_command


def configure(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_server(parser)
    parser.add_argument(
        "--describe", action="store_true", required=True, help="describe the log directories"
    )
    parser.add_argument(
        "--broker-list",
        default="",
        metavar="0,1,2",
        help="brokers to query (default: every live broker)",
    )
    parser.add_argument(
        "--topic-list", default="", metavar="t1,t2", help="topics to show (default: every topic)"
    )


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def document(
    dirs_by_broker: Mapping[int, Sequence[LogDirInfo]], topics: Collection[str]
) -> dict[str, Any]:
    """Kafka's JSON document for the answers, keeping only ``topics`` (all when empty)."""
    return {
        "brokers": [
            {
                "broker": broker,
                "logDirs": [
                    {
                        "partitions": [
                            {
                                "partition": f"{p.topic}-{p.partition}",
                                "size": p.size,
                                "offsetLag": p.offset_lag,
                                "isFuture": p.is_future,
                            }
                            for p in d.partitions
                            if not topics or p.topic in topics
                        ],
                        "error": None if d.error is None else d.error.name,
                        "logDir": d.path,
                    }
                    for d in dirs
                ],
            }
            for broker, dirs in sorted(dirs_by_broker.items())
        ],
        "version": 1,
    }


async def main(args: argparse.Namespace, out: TextIO | None = None) -> None:
    out = sys.stdout if out is None else out  # looked up now, not at import
    async with admin_client(args) as client:
        view = await client.refresh_metadata([])
        try:
            brokers = [int(b) for b in _csv(args.broker_list)] or sorted(view.brokers)
        except ValueError as exc:
            raise CommandError(f"--broker-list takes broker ids: {args.broker_list}") from exc
        unknown = [b for b in brokers if b not in view.brokers]
        if unknown:
            raise CommandError(f"no live broker with id {', '.join(map(str, unknown))}")
        print("Querying brokers for log directories information", file=out)
        answers = {b: await describe_log_dirs(client, b) for b in brokers}
        print(
            "Received log directory information from brokers "
            + ",".join(str(b) for b in sorted(answers)),
            file=out,
        )
        print(
            json.dumps(document(answers, set(_csv(args.topic_list))), separators=(",", ":")),
            file=out,
        )


def run(args: argparse.Namespace) -> int:
    return run_command(main(args), lambda exc: print(f"Error: {exc}", file=sys.stderr))
