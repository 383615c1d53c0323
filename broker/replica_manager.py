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
``broker.replica_deletion``  DeleteRecords and the DelayedDeleteRecords
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
from dataclasses import dataclass
from typing import TypeVar

from broker.blocking import RunBlocking
from broker.delayed.delete_records import DelayedDeleteRecords
from broker.delayed.fetch import DelayedFetch
from broker.delayed.produce import DelayedProduce
from broker.fetch_session_news import NewsIndex
from broker.isr import IsrWriter
from broker.isr_zk import IsrChangePropagator
from broker.metrics import BrokerMetrics
from broker.partition import Partition
from broker.replica_append import ProduceAppends
from broker.replica_deletion import RecordDeletion
from broker.replica_read import FetchReads
from broker.replica_roles import LeadershipChange, ReplicaRoleChanges
from broker.replication import ReplicaFetcherManager
from broker.replication.throttle import ReplicationThrottle
from protocol.values import TopicPartition
from storage import LogManager
from timer import DelayedOperationPurgatory
from timer.clock import Clock
from zk.model import INITIAL_CONTROLLER_EPOCH

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ReplicaManagerServices:
    """The broker services a ReplicaManager works with, each built once by the assembly.

    ``run_blocking`` runs the controller requests' disk work off the loop;
    ``isr_writer`` writes a leader's ISR changes to ZooKeeper (None: leaders never
    change their ISR) and ``isr_propagator`` queues them for the controller (None: not
    propagated); ``replica_fetchers`` copies the leaders' logs into the followers (None:
    nothing is fetched). DeleteRecords responses wait in ``delete_records_purgatory``.
    ``leader_throttle`` is the replication throttle of this broker's leader side."""

    log_manager: LogManager
    produce_purgatory: DelayedOperationPurgatory[DelayedProduce]
    fetch_purgatory: DelayedOperationPurgatory[DelayedFetch]
    delete_records_purgatory: DelayedOperationPurgatory[DelayedDeleteRecords]
    metrics: BrokerMetrics
    clock: Clock
    run_blocking: RunBlocking
    isr_writer: IsrWriter | None
    isr_propagator: IsrChangePropagator | None
    replica_fetchers: ReplicaFetcherManager | None
    leader_throttle: ReplicationThrottle


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What a ReplicaManager reads of the rest of the cluster (the metadata cache and the
    topics' configuration, in a broker). ``min_insync_replicas(topic)``: the topic's
    min.insync.replicas; ``is_known_partition(topic, p)`` tells a partition led elsewhere
    (NOT_LEADER_OR_FOLLOWER) from one that does not exist; ``is_alive_broker(id)``:
    whether a follower's broker is live (DeleteRecords waits for those only);
    ``leader_endpoint(id)``: a leader's inter-broker address, for the fetchers."""

    min_insync_replicas: Callable[[str], int]
    is_known_partition: Callable[[str, int], bool]
    is_alive_broker: Callable[[int], bool]
    leader_endpoint: Callable[[int], tuple[str, int] | None]


class ReplicaManager(ReplicaRoleChanges, ProduceAppends, FetchReads, RecordDeletion):
    def __init__(
        self,
        broker_id: int,
        services: ReplicaManagerServices,
        cluster: ClusterView,
        *,
        replica_lag_time_max_ms: int,
    ) -> None:
        """Broker ``broker_id``'s replicas over ``services``, reading ``cluster``; a
        follower that has not caught up for ``replica_lag_time_max_ms`` leaves the ISR.
        Every argument is required: tests build theirs with the factory under tests/."""
        self.broker_id = broker_id
        self.log_manager = services.log_manager
        self.produce_purgatory = services.produce_purgatory
        self.fetch_purgatory = services.fetch_purgatory
        self.metrics = services.metrics
        self.leader_throttle = services.leader_throttle
        self.min_insync_replicas = cluster.min_insync_replicas
        self._is_known_partition = cluster.is_known_partition
        self._run_blocking = services.run_blocking
        #: the same runner, for handlers' CPU work off the loop (Fetch's down-conversion)
        self.run_blocking: RunBlocking = services.run_blocking
        self.clock: Clock = services.clock
        self._isr_writer = services.isr_writer
        self.isr_propagator = services.isr_propagator
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.replica_fetchers = services.replica_fetchers
        self._leader_endpoint = cluster.leader_endpoint
        self.delete_records_purgatory: DelayedOperationPurgatory[DelayedDeleteRecords] = (
            services.delete_records_purgatory
        )
        self.is_alive_broker = cluster.is_alive_broker
        self._state_change_lock = asyncio.Lock()
        self._partitions: dict[TopicPartition, Partition] = {}
        self.fetch_news = NewsIndex()
        self.controller_id = -1
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        #: told of every leadership change; set once by the assembly (the group store,
        #: which is built over this manager: the one back-reference between the two)
        self.on_leadership_change: LeadershipChange | None = None
        metrics = self.metrics
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
