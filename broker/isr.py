"""The leader's view of its followers, and the rules built on it: the high watermark and
the in-sync replica set (ISR). Pure values and functions; Partition applies them.

Follower state (Kafka's ReplicaState). The leader learns where a follower is only from
its Fetch requests: a fetch at ``fetch_offset`` says the follower holds everything below
it, so that is the follower's log end offset (LEO). Each fetch also records:

- ``last_fetch_leader_end_offset``: the leader's LEO when the fetch was read;
- ``last_caught_up_ms``: the last time the follower was known to be caught up. A fetch
  at time T that asks for an offset >= the leader's LEO at this read caught up at T; one
  that only reaches the leader's LEO as of the *previous* fetch caught up at the time of
  that previous fetch (it holds what the leader had then). A follower that keeps fetching
  while the leader keeps appending is therefore caught up as of its previous fetch,
  never falling behind while it keeps pace.

A follower in an incremental fetch session is not read on the rounds where nothing of a
partition changed (``broker.fetch_session``): the leader would learn only that it is still
at the log end. Instead the state is *linked* to the session's :class:`FetchClock`, which
holds when the session last fetched: while linked, the follower counts as having fetched at
the log end (its ``log_end_offset``, which is then the leader's) at every fetch of the
session, so its last fetch and last caught-up times are the clock's
(:meth:`FollowerState.effective`). A link is made only while the follower is at the
leader's log end, and any change of the partition (an append, a high watermark or role
change) makes the session read it at its next fetch, which applies the fetch to the
linked times before the clock moves on; a session that stops fetching stops its clock, so
its followers fall behind as they would unread.

A new leader knows nothing of its followers: their LEO is unknown (``UNKNOWN_OFFSET``,
which holds the high watermark where it is) and the ISR members count as caught up at the
moment of the election, so none of them leaves the ISR before it had the chance to fetch.
Times are the broker's monotonic clock in milliseconds (a wall-clock step must not expel
followers).

The ISR as the leader holds it (:class:`IsrState`): the committed ISR (the one written in
ZooKeeper) and at most one change whose write is in flight. The *maximal ISR* is the ISR
the high watermark must respect while that write is pending: an expansion counts at once
(the new member must hold the high watermark before the write can succeed), a shrink
counts only once its write succeeded (the leader must not advance past a replica that may
still be in the ISR, as seen by the controller electing a new leader).

- High watermark: the smallest LEO over the maximal ISR, the leader's own included;
  never lower than the current one (it never moves back) and never above the leader's LEO.
- Expansion: a follower outside the ISR joins once its LEO reaches the high watermark and
  the first offset of the current leader epoch (it then holds every record this leader
  acknowledged, and has truncated whatever an earlier leader left that this one lacks).
- Shrink: an ISR follower whose last caught-up time is more than replica.lag.time.max.ms
  ago leaves it, unless its LEO equals the leader's (an idle partition has no lag). The
  leader never removes itself.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from protocol.values import TopicPartition
from zk.model import LeaderAndIsr

#: A follower offset the leader has not learnt yet (no fetch since it became leader).
UNKNOWN_OFFSET = -1


@dataclass(slots=True)
class FetchClock:
    """When an incremental fetch session of a follower last fetched (monotonic ms)."""

    last_fetch_ms: int = 0


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower (a remote replica), from its fetches.

    (Not frozen, though its offsets and times never change after it is made: a frozen
    dataclass takes several times as long to construct, and one is made per partition of
    every fetch. ``clock`` is set when the state is linked to a fetch session, see the
    module doc.)
    """

    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_fetch_leader_end_offset: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0
    last_caught_up_ms: int = 0
    #: the fetch session whose every fetch counts as a fetch at ``log_end_offset``
    clock: FetchClock | None = None

    def effective(self) -> tuple[int, int]:
        """(last fetch, last caught up) in ms, a linked session's fetches included."""
        clock = self.clock
        if clock is None:
            return self.last_fetch_ms, self.last_caught_up_ms
        t = clock.last_fetch_ms
        return max(self.last_fetch_ms, t), max(self.last_caught_up_ms, t)

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        """In sync by time (Kafka's isCaughtUp): at the leader's LEO, or caught up
        within the last ``max_lag_ms``."""
        return (
            self.log_end_offset == leader_end_offset or now_ms - self.effective()[1] <= max_lag_ms
        )

    def unlinked(self) -> FollowerState:
        """The same state with a link's times made its own (the session stops counting)."""
        if self.clock is None:
            return self
        last_fetch, caught_up = self.effective()
        return replace(self, last_fetch_ms=last_fetch, last_caught_up_ms=caught_up, clock=None)


def after_fetch(
    state: FollowerState,
    *,
    fetch_offset: int,
    follower_log_start_offset: int,
    leader_end_offset: int,
    now_ms: int,
) -> FollowerState:
    """The follower's state after a fetch at ``fetch_offset`` read at ``now_ms``, when the
    leader's LEO was ``leader_end_offset`` (the caught-up rule of the module doc). A
    linked state's session fetches count first; the new state is not linked."""
    if state.clock is None:
        last_fetch, last_caught_up = state.last_fetch_ms, state.last_caught_up_ms
    else:
        last_fetch, last_caught_up = state.effective()
    if fetch_offset >= leader_end_offset:
        caught_up = max(last_caught_up, now_ms)
    elif fetch_offset >= state.last_fetch_leader_end_offset >= 0:
        caught_up = max(last_caught_up, last_fetch)
    else:
        caught_up = last_caught_up
    return FollowerState(
        log_end_offset=fetch_offset,
        log_start_offset=follower_log_start_offset,
        last_fetch_leader_end_offset=leader_end_offset,
        last_fetch_ms=now_ms,
        last_caught_up_ms=caught_up,
    )


def reset_for_leadership(
    state: FollowerState | None, *, new_leader: bool, in_isr: bool, now_ms: int
) -> FollowerState:
    """A follower's state when this broker starts a leader epoch (Kafka's
    resetReplicaState). A new leader forgets what an earlier term of leadership learnt;
    a leader that continues into a new epoch keeps the follower's offsets. Either way the
    fetch history restarts, and ISR members count as caught up now."""
    caught_up = now_ms if in_isr else 0
    if new_leader or state is None:
        return FollowerState(last_caught_up_ms=caught_up)
    return replace(
        state,
        last_fetch_leader_end_offset=UNKNOWN_OFFSET,
        last_fetch_ms=0,
        last_caught_up_ms=caught_up,
        clock=None,
    )


def high_watermark(
    current: int, leader_end_offset: int, maximal_isr_end_offsets: Iterable[int]
) -> int:
    """The high watermark over the maximal ISR: the smallest LEO of its members (the
    leader's is ``leader_end_offset``), but never below ``current`` (a follower whose LEO
    is unknown holds it there) nor above the leader's LEO."""
    candidate = min([leader_end_offset, *maximal_isr_end_offsets])
    return candidate if candidate > current else current


def may_join_isr(follower_end_offset: int, high_watermark: int, epoch_start_offset: int) -> bool:
    """Whether a follower outside the ISR is in sync enough to join it."""
    return follower_end_offset >= high_watermark and follower_end_offset >= epoch_start_offset


def out_of_sync_replicas(
    isr: Iterable[int],
    leader_id: int,
    followers: Mapping[int, FollowerState],
    leader_end_offset: int,
    now_ms: int,
    max_lag_ms: int,
) -> tuple[int, ...]:
    """The ISR members the leader should remove: followers not caught up within
    ``max_lag_ms`` (an ISR member the leader tracks no state for is not a replica any
    more and is out of sync too). Never the leader itself."""
    out = []
    for replica in isr:
        if replica == leader_id:
            continue
        state = followers.get(replica)
        if state is None or not state.is_caught_up(leader_end_offset, now_ms, max_lag_ms):
            out.append(replica)
    return tuple(out)


class IsrChange(enum.Enum):
    EXPAND = "expand"
    SHRINK = "shrink"


@dataclass(frozen=True, slots=True)
class PendingIsrChange:
    """An ISR change whose ZooKeeper write is in flight: the ISR proposed."""

    kind: IsrChange
    proposed: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class IsrState:
    """The committed ISR and at most one pending change (one write in flight)."""

    isr: tuple[int, ...] = ()
    pending: PendingIsrChange | None = None

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR the high watermark respects: an expansion counts while pending, a
        shrink only once committed."""
        if self.pending is not None and self.pending.kind is IsrChange.EXPAND:
            return self.pending.proposed
        return self.isr

    @property
    def in_flight(self) -> bool:
        return self.pending is not None

    def expand(self, replica: int) -> IsrState:
        proposed = (*self.isr, replica)
        return IsrState(self.isr, PendingIsrChange(IsrChange.EXPAND, proposed))

    def shrink(self, removed: Iterable[int]) -> IsrState:
        gone = set(removed)
        proposed = tuple(r for r in self.isr if r not in gone)
        return IsrState(self.isr, PendingIsrChange(IsrChange.SHRINK, proposed))


class IsrWriteOutcome(enum.Enum):
    """How a leader's write of its ISR to the partition state znode ended."""

    WRITTEN = "written"
    #: the znode is not at the zkVersion the leader holds: the controller changed it, and
    #: a LeaderAndIsr with the new state follows. The leader keeps its committed ISR.
    CONFLICT = "conflict"
    #: ZooKeeper could not be asked (connection loss, session expiry): retry later.
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class IsrWriteResult:
    outcome: IsrWriteOutcome
    #: the znode's new zkVersion (the new partition epoch) when WRITTEN
    zk_version: int = -1


class IsrWriter(Protocol):
    """Writes a leader's new ISR to the partition state znode, conditionally on the
    zkVersion in ``state``, off the event loop; ``on_done`` is called on the loop."""

    def submit(
        self,
        tp: TopicPartition,
        state: LeaderAndIsr,
        controller_epoch: int,
        on_done: Callable[[IsrWriteResult], None],
    ) -> None: ...
