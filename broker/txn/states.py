"""The transaction state machine, as a table of valid previous states.

A transactional id's metadata is in one of eight states (``TxnState``; the int8 is the
``TransactionStatus`` of its TransactionLogValue, the name what DescribeTransactions and
ListTransactions show):

- Empty: no transaction open (a fresh id, or one whose epoch was just bumped);
- Ongoing: partitions or a group's offsets were added: a transaction is open;
- PrepareCommit / PrepareAbort: EndTxn (or a fence, or a timeout) decided the outcome;
  the markers are being written to every partition of the transaction;
- CompleteCommit / CompleteAbort: every marker was acknowledged;
- Dead: the id expired (tombstoned in the log);
- PrepareEpochFence: in memory only, while an open transaction is being aborted because
  its producer was fenced (a new InitProducerId, a timeout): the abort goes out with the
  bumped epoch so that the old producer's late writes are refused.

Each target state lists the states it may be entered from, as Kafka's coordinator
declares them; a transition outside the table is a coordinator bug, not client input.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from types import MappingProxyType


class TxnState(IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display(self) -> str:
        """The state's name as Kafka's admin APIs show it (``PrepareCommit``)."""
        return _NAMES[self]

    @staticmethod
    def from_display(name: str) -> TxnState | None:
        return _BY_NAME.get(name)


_NAMES: Mapping[TxnState, str] = MappingProxyType(
    {
        TxnState.EMPTY: "Empty",
        TxnState.ONGOING: "Ongoing",
        TxnState.PREPARE_COMMIT: "PrepareCommit",
        TxnState.PREPARE_ABORT: "PrepareAbort",
        TxnState.COMPLETE_COMMIT: "CompleteCommit",
        TxnState.COMPLETE_ABORT: "CompleteAbort",
        TxnState.DEAD: "Dead",
        TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
    }
)
_BY_NAME = {name: state for state, name in _NAMES.items()}

E, O, PC, PA, CC, CA, D, PF = tuple(TxnState)  # noqa: E741 -- the table reads better

#: target state -> the states it may be entered from
VALID_PREVIOUS: Mapping[TxnState, frozenset[TxnState]] = MappingProxyType(
    {
        E: frozenset({E, CC, CA}),
        O: frozenset({O, E, CC, CA}),
        PC: frozenset({O}),
        PA: frozenset({O, PF}),
        CC: frozenset({PC}),
        CA: frozenset({PA}),
        D: frozenset({E, CC, CA}),
        PF: frozenset({O}),
    }
)

#: the states in which no transaction is open (the id may be re-initialised or expire)
COMPLETED = frozenset({E, CC, CA})
#: the states whose markers are still owed
PREPARED = frozenset({PC, PA})


class IllegalStateTransition(RuntimeError):
    """The coordinator tried a transition the table does not allow."""


def can_transition(current: TxnState, target: TxnState) -> bool:
    return current in VALID_PREVIOUS[target]


def check_transition(transactional_id: str, current: TxnState, target: TxnState) -> None:
    """Raise IllegalStateTransition unless ``current -> target`` is in the table."""
    if not can_transition(current, target):
        raise IllegalStateTransition(
            f"transactional id {transactional_id}: {current.display} -> {target.display}"
        )
