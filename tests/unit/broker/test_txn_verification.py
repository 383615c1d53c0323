"""broker.txn.verification: which Produce error a coordinator's answer becomes, and how
a leader's questions are routed (this broker's coordinator answers in-process; a
transactional id without a known coordinator is retriable). The TCP path is exercised
by tests/integration/test_txn_failures.py."""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from broker.txn.verification import PartitionVerifier, Producer, produce_error
from client.connection import ConnectionConfig
from protocol import ErrorCode
from protocol.values import TopicPartition

A, B = TopicPartition("a", 0), TopicPartition("b", 1)


def test_coordinator_answers_become_produce_errors() -> None:
    assert produce_error(ErrorCode.NONE) == ErrorCode.NONE
    assert produce_error(ErrorCode.INVALID_TXN_STATE) == ErrorCode.INVALID_TXN_STATE
    assert produce_error(ErrorCode.PRODUCER_FENCED) == ErrorCode.PRODUCER_FENCED
    for retriable in (
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.CONCURRENT_TRANSACTIONS,
    ):
        assert produce_error(retriable) == ErrorCode.NOT_ENOUGH_REPLICAS


def test_the_local_coordinator_answers_and_an_unknown_one_is_retriable() -> None:
    asked: list[tuple[str, int, int, list[TopicPartition]]] = []

    def local(
        tid: str, pid: int, epoch: int, partitions: Collection[TopicPartition]
    ) -> dict[TopicPartition, int]:
        asked.append((tid, pid, epoch, sorted(partitions)))
        return {tp: ErrorCode.NONE if tp == A else ErrorCode.INVALID_TXN_STATE for tp in partitions}

    verifier = PartitionVerifier(
        0,
        lambda tid: 0 if tid == "here" else None,
        lambda broker_id: None,
        local,
        ConnectionConfig("test"),
    )
    here = Producer("here", 7, 2)
    answers = asyncio.run(
        verifier.verify({A: here, B: here, TopicPartition("c", 0): Producer("lost", 8, 0)})
    )
    assert answers == {
        A: ErrorCode.NONE,
        B: ErrorCode.INVALID_TXN_STATE,
        TopicPartition("c", 0): ErrorCode.NOT_ENOUGH_REPLICAS,
    }
    assert asked == [("here", 7, 2, [A, B])]


def test_an_unreachable_coordinator_is_retriable() -> None:
    verifier = PartitionVerifier(
        0, lambda tid: 1, lambda broker_id: None, lambda *a: {}, ConnectionConfig("test")
    )
    answers = asyncio.run(verifier.verify({A: Producer("there", 1, 0)}))
    assert answers == {A: ErrorCode.NOT_ENOUGH_REPLICAS}
