"""A follower partition's fetch state (Kafka's PartitionFetchState), as a table.

Each partition a fetcher serves is in one of three states::

    TRUNCATING --truncated--> FETCHING --fetched--> FETCHING
        |  ^ (another round: not yet agreed)    |
        |  '------------------'                  |
        '------------ fenced ---> PAUSED <-- fenced

- TRUNCATING: the partition just got a (new) leader or epoch; before it fetches, it
  finds where its log and the leader's agree (OffsetForLeaderEpoch, see
  :mod:`broker.replication.truncation`) and cuts what follows;
- FETCHING: it fetches from its log end;
- PAUSED: the leader fenced the follower's epoch (FENCED_LEADER_EPOCH: the follower's
  epoch is older than the leader's) or its log failed: it waits for the controller's
  next LeaderAndIsr, which adds the partition again in TRUNCATING.

Errors that may go away by themselves (connection lost, NOT_LEADER_OR_FOLLOWER or
UNKNOWN_LEADER_EPOCH while the leader has not yet applied its own LeaderAndIsr, storage
or record errors of one fetch) keep the state and delay the partition by
``replica.fetch.backoff.ms``: the delay is a deadline beside the state, not a state,
as in Kafka. A partition is ready when it is not paused and its deadline has passed.

Pure: the fetcher owns one :class:`PartitionFetchState` per partition and replaces it by
the result of :func:`transition`.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass


class FetchState(enum.Enum):
    TRUNCATING = "Truncating"
    FETCHING = "Fetching"
    PAUSED = "Paused"


class FetchEvent(enum.Enum):
    #: the follower's log agrees with the leader's: fetch from its end
    TRUNCATED = "truncated"
    #: one OffsetForLeaderEpoch round cut the log, another is needed (KIP-279)
    TRUNCATION_INCOMPLETE = "truncation incomplete"
    #: a fetch answered without error (records appended, or none yet)
    FETCHED = "fetched"
    #: the fetch offset was out of the leader's range and the log was moved into it
    OUT_OF_RANGE_RESOLVED = "out of range resolved"
    #: an error that may clear by itself: try again after the backoff
    RETRIABLE_ERROR = "retriable error"
    #: the leader fenced our epoch, or the local log failed: wait for LeaderAndIsr
    FENCED = "fenced"


#: (state, event) -> next state; a pair missing here is a bug in the fetcher.
TRANSITIONS: dict[tuple[FetchState, FetchEvent], FetchState] = {
    (FetchState.TRUNCATING, FetchEvent.TRUNCATED): FetchState.FETCHING,
    (FetchState.TRUNCATING, FetchEvent.TRUNCATION_INCOMPLETE): FetchState.TRUNCATING,
    (FetchState.TRUNCATING, FetchEvent.RETRIABLE_ERROR): FetchState.TRUNCATING,
    (FetchState.TRUNCATING, FetchEvent.FENCED): FetchState.PAUSED,
    (FetchState.FETCHING, FetchEvent.FETCHED): FetchState.FETCHING,
    (FetchState.FETCHING, FetchEvent.OUT_OF_RANGE_RESOLVED): FetchState.FETCHING,
    (FetchState.FETCHING, FetchEvent.RETRIABLE_ERROR): FetchState.FETCHING,
    (FetchState.FETCHING, FetchEvent.FENCED): FetchState.PAUSED,
}

#: Events after which the partition waits ``replica.fetch.backoff.ms``.
DELAYING_EVENTS = frozenset({FetchEvent.RETRIABLE_ERROR})


class IllegalFetchTransition(Exception):
    """An event that cannot happen in the partition's state."""


@dataclass(frozen=True, slots=True)
class PartitionFetchState:
    """One partition of a fetcher: whom it follows at which epoch, its state, and until
    when it waits (monotonic ms; 0: not delayed)."""

    leader_id: int
    leader_epoch: int
    state: FetchState = FetchState.TRUNCATING
    delayed_until_ms: int = 0

    def is_ready(self, now_ms: int) -> bool:
        return self.state is not FetchState.PAUSED and now_ms >= self.delayed_until_ms

    @property
    def is_truncating(self) -> bool:
        return self.state is FetchState.TRUNCATING

    @property
    def is_fetching(self) -> bool:
        return self.state is FetchState.FETCHING


def initial_state(leader_id: int, leader_epoch: int) -> PartitionFetchState:
    """A partition that became follower (or got a new leader epoch): truncate first."""
    return PartitionFetchState(leader_id, leader_epoch, FetchState.TRUNCATING, 0)


def transition(
    current: PartitionFetchState, event: FetchEvent, *, now_ms: int, backoff_ms: int
) -> PartitionFetchState:
    """The state after ``event``; raises IllegalFetchTransition for a pair the table
    does not have. An event that changes nothing (``fetched`` while fetching, every
    successful fetch) returns ``current`` itself: states are immutable values, and this
    runs once per partition per fetch."""
    try:
        state = TRANSITIONS[(current.state, event)]
    except KeyError:
        raise IllegalFetchTransition(f"{event.value} in state {current.state.value}") from None
    delayed_until = now_ms + backoff_ms if event in DELAYING_EVENTS else 0
    if state is current.state and delayed_until == current.delayed_until_ms:
        return current
    return dataclasses.replace(current, state=state, delayed_until_ms=delayed_until)
