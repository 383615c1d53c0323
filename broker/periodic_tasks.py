"""Every periodic task a broker schedules at startup, in one table: storage's housekeeping
(``LogManager.scheduled_tasks``), then the broker's own. The active controller schedules
its leader-imbalance check itself while it is active (``auto.leader.rebalance.enable``).
The assembly schedules the table once everything its tasks call exists.
"""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.group.manager import GroupMetadataManager
from broker.isr_zk import IsrChangePropagator, PropagationTimes
from broker.replica_manager import ReplicaManager
from storage import LogManager, TaskSpec

#: when the isr-change-propagation task writes the queued ISR changes (Kafka's timings)
ISR_PROPAGATION = PropagationTimes()


def periodic_tasks(
    config: BrokerConfig,
    log_manager: LogManager,
    replica_manager: ReplicaManager,
    isr_propagator: IsrChangePropagator,
    group_store: GroupMetadataManager,
) -> list[TaskSpec]:
    c = config
    lag_ms = c.get_int("replica.lag.time.max.ms")
    retention_check_ms = c.get_int("offsets.retention.check.interval.ms")
    propagation_ms = ISR_PROPAGATION.check_interval_ms
    return [
        *log_manager.scheduled_tasks(),
        # replication-offset-checkpoint, read back at startup: a restarted broker's high
        # watermarks are at most one interval old (Kafka starts it at once); followers'
        # too (their high watermarks come from the leader's fetches)
        TaskSpec("highwatermark-checkpoint", log_manager.checkpoint_high_watermarks,
                 0, c.get_int("replica.high.watermark.checkpoint.interval.ms"), True),
        # leaders drop followers that lagged replica.lag.time.max.ms from their ISR
        TaskSpec("isr-expiration", replica_manager.maybe_shrink_isr,
                 lag_ms // 2, lag_ms // 2, False),
        TaskSpec("isr-change-propagation", isr_propagator.maybe_propagate,
                 propagation_ms, propagation_ms, False),
        # committed offsets of empty groups expire (broker.group.expiry)
        TaskSpec("delete-expired-group-metadata", group_store.expire_offsets,
                 retention_check_ms, retention_check_ms, False),
    ]  # fmt: skip
