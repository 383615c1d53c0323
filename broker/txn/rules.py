"""What each request does to a transactional id's metadata: pure decisions.

Every function takes the metadata as it is (None: the id is unknown here) and answers a
``Decision``: the error for the client, and the transit to write first (None: nothing to
write; the answer stands as it is). The coordinator (broker.txn.coordinator) writes the
transit and answers once it is acknowledged. Kafka's rules, for the transaction version
these clients speak (one epoch per producer session, bumped by InitProducerId):

- InitProducerId: an unknown id gets a fresh producer id at epoch 0; a known one in a
  completed state (Empty, CompleteCommit, CompleteAbort) has its epoch bumped (a fresh
  producer id once the epoch is exhausted, the old one kept as ``last_producer_id``).
  KIP-360: a request naming its producer id and epoch is fenced (PRODUCER_FENCED) unless
  they are the current ones, or the previous ones of a bump whose answer was lost (then
  the current ones are answered again, with nothing written). An Ongoing transaction is
  aborted first, under a bumped epoch (PrepareEpochFence, then PrepareAbort) and the
  caller told CONCURRENT_TRANSACTIONS: it retries until the abort has completed. While a
  transaction is being prepared or completed, CONCURRENT_TRANSACTIONS too.
- AddPartitionsToTxn / AddOffsetsToTxn: the id must have this producer id
  (INVALID_PRODUCER_ID_MAPPING) and epoch (PRODUCER_FENCED); the transaction becomes (or
  stays) Ongoing with the partitions added; nothing is written when they are all in it.
- EndTxn: Ongoing -> PrepareCommit / PrepareAbort; a retry of an EndTxn already decided
  the same way answers CONCURRENT_TRANSACTIONS while its markers are written, NONE once
  complete; the other outcome, or no transaction, is INVALID_TXN_STATE.
- Timeouts: an Ongoing transaction older than its timeout is aborted under a bumped
  epoch; an id idle in a completed state for ``transactional.id.expiration.ms`` expires.

PRODUCER_FENCED reaches only the versions that know it (KIP-588: InitProducerId v4,
AddPartitionsToTxn, AddOffsetsToTxn and EndTxn v2); older versions are told
INVALID_PRODUCER_EPOCH (:func:`fencing_error`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from broker.txn.model import TxnMetadata, TxnTransit, change, epoch_exhausted
from broker.txn.states import COMPLETED, TxnState
from protocol.errors import ErrorCode
from protocol.records.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from protocol.values import TopicPartition

_NONE = ErrorCode.NONE
_CONCURRENT = ErrorCode.CONCURRENT_TRANSACTIONS
_FENCED = ErrorCode.PRODUCER_FENCED
_MAPPING = ErrorCode.INVALID_PRODUCER_ID_MAPPING
_BAD_STATE = ErrorCode.INVALID_TXN_STATE


@dataclass(frozen=True, slots=True)
class Decision:
    """The client's error, and what to write first (None: nothing)."""

    error: int
    transit: TxnTransit | None = None
    #: InitProducerId on an Ongoing transaction: the transit is the abort to run first
    fence: bool = False


def fencing_error(error: int, version: int, first_fenced_version: int) -> int:
    """PRODUCER_FENCED for the versions that carry it, INVALID_PRODUCER_EPOCH below."""
    if error == ErrorCode.PRODUCER_FENCED and version < first_fenced_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def needs_fresh_id(meta: TxnMetadata | None) -> bool:
    """Whether an InitProducerId for ``meta`` may need a new producer id (unknown id, or
    an epoch with no bump left): the caller allocates one before deciding."""
    return meta is None or epoch_exhausted(meta.producer_epoch + 1)


def _fenced_epoch(meta: TxnMetadata) -> tuple[int, int]:
    """(new epoch, last epoch) of a fence: bumped unless exhausted."""
    if epoch_exhausted(meta.producer_epoch):
        return meta.producer_epoch, meta.last_producer_epoch
    return meta.producer_epoch + 1, meta.producer_epoch


def _valid_producer(meta: TxnMetadata, producer_id: int, epoch: int) -> bool:
    return (
        meta.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == meta.producer_id
        or (producer_id == meta.last_producer_id and epoch_exhausted(epoch))
    )


def init_producer_id(
    meta: TxnMetadata | None,
    transactional_id: str,
    timeout_ms: int,
    expected: tuple[int, int] | None,
    fresh_id: int | None,
    now_ms: int,
) -> Decision:
    """InitProducerId (see the module doc). ``expected``: the request's (producer id,
    epoch), None when it names neither; ``fresh_id``: a new producer id when
    :func:`needs_fresh_id` said one may be needed."""
    if meta is None:
        if fresh_id is None:
            raise ValueError("an unknown transactional id needs a fresh producer id")
        return Decision(
            _NONE,
            TxnTransit(
                producer_id=fresh_id,
                last_producer_id=NO_PRODUCER_ID,
                producer_epoch=0,
                last_producer_epoch=NO_PRODUCER_EPOCH,
                timeout_ms=timeout_ms,
                state=TxnState.EMPTY,
                partitions=frozenset(),
                start_ms=-1,
                last_update_ms=now_ms,
            ),
        )
    if meta.pending is not None:
        return Decision(_CONCURRENT)
    if expected is not None and not _valid_producer(meta, *expected):
        return Decision(_FENCED)
    state = meta.state
    if state is TxnState.ONGOING:
        epoch, last_epoch = _fenced_epoch(meta)
        abort = change(
            meta.current(),
            producer_epoch=epoch,
            last_producer_epoch=last_epoch,
            state=TxnState.PREPARE_ABORT,
            last_update_ms=now_ms,
        )
        return Decision(_CONCURRENT, abort, fence=True)
    if state not in COMPLETED:
        return Decision(_CONCURRENT)
    if expected is not None and meta.producer_epoch != NO_PRODUCER_EPOCH:
        pid, epoch = expected
        if (pid, epoch) != (meta.producer_id, meta.producer_epoch):
            if (pid, epoch) in (
                (meta.producer_id, meta.last_producer_epoch),
                (meta.last_producer_id, meta.last_producer_epoch),
            ):
                return Decision(_NONE)  # a retry of a bump whose answer was lost
            return Decision(_FENCED)
    base = change(
        meta.current(),
        timeout_ms=timeout_ms,
        state=TxnState.EMPTY,
        partitions=frozenset(),
        start_ms=-1,
        last_update_ms=now_ms,
    )
    if epoch_exhausted(meta.producer_epoch + 1):
        if fresh_id is None:
            raise ValueError("an exhausted epoch needs a fresh producer id")
        return Decision(
            _NONE,
            change(
                base,
                producer_id=fresh_id,
                producer_epoch=0,
                last_producer_id=meta.producer_id,
                last_producer_epoch=meta.producer_epoch,
            ),
        )
    return Decision(
        _NONE,
        change(
            base, producer_epoch=meta.producer_epoch + 1, last_producer_epoch=meta.producer_epoch
        ),
    )


def _check_producer(meta: TxnMetadata | None, producer_id: int, epoch: int) -> int:
    if meta is None or meta.producer_id != producer_id or meta.state is TxnState.DEAD:
        return _MAPPING
    if epoch != meta.producer_epoch:
        return _FENCED
    return _NONE


def add_partitions(
    meta: TxnMetadata | None,
    producer_id: int,
    epoch: int,
    partitions: Collection[TopicPartition],
    now_ms: int,
) -> Decision:
    """AddPartitionsToTxn (and AddOffsetsToTxn, with the group's offsets partition)."""
    error = _check_producer(meta, producer_id, epoch)
    if error != _NONE or meta is None:
        return Decision(error)
    if meta.pending is not None or meta.state not in (*COMPLETED, TxnState.ONGOING):
        return Decision(_CONCURRENT)
    ongoing = meta.state is TxnState.ONGOING
    if ongoing and meta.partitions.issuperset(partitions):
        return Decision(_NONE)
    return Decision(
        _NONE,
        change(
            meta.current(),
            state=TxnState.ONGOING,
            partitions=frozenset(meta.partitions if ongoing else ()).union(partitions),
            start_ms=meta.start_ms if ongoing else now_ms,
            last_update_ms=now_ms,
        ),
    )


def verify_partitions(
    meta: TxnMetadata | None, producer_id: int, epoch: int, partitions: Collection[TopicPartition]
) -> Mapping[TopicPartition, int]:
    """AddPartitionsToTxn v4 verify-only (a leader asking, KIP-890): per partition, NONE
    when it is in the producer's open transaction, INVALID_TXN_STATE when it is not."""
    error = _check_producer(meta, producer_id, epoch)
    if error != _NONE or meta is None:
        return dict.fromkeys(partitions, error)
    open_txn = meta.state is TxnState.ONGOING
    return {tp: _NONE if open_txn and tp in meta.partitions else _BAD_STATE for tp in partitions}


def end_txn(
    meta: TxnMetadata | None, producer_id: int, epoch: int, commit: bool, now_ms: int
) -> Decision:
    """EndTxn (see the module doc)."""
    error = _check_producer(meta, producer_id, epoch)
    if error != _NONE or meta is None:
        return Decision(error)
    if meta.pending is not None:
        return Decision(_CONCURRENT)
    state = meta.state
    if state is TxnState.ONGOING:
        target = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        return Decision(_NONE, change(meta.current(), state=target, last_update_ms=now_ms))
    same = {
        TxnState.COMPLETE_COMMIT: (commit, _NONE),
        TxnState.COMPLETE_ABORT: (not commit, _NONE),
        TxnState.PREPARE_COMMIT: (commit, _CONCURRENT),
        TxnState.PREPARE_ABORT: (not commit, _CONCURRENT),
    }.get(state)
    if same is not None and same[0]:
        return Decision(same[1])
    return Decision(_BAD_STATE)


def complete(meta: TxnMetadata, now_ms: int) -> TxnTransit:
    """The CompleteCommit / CompleteAbort that follows every marker's acknowledgement."""
    target = (
        TxnState.COMPLETE_COMMIT
        if meta.state is TxnState.PREPARE_COMMIT
        else TxnState.COMPLETE_ABORT
    )
    return change(meta.current(), state=target, partitions=frozenset(), last_update_ms=now_ms)


def timed_out(meta: TxnMetadata, now_ms: int) -> bool:
    """An Ongoing transaction past its timeout, with nothing in flight."""
    return (
        meta.state is TxnState.ONGOING
        and meta.pending is None
        and meta.start_ms + meta.timeout_ms <= now_ms
    )


def timeout_abort(meta: TxnMetadata, now_ms: int) -> TxnTransit:
    """The abort of a timed-out transaction, under a bumped epoch (the producer is
    fenced: its late writes and its EndTxn are refused)."""
    epoch, last_epoch = _fenced_epoch(meta)
    return change(
        meta.current(),
        producer_epoch=epoch,
        last_producer_epoch=last_epoch,
        state=TxnState.PREPARE_ABORT,
        last_update_ms=now_ms,
    )


def expired(meta: TxnMetadata, now_ms: int, expiration_ms: int) -> bool:
    """An id idle in a completed state for ``expiration_ms`` (it becomes Dead)."""
    return (
        meta.state in COMPLETED
        and meta.pending is None
        and meta.last_update_ms + expiration_ms <= now_ms
    )
