"""ReplicaManager: the partitions this broker hosts, their roles, appends and reads.

The one owner of :class:`~broker.partition.Partition` objects. The controller's requests
change roles (:meth:`~ReplicaManager.become_leader_or_follower`,
:meth:`~ReplicaManager.stop_replicas`, both fenced by the controller epoch); the Kafka
API handlers append (:meth:`~ReplicaManager.append_records`), read
(:meth:`~ReplicaManager.fetch_messages`), delete records and look offsets up through it.
Appends wake the delayed operations watched under the partitions they touched: a
DelayedFetch may now have its ``min_bytes``, a DelayedProduce its high watermark.

The class is assembled here from one module per kind of work, each a base class on the
shared partition table, so that a handler's call reaches its method directly (no
forwarding call on the produce and fetch paths):

================================  ========================================================
``broker.replica_table``          the partition table, the leader lookup, the gauges, the
                                  completion of the operations waiting on a partition
``broker.replica_roles``          LeaderAndIsr, StopReplica, the replica fetchers' set
``broker.replica_append``         Produce appends and the acks=all DelayedProduce
``broker.replica_read``           Fetch (and follower fetch bookkeeping), ListOffsets,
                                  OffsetForLeaderEpoch
``broker.replica_isr``            the periodic ISR shrink and the ISR writes' aftermath
``broker.replica_delete_records``  DeleteRecords and the DelayedDeleteRecords
================================  ========================================================

Results come back through callbacks, as in Kafka, because acks=all produces and long-poll
fetches finish later, in a purgatory; the callback runs synchronously when no waiting is
needed, so a handler can tell the two cases apart and answer at once.

Appends run on the event loop: a write is an ``os.write`` into the page cache, and the
log hands flushes (fsync) to LogManager's worker thread. The controller's requests do
their disk work in a worker thread (``run_blocking``; see ``broker.replica_roles``).

Not safe across tasks beyond the event loop: every method runs on the loop's thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from broker.delayed.delete_records import DelayedDeleteRecords
from broker.delayed.fetch import DelayedFetch
from broker.delayed.produce import DelayedProduce
from broker.isr import IsrWriter
from broker.isr_zk import IsrChangePropagator
from broker.metrics import BrokerMetrics
from broker.partition import Partition
from broker.replica_append import ProduceAppends
from broker.replica_delete_records import RecordDeletion
from broker.replica_read import FetchReads
from broker.replica_roles import LeadershipChange, ReplicaRoleChanges
from broker.replica_table import RunBlocking
from broker.replication import ReplicaFetcherManager
from protocol.values import TopicPartition
from storage import LogManager
from timer import DelayedOperationPurgatory
from timer.clock import Clock, SystemClock
from zk.model import INITIAL_CONTROLLER_EPOCH

T = TypeVar("T")


async def in_thread(fn: Callable[[], T]) -> T:
    return await asyncio.to_thread(fn)


class ReplicaManager(ReplicaRoleChanges, ProduceAppends, FetchReads, RecordDeletion):
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        *,
        produce_purgatory: DelayedOperationPurgatory[DelayedProduce],
        fetch_purgatory: DelayedOperationPurgatory[DelayedFetch],
        metrics: BrokerMetrics | None = None,
        min_insync_replicas: Callable[[str], int] = lambda topic: 1,
        is_known_partition: Callable[[str, int], bool] | None = None,
        run_blocking: RunBlocking = in_thread,
        clock: Clock | None = None,
        isr_writer: IsrWriter | None = None,
        isr_propagator: IsrChangePropagator | None = None,
        replica_lag_time_max_ms: int = 30_000,
        replica_fetchers: ReplicaFetcherManager | None = None,
        leader_endpoint: Callable[[int], tuple[str, int] | None] = lambda broker_id: None,
        delete_records_purgatory: DelayedOperationPurgatory[DelayedDeleteRecords] | None = None,
        is_alive_broker: Callable[[int], bool] = lambda broker_id: True,
    ) -> None:
        """``min_insync_replicas(topic)`` gives the topic's min.insync.replicas;
        ``is_known_partition(topic, p)`` (the metadata cache) tells a partition led
        elsewhere (NOT_LEADER_OR_FOLLOWER) from one that does not exist;
        ``run_blocking`` runs the controller requests' disk work off the loop;
        ``isr_writer`` writes a leader's ISR changes (none: leaders never change their
        ISR) and ``isr_propagator`` queues them for the controller;
        ``replica_fetchers`` copies the leaders' logs into the followers (None: nothing
        is fetched) from ``leader_endpoint(broker_id)``, the inter-broker listener's
        address in the metadata cache. DeleteRecords responses wait in
        ``delete_records_purgatory`` (default: one without a reaper, for tests) for the
        followers on the brokers that are ``is_alive_broker`` (the metadata cache)."""
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.produce_purgatory = produce_purgatory
        self.fetch_purgatory = fetch_purgatory
        self.metrics = metrics
        self.min_insync_replicas = min_insync_replicas
        self._is_known_partition = is_known_partition
        self._run_blocking = run_blocking
        self.clock: Clock = clock or SystemClock()
        self._isr_writer = isr_writer
        self.isr_propagator = isr_propagator
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.replica_fetchers = replica_fetchers
        self._leader_endpoint = leader_endpoint
        self.delete_records_purgatory: DelayedOperationPurgatory[DelayedDeleteRecords] = (
            delete_records_purgatory
            if delete_records_purgatory is not None
            else DelayedOperationPurgatory("DeleteRecords", clock=clock, reaper_enabled=False)
        )
        self.is_alive_broker = is_alive_broker
        self._state_change_lock = asyncio.Lock()
        self._partitions: dict[TopicPartition, Partition] = {}
        self.controller_id = -1
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        self.on_leadership_change: LeadershipChange | None = None
        if metrics is not None:
            metrics.under_replicated_partitions.set_function(self.under_replicated_count)
            metrics.under_min_isr_partitions.set_function(self.under_min_isr_count)
            metrics.watch_follower_lags(self.follower_lags)

    async def shutdown(self) -> None:
        """Stop the replica fetchers (before the logs they append to close), then the
        purgatories (waiting operations are dropped with the connections)."""
        if self.replica_fetchers is not None:
            await self.replica_fetchers.shutdown()
        await self.produce_purgatory.shutdown()
        await self.fetch_purgatory.shutdown()
        await self.delete_records_purgatory.shutdown()
