"""The transaction state table: Kafka's valid previous states, transitions outside it
refused (a chain of transits checked step by step), and a transactional id's coordinator
partition computed as Kafka computes it."""

from __future__ import annotations

import pytest

from broker.txn.model import TxnMetadata, TxnTransit
from broker.txn.states import (
    VALID_PREVIOUS,
    IllegalStateTransition,
    TxnState,
    can_transition,
    check_transition,
)
from broker.txn.topic import txn_partition_for

E, O, PC, PA, CC, CA, D, PF = tuple(TxnState)  # noqa: E741


def test_the_table_is_kafkas() -> None:
    assert dict(VALID_PREVIOUS) == {
        E: {E, CC, CA},
        O: {O, E, CC, CA},
        PC: {O},
        PA: {O, PF},
        CC: {PC},
        CA: {PA},
        D: {E, CC, CA},
        PF: {O},
    }


def test_status_numbers_and_names_are_kafkas() -> None:
    assert [int(s) for s in (E, O, PC, PA, CC, CA, D, PF)] == list(range(8))
    assert [s.display for s in TxnState] == [
        "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
        "CompleteAbort", "Dead", "PrepareEpochFence",
    ]  # fmt: skip
    assert TxnState.from_display("Ongoing") is O
    assert TxnState.from_display("ongoing") is None


@pytest.mark.parametrize(("current", "target"), [(E, PC), (CC, PC), (PC, PA), (O, CC), (D, E)])
def test_a_transition_outside_the_table_is_refused(current: TxnState, target: TxnState) -> None:
    assert not can_transition(current, target)
    with pytest.raises(IllegalStateTransition):
        check_transition("tx", current, target)


def test_metadata_applies_only_an_allowed_pending_transit() -> None:
    meta = TxnMetadata("tx", producer_id=7, producer_epoch=0, timeout_ms=1000)
    bad = TxnTransit(7, -1, 0, -1, 1000, PC, frozenset(), -1, 1)
    with pytest.raises(IllegalStateTransition):
        meta.prepare(bad)
    assert meta.pending is None and meta.state is E


def test_a_chain_of_transits_is_checked_step_by_step_and_applied_in_order() -> None:
    meta = TxnMetadata("tx", producer_id=7, producer_epoch=0, timeout_ms=1000, state=PC)
    complete = TxnTransit(7, -1, 0, -1, 1000, CC, frozenset(), -1, 1)
    ongoing = TxnTransit(7, -1, 0, -1, 1000, O, frozenset(), 2, 2)
    with pytest.raises(IllegalStateTransition):
        meta.prepare(ongoing, complete)  # PrepareCommit -> Ongoing is not in the table
    assert meta.pending is None
    assert meta.prepare(complete, ongoing) is ongoing and meta.pending is ongoing
    meta.complete(complete)
    assert meta.state is CC and meta.pending is ongoing  # the chain is still being applied
    meta.complete(ongoing)
    assert meta.state is O and meta.pending is None


def java_hash(s: str) -> int:
    """String.hashCode by its definition, s[0]*31^(n-1) + ... + s[n-1], wrapped to int32."""
    n = len(s)
    h: int = sum(ord(c) * 31 ** (n - 1 - i) for i, c in enumerate(s)) % 2**32
    return h - 2**32 if h >= 2**31 else h


@pytest.mark.parametrize(
    ("tid", "expected_hash"),
    [("hello", 99162322), ("Aa", 2112), ("BB", 2112), ("my-transactional-id", None)],
)
def test_coordinator_partition_follows_java_hash_code(tid: str, expected_hash: int | None) -> None:
    h = java_hash(tid)
    if expected_hash is not None:
        assert h == expected_hash
    assert txn_partition_for(tid, 50) == abs(h) % 50


def test_integer_min_value_hash_maps_to_partition_zero() -> None:
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE; Kafka's abs maps it to 0
    assert java_hash("polygenelubricants") == -(2**31)
    assert txn_partition_for("polygenelubricants", 50) == 0
