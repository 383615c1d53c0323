"""The leader's side of the ISR: its followers' fetches, the ISR's growth and shrinkage.

As leader, the partition tracks its followers from their fetches (``broker.isr`` has
the rules): each follower fetch records the follower's log end offset and when it was
last caught up (:meth:`LeaderIsr.update_follower_fetch_state`), after which the high
watermark may move (:meth:`PartitionCore.maybe_increment_high_watermark`). The leader
changes the ISR itself -- a follower that caught up joins
(:meth:`LeaderIsr.maybe_expand_isr`), one that lagged more than
replica.lag.time.max.ms leaves (:meth:`LeaderIsr.maybe_shrink_isr`) -- by writing the
partition state znode through an :class:`~broker.isr.IsrWriter`, conditionally on the
zkVersion it holds (the partition epoch), one write in flight at a time. A write that
succeeds commits the new ISR and its zkVersion; one refused because the controller
changed the znode leaves the ISR as it was, since a LeaderAndIsr carrying the
controller's state follows.

Every follower fetch runs :meth:`LeaderIsr.update_follower_fetch_state` and
:meth:`LeaderIsr.maybe_expand_isr`; the latter answers an ISR member (the usual case)
before anything else. Event-loop only (an IsrWriter calls back on the loop too).
"""

from __future__ import annotations

import logging

from broker import isr as isr_rules
from broker.isr import (
    FetchClock,
    FollowerState,
    IsrState,
    IsrWriteOutcome,
    IsrWriteResult,
    PendingIsrChange,
)
from broker.partition_core import PartitionCore, PartitionError
from protocol.errors import ErrorCode
from zk.model import LeaderAndIsr

log = logging.getLogger(__name__)


class LeaderIsr(PartitionCore):
    """The leader's follower states and ISR writes (see the module docstring)."""

    def check_follower(self, replica_id: int) -> None:
        """A follower fetch must come from an assigned replica (Kafka's
        followerReplicaOrThrow): NOT_LEADER_OR_FOLLOWER otherwise."""
        if replica_id not in self.followers:
            raise PartitionError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"{self.tp}: broker {replica_id} is not a follower of this leader "
                f"(replicas {list(self.replicas)})",
            )

    def update_follower_fetch_state(
        self,
        replica_id: int,
        *,
        fetch_offset: int,
        follower_log_start_offset: int,
        leader_end_offset: int,
        now_ms: int,
    ) -> FollowerState:
        """Record a follower's fetch at ``fetch_offset``, read when the leader's log end
        offset was ``leader_end_offset`` (the caller read it successfully first). The
        caller then asks :meth:`maybe_expand_isr` and :meth:`maybe_increment_high_watermark`.
        Returns what the leader knew of the follower before this fetch."""
        self.check_follower(replica_id)
        before = self.followers[replica_id]
        self.followers[replica_id] = isr_rules.after_fetch(
            before,
            fetch_offset=fetch_offset,
            follower_log_start_offset=follower_log_start_offset,
            leader_end_offset=leader_end_offset,
            now_ms=now_ms,
        )
        return before

    def maybe_expand_isr(self, replica_id: int) -> bool:
        """Add ``replica_id`` to the ISR when it caught up (``broker.isr.may_join_isr``)
        and no other ISR write is in flight. True when the write was submitted."""
        if replica_id in self._isr_state.isr:  # the usual case, first: nothing to do
            return False
        state = self.followers.get(replica_id)
        if (
            state is None
            or not self.is_leader
            or self._isr_state.in_flight
            or not isr_rules.may_join_isr(
                state.log_end_offset, self.high_watermark, self.leader_epoch_start_offset
            )
        ):
            return False
        return self._submit_isr(self._isr_state.expand(replica_id))

    def link_follower(self, replica_id: int, clock: FetchClock) -> bool:
        """As leader, link ``replica_id``'s state to its fetch session's ``clock`` when the
        follower is at the log end and in the ISR (``broker.isr`` explains links); True
        when linked. A state linked to another clock is unlinked first."""
        lg = self.log
        if lg is None or self.leader_id != self.local_broker_id:
            return False
        state = self.followers.get(replica_id)
        if (
            state is None
            or state.log_end_offset != lg.log_end_offset
            or replica_id not in self._isr_state.isr
        ):
            return False
        if state.clock is not clock:
            if state.clock is not None:
                state = state.unlinked()
                self.followers[replica_id] = state
            state.clock = clock
        return True

    def unlink_follower(self, replica_id: int) -> None:
        """Stop counting a fetch session's fetches for ``replica_id``."""
        state = self.followers.get(replica_id)
        if state is not None and state.clock is not None:
            self.followers[replica_id] = state.unlinked()

    def maybe_shrink_isr(self, now_ms: int, max_lag_ms: int) -> bool:
        """Remove the ISR followers not caught up within ``max_lag_ms`` (the periodic
        ISR expiration). True when the write was submitted."""
        lg = self.log
        if lg is None or not self.is_leader or self._isr_state.in_flight:
            return False
        out = isr_rules.out_of_sync_replicas(
            self.isr, self.local_broker_id, self.followers, lg.log_end_offset, now_ms, max_lag_ms
        )
        if not out:
            return False
        for replica in out:
            state = self.followers.get(replica)
            log.info(
                "%s: shrinking the ISR: follower %d caught up at %s (log end %s, leader's %d)",
                self.tp,
                replica,
                state.effective()[1] if state else "never",
                state.log_end_offset if state else "unknown",
                lg.log_end_offset,
            )
        return self._submit_isr(self._isr_state.shrink(out))

    def follower_lags(self) -> dict[int, int]:
        """As leader: per follower, how many offsets it is behind the leader's log end
        (a follower that has not fetched since this leadership began lags by the whole
        log)."""
        lg = self.log
        if lg is None or not self.is_leader:
            return {}
        leo, start = lg.log_end_offset, lg.log_start_offset
        return {
            replica: leo - (state.log_end_offset if state.log_end_offset >= 0 else start)
            for replica, state in self.followers.items()
        }

    def _submit_isr(self, proposed: IsrState) -> bool:
        """Make ``proposed`` (a pending change) current and write it."""
        writer, pending = self._isr_writer, proposed.pending
        if writer is None or pending is None:
            return False
        self._isr_state = proposed
        state = LeaderAndIsr(
            self.local_broker_id, self.leader_epoch, pending.proposed, self.partition_epoch
        )

        def done(result: IsrWriteResult) -> None:
            self._isr_written(pending, result)

        writer.submit(self.tp, state, self.controller_epoch, done)
        return True

    def _isr_written(self, pending: PendingIsrChange, result: IsrWriteResult) -> None:
        """The write of ``pending`` ended (on the loop). It is applied only while it is
        still the change in flight: a LeaderAndIsr since then set the state itself."""
        current = self._isr_state.pending is pending
        if result.outcome is IsrWriteOutcome.WRITTEN:
            if current:
                log.info(
                    "%s: ISR %s -> %s (partition epoch %d)",
                    self.tp,
                    list(self.isr),
                    list(pending.proposed),
                    result.zk_version,
                )
                self._isr_state = IsrState(pending.proposed)
                self.partition_epoch = result.zk_version
                self.maybe_increment_high_watermark()
            if self._on_isr_change is not None:  # ZooKeeper changed either way
                self._on_isr_change(self, pending.kind)
            return
        if not current:
            return
        self._isr_state = IsrState(self.isr)
        if result.outcome is IsrWriteOutcome.CONFLICT:
            log.info(
                "%s: ISR change to %s not written: the partition state is no longer at "
                "zkVersion %d (the controller's LeaderAndIsr will follow)",
                self.tp,
                list(pending.proposed),
                self.partition_epoch,
            )
        else:
            log.warning("%s: ISR change to %s failed; will retry", self.tp, list(pending.proposed))
