"""minikafka transactions: the subcommands and flags of kafka-transactions, its tables'
columns (absent values as None), and which open transactions find-hanging considers."""

from __future__ import annotations

from client.transactions import ProducerState, TransactionDescription, TransactionListing
from protocol.values import TopicPartition
from tools import transactions as tx
from tools.main import build_parser

NOW = 10 * 60 * 60_000


def state(pid: int, txn_start: int, last_ts: int, coordinator_epoch: int = -1) -> ProducerState:
    return ProducerState(pid, 3, 9, last_ts, coordinator_epoch, txn_start)


def rows(table: str) -> list[list[str]]:
    return [line.split() for line in table.splitlines() if line.strip()]


def test_the_subcommands_and_flags_of_kafka_transactions() -> None:
    parser = build_parser()
    args = parser.parse_args(["transactions", "--bootstrap-server", "h:1", "abort", "--topic",
                              "t", "--partition", "0", "--start-offset", "5"])  # fmt: skip
    assert (args.action, args.topic, args.partition, args.start_offset) == ("abort", "t", 0, 5)
    args = parser.parse_args(["transactions", "--bootstrap-server", "h:1", "describe-producers",
                              "--topic", "t", "--partition", "1", "--broker-id", "2"])  # fmt: skip
    assert (args.action, args.broker_id) == ("describe-producers", 2)
    args = parser.parse_args(["transactions", "--bootstrap-server", "h:1", "find-hanging",
                              "--broker-id", "1"])  # fmt: skip
    assert (args.max_transaction_timeout, args.broker_id) == (15, 1)
    args = parser.parse_args(["transactions", "--bootstrap-server", "h:1", "describe",
                              "--transactional-id", "tx"])  # fmt: skip
    assert args.transactional_id == "tx"
    assert parser.parse_args(["transactions", "--bootstrap-server", "h:1", "list"]).action == "list"


def test_describe_producers_table() -> None:
    table = tx.producers_table([state(7, -1, 1000, 2), state(8, 40, 1001)])
    assert rows(table) == [
        ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
         "LastTimestamp", "CurrentTransactionStartOffset"],
        ["7", "3", "2", "9", "1000", "None"],
        ["8", "3", "None", "9", "1001", "40"],
    ]  # fmt: skip


def test_list_and_describe_tables() -> None:
    listed = rows(tx.list_table([TransactionListing("tx", 1, 7, "Ongoing")]))
    assert listed == [
        ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
        ["tx", "1", "7", "Ongoing"],
    ]
    described = TransactionDescription(
        1,
        "tx",
        7,
        2,
        "Ongoing",
        60_000,
        NOW - 500,
        (TopicPartition("t", 0), TopicPartition("u", 1)),
    )
    assert rows(tx.describe_table(described, NOW))[1] == [
        "1", "tx", "7", "2", "Ongoing", "60000", str(NOW - 500), "500", "t-0,u-1",
    ]  # fmt: skip


def test_find_hanging_considers_open_transactions_older_than_the_timeout() -> None:
    old, recent, closed = state(1, 5, NOW - 16 * 60_000), state(2, 6, NOW - 60_000), state(3, -1, 0)
    assert tx.open_candidates([old, recent, closed], NOW, 15) == [old]
    table = rows(tx.hanging_table([(TopicPartition("t", 0), old)], NOW))
    assert table[0] == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                        "StartOffset", "LastTimestamp", "Duration(min)"]  # fmt: skip
    assert table[1] == ["t", "0", "1", "3", "None", "5", str(NOW - 16 * 60_000), "16"]
