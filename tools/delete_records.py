"""``minikafka delete-records``: delete a partition's records below an offset
(kafka-delete-records).

    minikafka delete-records --bootstrap-server H:P --offset-json-file F [--timeout-ms MS]

The JSON file is Kafka's (``offset`` -1 means the high watermark)::

    {"partitions": [{"topic": "t", "partition": 0, "offset": 5}], "version": 1}

Output, as Kafka's tool prints it (one line a partition, as ``topic-partition``)::

    Executing records delete operation
    Records delete operation completed:
    partition: t-0	low_watermark: 5
    partition: t-1	error: OFFSET_OUT_OF_RANGE

Records below the offset are gone for readers at once (the log start moves); the disk
space comes back when the brokers' retention task removes the segments below it. As
with Kafka's tool, a partition that failed is reported on its line and the command still
exits 0; a bad file or an unreachable cluster exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from client import DeleteRecordsResult, delete_records
from protocol import ErrorCode, error_name
from protocol.values import TopicPartition
from tools.command import CommandError, add_bootstrap_server, admin_client, run_command

#: the only version of the offsets file Kafka's tool reads
JSON_VERSION = 1


def configure(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_server(parser)
    parser.add_argument(
        "--offset-json-file",
        required=True,
        type=Path,
        help='{"partitions": [{"topic": T, "partition": P, "offset": O}], "version": 1}',
    )
    parser.add_argument(
        "--timeout-ms", type=int, default=30_000, help="how long the brokers may take"
    )


def parse_offsets(text: str) -> dict[TopicPartition, int]:
    """The offset per partition of an offsets file; an unknown version, a malformed
    entry or a partition named twice is an error (Kafka's tool refuses them too)."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise CommandError("The input string is not a valid JSON") from None
    if not isinstance(doc, dict):
        raise CommandError("The input string is not a valid JSON")
    version = doc.get("version", JSON_VERSION)
    if version != JSON_VERSION:
        raise CommandError(f"Not supported version field value {version}")
    if "partitions" not in doc:
        raise CommandError("Missing partitions field")
    try:
        entries = [
            (TopicPartition(str(e["topic"]), int(e["partition"])), int(e["offset"]))
            for e in doc["partitions"]
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise CommandError(f"the offsets file is not valid: {exc!r}") from None
    tps = [tp for tp, _ in entries]
    duplicates = sorted({f"{tp.topic}-{tp.partition}" for tp in tps if tps.count(tp) > 1})
    if duplicates:
        raise CommandError(
            f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}"
        )
    return dict(entries)


def result_line(result: DeleteRecordsResult) -> str:
    name = f"{result.topic}-{result.partition}"
    if result.error_code == ErrorCode.NONE:
        return f"partition: {name}\tlow_watermark: {result.low_watermark}"
    try:
        error = error_name(result.error_code)
    except ValueError:
        error = f"ERROR_{result.error_code}"
    return f"partition: {name}\terror: {error}"


async def main(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Delete the records and print the outcome; returns how many partitions failed."""
    out = sys.stdout if out is None else out  # looked up now, not at import
    offsets = parse_offsets(args.offset_json_file.read_text())
    print("Executing records delete operation", file=out)
    async with admin_client(args) as client:
        results = await delete_records(client, offsets, timeout_ms=args.timeout_ms)
    print("Records delete operation completed:", file=out)
    for tp in offsets:
        print(result_line(results[tp]), file=out)
    return sum(1 for r in results.values() if r.error_code != ErrorCode.NONE)


def run(args: argparse.Namespace) -> int:
    def report(exc: Exception) -> None:
        print(f"Error while executing records delete operation: {exc}", file=sys.stderr)

    return run_command(main(args), report, also=(OSError,))
