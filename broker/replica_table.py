"""ReplicaTable: the ReplicaManager's partition table and what every side of it shares.

:class:`~broker.replica_manager.ReplicaManager` is assembled from this base and one
class per kind of request (role changes, produce appends, fetch reads, ISR upkeep,
DeleteRecords). This base declares the fields the manager's constructor sets that more
than one side reads, and holds the helpers they all call: the lookup of a partition led
here (:meth:`ReplicaTable._leader_or_error`, with Kafka's answer for one that is not),
and the completion of every delayed operation watched under a partition
(:meth:`ReplicaTable._complete_delayed`; :meth:`ReplicaTable._wake_fetches` for the
fetches alone, which also marks the partition in the follower fetch sessions holding it).
The gauges over the table (under-replicated, under min ISR, follower lags, offline
replicas) read it here too.

The table maps each hosted partition to its one :class:`~broker.partition.Partition`;
only LeaderAndIsr adds entries and only StopReplica with deletion removes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from broker.blocking import RunBlocking
from broker.delayed.delete_records import DelayedDeleteRecords
from broker.delayed.fetch import DelayedFetch
from broker.delayed.produce import DelayedProduce
from broker.fetch_session_news import NewsIndex, SessionKey
from broker.metrics import BrokerMetrics
from broker.partition import Partition, PartitionError
from broker.replication.throttle import ReplicationThrottle
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from storage import LogManager
from timer import DelayedOperationPurgatory
from timer.clock import Clock

T = TypeVar("T")


class ReplicaTable:
    """The partition table and the fields every side of the ReplicaManager reads (the
    manager's constructor sets them)."""

    broker_id: int
    log_manager: LogManager
    produce_purgatory: DelayedOperationPurgatory[DelayedProduce]
    fetch_purgatory: DelayedOperationPurgatory[DelayedFetch]
    delete_records_purgatory: DelayedOperationPurgatory[DelayedDeleteRecords]
    metrics: BrokerMetrics | None
    leader_throttle: ReplicationThrottle
    min_insync_replicas: Callable[[str], int]
    _is_known_partition: Callable[[str, int], bool] | None
    _run_blocking: RunBlocking
    clock: Clock
    is_alive_broker: Callable[[int], bool]
    _partitions: dict[TopicPartition, Partition]
    #: the follower fetch sessions' partitions, marked on every change (see _wake_fetches)
    fetch_news: NewsIndex

    def get_partition(self, topic: str, partition: int) -> Partition | None:
        return self._partitions.get(TopicPartition(topic, partition))

    def partition_for(self, tp: TopicPartition) -> Partition | None:
        return self._partitions.get(tp)

    def all_partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self._partitions.values() if p.is_leader]

    def under_replicated_count(self) -> int:
        return sum(1 for p in self._partitions.values() if p.is_under_replicated)

    def under_min_isr_count(self) -> int:
        """Led partitions whose ISR is below min.insync.replicas (acks=all is refused)."""
        return sum(
            1
            for p in self._partitions.values()
            if p.is_leader and p.is_under_min_isr(self.min_insync_replicas(p.tp.topic))
        )

    def follower_lags(self) -> dict[int, list[int]]:
        """Per follower broker, its lag (offsets behind the leader's log end) in each
        partition led here."""
        lags: dict[int, list[int]] = {}
        for partition in self._partitions.values():
            for follower, lag in partition.follower_lags().items():
                lags.setdefault(follower, []).append(lag)
        return lags

    def offline_replica_count(self) -> int:
        return sum(1 for p in self._partitions.values() if p.is_offline)

    def _leader_or_error(self, tp: TopicPartition) -> Partition:
        """The partition if hosted here; otherwise why not, as Kafka answers it."""
        partition = self._partitions.get(tp)
        if partition is not None:
            return partition
        if self._is_known_partition is not None and self._is_known_partition(*tp):
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{tp} is not hosted here")
        raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} does not exist")

    def _wake_fetches(self, tp: TopicPartition) -> None:
        """Something a read of ``tp`` reports changed: check the fetches waiting on it,
        and mark it in the follower fetch sessions holding it, waking their waiting
        fetches (``broker.fetch_session_news``)."""
        purgatory = self.fetch_purgatory
        purgatory.check_and_complete(tp)
        for key in self.fetch_news.changed(tp):
            purgatory.check_and_complete(key)

    def _wake_fetches_of(self, tps: list[TopicPartition]) -> None:
        """:meth:`_wake_fetches` for several partitions: every one is marked before any
        waiting fetch is checked, so each wakes once and reads them all."""
        purgatory = self.fetch_purgatory
        news = self.fetch_news
        sessions: dict[SessionKey, None] = {}
        for tp in tps:
            for key in news.changed(tp):
                sessions[key] = None
        for tp in tps:
            purgatory.check_and_complete(tp)
        for session in sessions:
            purgatory.check_and_complete(session)

    def _complete_delayed(self, tp: TopicPartition) -> None:
        self._wake_fetches(tp)
        self.produce_purgatory.check_and_complete(tp)
        self.delete_records_purgatory.check_and_complete(tp)
