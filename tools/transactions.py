"""``minikafka transactions``: inspect and repair transactions (kafka-transactions).

    minikafka transactions --bootstrap-server H:P list
    minikafka transactions --bootstrap-server H:P describe --transactional-id T
    minikafka transactions --bootstrap-server H:P describe-producers --topic T --partition P
                                                                     [--broker-id B]
    minikafka transactions --bootstrap-server H:P abort --topic T --partition P
        (--start-offset O | --producer-id I --producer-epoch E --coordinator-epoch C)
    minikafka transactions --bootstrap-server H:P find-hanging
        (--broker-id B | --topic T [--partition P]) [--max-transaction-timeout MIN]

Columns, as Kafka's tool prints them (absent values as ``None``):

- list: TransactionalId Coordinator ProducerId TransactionState
- describe: CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState
  TransactionTimeoutMs CurrentTransactionStartTimeMs TransactionDurationMs TopicPartitions
- describe-producers: ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence
  LastTimestamp CurrentTransactionStartOffset
- find-hanging: Topic Partition ProducerId ProducerEpoch CoordinatorEpoch StartOffset
  LastTimestamp Duration(min)

A *hanging* transaction is one a partition's leader holds open (it stops read_committed
consumers at its first offset) while its coordinator does not have that partition in an
ongoing transaction of that producer: the coordinator lost or never had it. Candidates
are the open transactions older than ``--max-transaction-timeout`` minutes (15, the
brokers' default transaction.max.timeout.ms); each is checked against the coordinators
(ListTransactions by producer id, then DescribeTransactions). ``abort`` writes the ABORT
marker for one (WriteTxnMarkers to the partition's leader); with ``--start-offset`` the
producer is the one whose open transaction starts there, with the coordinator epoch the
partition last saw.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from client import ClientError
from client.client import KafkaClient
from client.transactions import (
    ProducerState,
    TransactionDescription,
    TransactionListing,
    abort_transaction,
    describe_producers,
    describe_transaction,
    list_transactions,
)
from protocol.values import TopicPartition
from tools.command import CommandError, add_bootstrap_server, admin_client, run_command
from tools.consumer_groups import format_table

#: the brokers' default transaction.max.timeout.ms, in minutes
DEFAULT_MAX_TIMEOUT_MIN = 15


def configure(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_server(parser)
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("list", help="list the transactions of every coordinator")
    describe = sub.add_parser("describe", help="describe a transactional id's transaction")
    describe.add_argument("--transactional-id", required=True)
    producers = sub.add_parser("describe-producers", help="a partition's producer state")
    producers.add_argument("--topic", required=True)
    producers.add_argument("--partition", type=int, required=True)
    producers.add_argument("--broker-id", type=int, default=None, help="ask this replica")
    abort = sub.add_parser("abort", help="abort a hanging transaction on a partition")
    abort.add_argument("--topic", required=True)
    abort.add_argument("--partition", type=int, required=True)
    abort.add_argument("--start-offset", type=int, default=None)
    abort.add_argument("--producer-id", type=int, default=None)
    abort.add_argument("--producer-epoch", type=int, default=None)
    abort.add_argument("--coordinator-epoch", type=int, default=None)
    hanging = sub.add_parser("find-hanging", help="find transactions left open on partitions")
    hanging.add_argument("--broker-id", type=int, default=None)
    hanging.add_argument("--topic", default=None)
    hanging.add_argument("--partition", type=int, default=None)
    hanging.add_argument(
        "--max-transaction-timeout", type=int, default=DEFAULT_MAX_TIMEOUT_MIN, metavar="MIN"
    )


def _opt(value: int) -> str:
    return "None" if value < 0 else str(value)


# -- tables (pure) ----------------------------------------------------------------------------


def producers_table(states: Sequence[ProducerState]) -> str:
    header = (
        "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
        "LastTimestamp", "CurrentTransactionStartOffset",
    )  # fmt: skip
    rows = [
        (
            str(s.producer_id),
            str(s.producer_epoch),
            _opt(s.coordinator_epoch),
            str(s.last_sequence),
            str(s.last_timestamp),
            _opt(s.current_txn_start_offset),
        )
        for s in states
    ]
    return format_table(header, rows)


def list_table(listings: Sequence[TransactionListing]) -> str:
    header = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
    rows = [(t.transactional_id, str(t.coordinator), str(t.producer_id), t.state) for t in listings]
    return format_table(header, rows)


def describe_table(d: TransactionDescription, now_ms: int) -> str:
    header = (
        "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
        "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
        "TopicPartitions",
    )  # fmt: skip
    started = d.start_time_ms >= 0
    row = (
        str(d.coordinator),
        d.transactional_id,
        str(d.producer_id),
        str(d.producer_epoch),
        d.state,
        str(d.timeout_ms),
        str(d.start_time_ms) if started else "None",
        str(now_ms - d.start_time_ms) if started else "None",
        ",".join(f"{tp.topic}-{tp.partition}" for tp in d.partitions),
    )
    return format_table(header, [row])


HangingRow = tuple[TopicPartition, ProducerState]


def hanging_table(rows: Sequence[HangingRow], now_ms: int) -> str:
    header = (
        "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
        "StartOffset", "LastTimestamp", "Duration(min)",
    )  # fmt: skip
    cells = [
        (
            tp.topic,
            str(tp.partition),
            str(s.producer_id),
            str(s.producer_epoch),
            _opt(s.coordinator_epoch),
            str(s.current_txn_start_offset),
            str(s.last_timestamp),
            str(max(0, now_ms - s.last_timestamp) // 60_000),
        )
        for tp, s in rows
    ]
    return format_table(header, cells)


def open_candidates(
    states: Sequence[ProducerState], now_ms: int, max_timeout_min: int
) -> list[ProducerState]:
    """Open transactions whose producer has written nothing for longer than the timeout."""
    limit = max_timeout_min * 60_000
    return [
        s for s in states if s.current_txn_start_offset >= 0 and now_ms - s.last_timestamp > limit
    ]


# -- the actions -------------------------------------------------------------------------------


async def _abort(client: KafkaClient, args: argparse.Namespace) -> None:
    tp = TopicPartition(args.topic, args.partition)
    if args.start_offset is not None:
        if args.producer_id is not None or args.producer_epoch is not None:
            raise CommandError("--start-offset cannot be given with --producer-id/--producer-epoch")
        states = await describe_producers(client, tp)
        found = [s for s in states if s.current_txn_start_offset == args.start_offset]
        if not found:
            raise CommandError(
                f"Could not find any open transactions starting at offset {args.start_offset} "
                f"on partition {tp.topic}-{tp.partition}"
            )
        s = found[0]
        await abort_transaction(
            client, tp, s.producer_id, s.producer_epoch, max(0, s.coordinator_epoch)
        )
        return
    missing = [
        flag
        for flag, value in (
            ("--producer-id", args.producer_id),
            ("--producer-epoch", args.producer_epoch),
            ("--coordinator-epoch", args.coordinator_epoch),
        )
        if value is None
    ]
    if missing:
        raise CommandError(f"abort needs --start-offset or {', '.join(missing)}")
    await abort_transaction(
        client, tp, args.producer_id, args.producer_epoch, args.coordinator_epoch
    )


async def _partitions_to_search(
    client: KafkaClient, args: argparse.Namespace
) -> list[tuple[TopicPartition, int | None]]:
    """(partition, the broker to ask: None for its leader) for find-hanging."""
    if args.topic is None and args.broker_id is None:
        raise CommandError("find-hanging needs --broker-id or --topic")
    view = await client.refresh_metadata(None if args.topic is None else [args.topic])
    found: list[tuple[TopicPartition, int | None]] = []
    for name, topic in sorted(view.topics.items()):
        if args.topic is not None and name != args.topic:
            continue
        for p, info in sorted(topic.partitions.items()):
            if args.partition is not None and p != args.partition:
                continue
            if args.broker_id is not None and args.broker_id not in info.replicas:
                continue
            found.append((TopicPartition(name, p), args.broker_id))
    return found


async def _known_to_coordinator(
    client: KafkaClient, tp: TopicPartition, state: ProducerState
) -> bool:
    """Whether a coordinator has ``state``'s producer in a transaction with ``tp``."""
    try:
        listings = await list_transactions(client)
    except ClientError:
        return False  # no coordinator answers: none knows it
    for t in listings:
        if t.producer_id != state.producer_id:
            continue
        try:
            d = await describe_transaction(client, t.transactional_id)
        except ClientError:
            continue
        if d.producer_epoch == state.producer_epoch and tp in d.partitions:
            return True
    return False


async def _find_hanging(client: KafkaClient, args: argparse.Namespace) -> list[HangingRow]:
    now_ms = int(time.time() * 1000)
    rows: list[HangingRow] = []
    for tp, broker in await _partitions_to_search(client, args):
        states = await describe_producers(client, tp, broker)
        for s in open_candidates(states, now_ms, args.max_transaction_timeout):
            if not await _known_to_coordinator(client, tp, s):
                rows.append((tp, s))
    return rows


async def main(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out
    now_ms = int(time.time() * 1000)
    async with admin_client(args) as client:
        if args.action == "describe-producers":
            tp = TopicPartition(args.topic, args.partition)
            print(producers_table(await describe_producers(client, tp, args.broker_id)), file=out)
        elif args.action == "abort":
            await _abort(client, args)
        elif args.action == "find-hanging":
            print(hanging_table(await _find_hanging(client, args), now_ms), file=out)
        elif args.action == "list":
            print(list_table(await list_transactions(client)), file=out)
        else:
            description = await describe_transaction(client, args.transactional_id)
            print(describe_table(description, now_ms), file=out)
    return 0


def run(args: argparse.Namespace) -> int:
    def report(exc: Exception) -> None:
        print(f"Error: {exc}", file=sys.stderr)

    return run_command(main(args), report)
