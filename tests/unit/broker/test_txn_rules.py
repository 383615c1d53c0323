"""The transaction coordinator's rules (pure): epoch bumps, KIP-360 recovery, fencing an
open transaction, adding partitions, ending transactions and their retries, timeouts and
expiry, and PRODUCER_FENCED per version."""

from __future__ import annotations

from broker.txn import rules
from broker.txn.model import MAX_EPOCH, TxnMetadata
from broker.txn.states import TxnState
from protocol.errors import ErrorCode
from protocol.values import TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
NOW = 1_000


def meta(state: TxnState = TxnState.EMPTY, epoch: int = 3, **kw: object) -> TxnMetadata:
    m = TxnMetadata("tx", producer_id=42, producer_epoch=epoch, timeout_ms=60_000, **kw)  # type: ignore[arg-type]
    m.state = state
    return m


def test_unknown_id_gets_the_fresh_id_at_epoch_0() -> None:
    d = rules.init_producer_id(None, "tx", 5000, None, fresh_id=77, now_ms=NOW)
    assert d.error == ErrorCode.NONE and d.transit is not None
    assert (d.transit.producer_id, d.transit.producer_epoch, d.transit.state) == (
        77, 0, TxnState.EMPTY,
    )  # fmt: skip
    assert d.transit.timeout_ms == 5000


def test_reinitialising_bumps_the_epoch() -> None:
    for state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        d = rules.init_producer_id(meta(state), "tx", 5000, None, None, NOW)
        assert d.transit is not None
        assert (d.transit.producer_id, d.transit.producer_epoch) == (42, 4)
        assert d.transit.last_producer_epoch == 3 and d.transit.state is TxnState.EMPTY


def test_kip360_with_the_current_identity_bumps() -> None:
    d = rules.init_producer_id(meta(), "tx", 5000, (42, 3), None, NOW)
    assert d.error == ErrorCode.NONE and d.transit is not None
    assert d.transit.producer_epoch == 4


def test_kip360_retry_of_a_lost_answer_gets_the_current_identity_again() -> None:
    m = meta(epoch=4, last_producer_epoch=3)
    d = rules.init_producer_id(m, "tx", 5000, (42, 3), None, NOW)
    assert (d.error, d.transit) == (ErrorCode.NONE, None)


def test_kip360_with_another_identity_is_fenced() -> None:
    assert rules.init_producer_id(meta(), "tx", 5000, (41, 3), None, NOW).error == (
        ErrorCode.PRODUCER_FENCED
    )
    assert rules.init_producer_id(meta(epoch=5, last_producer_epoch=4), "tx", 5000, (42, 1),
                                  None, NOW).error == ErrorCode.PRODUCER_FENCED  # fmt: skip


def test_an_open_transaction_is_aborted_under_a_bumped_epoch_first() -> None:
    m = meta(TxnState.ONGOING, partitions={T0})
    d = rules.init_producer_id(m, "tx", 5000, None, None, NOW)
    assert d.error == ErrorCode.CONCURRENT_TRANSACTIONS and d.fence
    assert d.transit is not None and d.transit.state is TxnState.PREPARE_ABORT
    assert (d.transit.producer_epoch, d.transit.last_producer_epoch) == (4, 3)
    assert d.transit.partitions == {T0}


def test_prepared_or_pending_answers_concurrent_transactions() -> None:
    for state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        d = rules.init_producer_id(meta(state), "tx", 5000, None, None, NOW)
        assert (d.error, d.transit) == (ErrorCode.CONCURRENT_TRANSACTIONS, None)
    m = meta()
    m.pending = m.current()
    assert rules.init_producer_id(m, "tx", 5000, None, None, NOW).error == (
        ErrorCode.CONCURRENT_TRANSACTIONS
    )


def test_an_exhausted_epoch_rotates_the_producer_id() -> None:
    m = meta(epoch=MAX_EPOCH - 2)
    assert rules.needs_fresh_id(m) and rules.needs_fresh_id(None)
    assert not rules.needs_fresh_id(meta())
    d = rules.init_producer_id(m, "tx", 5000, None, fresh_id=99, now_ms=NOW)
    assert d.transit is not None
    assert (d.transit.producer_id, d.transit.producer_epoch, d.transit.last_producer_id) == (
        99, 0, 42,
    )  # fmt: skip


def test_add_partitions() -> None:
    assert (
        rules.add_partitions(None, 42, 3, [T0], NOW).error == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    )
    assert (
        rules.add_partitions(meta(), 41, 3, [T0], NOW).error
        == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    )
    assert rules.add_partitions(meta(), 42, 2, [T0], NOW).error == ErrorCode.PRODUCER_FENCED
    d = rules.add_partitions(meta(TxnState.COMPLETE_COMMIT, partitions=set()), 42, 3, [T0], NOW)
    assert d.transit is not None and d.transit.state is TxnState.ONGOING
    assert (d.transit.partitions, d.transit.start_ms) == (frozenset({T0}), NOW)
    ongoing = meta(TxnState.ONGOING, partitions={T0}, start_ms=5)
    assert rules.add_partitions(ongoing, 42, 3, [T0], NOW) == rules.Decision(ErrorCode.NONE)
    more = rules.add_partitions(ongoing, 42, 3, [T1], NOW).transit
    assert more is not None and more.partitions == {T0, T1} and more.start_ms == 5
    prepared = meta(TxnState.PREPARE_COMMIT)
    assert rules.add_partitions(prepared, 42, 3, [T0], NOW).error == (
        ErrorCode.CONCURRENT_TRANSACTIONS
    )


def test_verify_only() -> None:
    ongoing = meta(TxnState.ONGOING, partitions={T0})
    assert rules.verify_partitions(ongoing, 42, 3, [T0, T1]) == {
        T0: ErrorCode.NONE,
        T1: ErrorCode.INVALID_TXN_STATE,
    }
    assert rules.verify_partitions(ongoing, 42, 2, [T0]) == {T0: ErrorCode.PRODUCER_FENCED}
    assert rules.verify_partitions(meta(), 42, 3, [T0]) == {T0: ErrorCode.INVALID_TXN_STATE}


def test_end_txn_and_its_retries() -> None:
    ongoing = meta(TxnState.ONGOING, partitions={T0})
    commit = rules.end_txn(ongoing, 42, 3, True, NOW).transit
    abort = rules.end_txn(ongoing, 42, 3, False, NOW).transit
    assert commit is not None and commit.state is TxnState.PREPARE_COMMIT
    assert abort is not None and abort.state is TxnState.PREPARE_ABORT
    cases = [
        (TxnState.PREPARE_COMMIT, True, ErrorCode.CONCURRENT_TRANSACTIONS),
        (TxnState.PREPARE_COMMIT, False, ErrorCode.INVALID_TXN_STATE),
        (TxnState.COMPLETE_COMMIT, True, ErrorCode.NONE),
        (TxnState.COMPLETE_COMMIT, False, ErrorCode.INVALID_TXN_STATE),
        (TxnState.PREPARE_ABORT, False, ErrorCode.CONCURRENT_TRANSACTIONS),
        (TxnState.COMPLETE_ABORT, False, ErrorCode.NONE),
        (TxnState.EMPTY, True, ErrorCode.INVALID_TXN_STATE),
    ]
    for state, committed, error in cases:
        d = rules.end_txn(meta(state), 42, 3, committed, NOW)
        assert (d.error, d.transit) == (error, None), (state, committed)
    assert rules.end_txn(ongoing, 42, 2, True, NOW).error == ErrorCode.PRODUCER_FENCED


def test_complete_clears_the_partitions() -> None:
    done = rules.complete(meta(TxnState.PREPARE_ABORT, partitions={T0}), NOW)
    assert (done.state, done.partitions, done.last_update_ms) == (
        TxnState.COMPLETE_ABORT, frozenset(), NOW,
    )  # fmt: skip


def test_timeouts_and_expiry() -> None:
    ongoing = meta(TxnState.ONGOING, partitions={T0}, start_ms=0)
    assert not rules.timed_out(ongoing, 59_999)
    assert rules.timed_out(ongoing, 60_000)
    abort = rules.timeout_abort(ongoing, 60_000)
    assert (abort.state, abort.producer_epoch, abort.last_producer_epoch) == (
        TxnState.PREPARE_ABORT, 4, 3,
    )  # fmt: skip
    idle = meta(TxnState.COMPLETE_COMMIT, last_update_ms=100)
    assert not rules.expired(idle, 1099, 1000)
    assert rules.expired(idle, 1100, 1000)
    assert not rules.expired(meta(TxnState.ONGOING, last_update_ms=100), 10_000, 1000)


def test_producer_fenced_per_version() -> None:
    fenced = ErrorCode.PRODUCER_FENCED
    assert rules.fencing_error(fenced, 1, 2) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert rules.fencing_error(fenced, 2, 2) == fenced
    assert rules.fencing_error(ErrorCode.NONE, 0, 2) == ErrorCode.NONE
