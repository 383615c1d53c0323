"""Replica and partition states as transition tables (Kafka's validPreviousStates).

Each target state maps to the set of states a replica (or partition) may be in before
moving to it. ``check_transition`` is the one place that consults a table: an invalid
transition is logged and refused, never applied.

Replica lifecycle::

    NonExistent -> New -> Online <-> Offline -> DeletionStarted -> DeletionSuccessful
                                 (Ineligible when a deletion cannot proceed)  -> NonExistent

Partition lifecycle::

    NonExistent -> New -> Online <-> Offline -> NonExistent
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from typing import TypeVar

log = logging.getLogger(__name__)


class ReplicaState(enum.Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"

    def __str__(self) -> str:
        return self.value


class PartitionState(enum.Enum):
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"
    NON_EXISTENT = "NonExistentPartition"

    def __str__(self) -> str:
        return self.value


R = ReplicaState
P = PartitionState

#: target replica state -> valid previous states
REPLICA_TRANSITIONS: Mapping[ReplicaState, frozenset[ReplicaState]] = {
    R.NEW: frozenset({R.NON_EXISTENT}),
    R.ONLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.OFFLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.DELETION_STARTED: frozenset({R.OFFLINE}),
    R.DELETION_SUCCESSFUL: frozenset({R.DELETION_STARTED}),
    R.DELETION_INELIGIBLE: frozenset({R.OFFLINE, R.DELETION_STARTED}),
    R.NON_EXISTENT: frozenset({R.DELETION_SUCCESSFUL}),
}

#: target partition state -> valid previous states
PARTITION_TRANSITIONS: Mapping[PartitionState, frozenset[PartitionState]] = {
    P.NEW: frozenset({P.NON_EXISTENT}),
    P.ONLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    P.OFFLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    P.NON_EXISTENT: frozenset({P.OFFLINE}),
}


S = TypeVar("S", ReplicaState, PartitionState)


def check_transition(
    table: Mapping[S, frozenset[S]], subject: object, current: S, target: S
) -> bool:
    """True when ``current -> target`` is in ``table``; otherwise log it and return False."""
    if current in table[target]:
        return True
    log.error(
        "refusing invalid state transition of %s from %s to %s (valid previous states: %s)",
        subject,
        current,
        target,
        ", ".join(sorted(str(s) for s in table[target])),
    )
    return False
