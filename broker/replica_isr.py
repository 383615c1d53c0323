"""ISR upkeep on the leader side: the periodic shrink and what follows an ISR write.

The ``isr-expiration`` task (:meth:`IsrUpkeep.maybe_shrink_isr`, every
replica.lag.time.max.ms / 2) asks every led partition to drop the followers that
lagged more than replica.lag.time.max.ms from its ISR; a follower's fetch may add it
back (the fetch side records it, ``broker.replica_read``). Each ISR change a leader
wrote to ZooKeeper comes back here (:meth:`IsrUpkeep._isr_changed`): it is counted,
queued for the controller's ISR change notification
(``broker.isr_zk.IsrChangePropagator``), and wakes the operations waiting on the
partition, since the high watermark may have moved or the ISR fallen below
min.insync.replicas.
"""

from __future__ import annotations

from broker.isr import IsrChange
from broker.isr_zk import IsrChangePropagator
from broker.partition_core import PartitionCore
from broker.replica_table import ReplicaTable


class IsrUpkeep(ReplicaTable):
    """The leader's ISR maintenance across the partitions led here."""

    isr_propagator: IsrChangePropagator | None
    replica_lag_time_max_ms: int

    def maybe_shrink_isr(self) -> None:
        """The isr-expiration task: every led partition drops the followers that lagged
        more than replica.lag.time.max.ms from its ISR (the writes finish later)."""
        now_ms = self.clock.monotonic_ms()
        for partition in self._partitions.values():
            partition.maybe_shrink_isr(now_ms, self.replica_lag_time_max_ms)

    def _isr_changed(self, partition: PartitionCore, change: IsrChange) -> None:
        """A leader wrote a new ISR to ZooKeeper: count it, queue it for the controller,
        and wake what waits on the partition (the high watermark may have moved, or the
        ISR fallen below min.insync.replicas)."""
        if self.metrics is not None:
            counter = (
                self.metrics.isr_expands if change is IsrChange.EXPAND else self.metrics.isr_shrinks
            )
            counter.inc()
        if self.isr_propagator is not None:
            self.isr_propagator.record(partition.tp)
        self._complete_delayed(partition.tp)
