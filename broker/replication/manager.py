"""ReplicaFetcherManager: which fetcher copies which follower partition.

Kafka's ReplicaFetcherManager (AbstractFetcherManager). For every source broker there
are up to ``num.replica.fetchers`` fetchers (:class:`~broker.replication.fetcher.
ReplicaFetcher`), keyed by ``(leader broker id, fetcher id)``; a partition goes to
fetcher :func:`fetcher_id_for` of its leader, a stable hash, so that the partitions of
one leader are spread over its fetchers and each fetcher sends one Fetch for all of its
partitions. A fetcher starts with its first partition and stops with its last.

The ReplicaManager drives it from LeaderAndIsr and StopReplica, on the event loop: a
partition that became follower (every applied follower state has a new leader epoch) is
added in TRUNCATING with its leader's endpoint and epoch; one that became leader, or
was stopped or deleted, is removed first. A leader whose endpoint changed (a restart on
another port) gets a new fetcher, which takes the old one's partitions as they were.

The leader's endpoint is its inter-broker listener, from the metadata cache (the
controller publishes every live broker's listeners there), else the host and port that
LeaderAndIsr lists for the leader (:func:`resolve_leader_endpoint`).

``resize(n)`` applies a dynamic ``num.replica.fetchers``: every partition is taken from
its fetcher with its fetch state (offset, epoch, truncation progress) and handed to the
fetcher the new count gives it, as Kafka's resize does; the old fetchers stop (a fetch in
flight is dropped, its bytes fetched again by the new fetcher from the same offset).

``max_lag`` is Kafka's ReplicaFetcherManager MaxLag: the largest distance, over every
fetched partition, between the leader's high watermark as last seen and our log end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping

from broker.partition import Partition
from broker.replication.fetch_state import PartitionFetchState
from broker.replication.fetcher import (
    Connect,
    FetcherConfig,
    LeaderEndpoint,
    ReplicaFetcher,
    open_connection,
)
from broker.replication.throttle import ReplicationThrottle
from protocol.values import TopicPartition
from timer.clock import Clock

log = logging.getLogger(__name__)

#: (source broker id, fetcher id)
FetcherKey = tuple[int, int]


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (31-based, int32 wraparound) over UTF-16 code units."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def fetcher_id_for(tp: TopicPartition, num_fetchers: int) -> int:
    """The fetcher of a partition among ``num_fetchers``: Kafka's
    ``Utils.abs(31 * topic.hashCode + partition) % numFetchers`` in int32 arithmetic
    (its abs maps the one value without a positive twin, -2**31, to 0), so a partition
    lands on the fetcher index it would in Kafka."""
    value = (31 * java_string_hash(tp.topic) + tp.partition) & 0xFFFFFFFF
    if value >= 1 << 31:
        value -= 1 << 32
    return (0 if value == -(1 << 31) else abs(value)) % max(1, num_fetchers)


def resolve_leader_endpoint(
    leader_id: int,
    live_leaders: Mapping[int, tuple[str, int]],
    cached: Callable[[int], tuple[str, int] | None],
) -> LeaderEndpoint | None:
    """Where to fetch from: the leader's inter-broker listener as the metadata cache has
    it, else the address LeaderAndIsr's live leaders give; None when neither knows
    the leader (it is not alive: the next LeaderAndIsr names another)."""
    address = cached(leader_id) or live_leaders.get(leader_id)
    if address is None:
        return None
    return LeaderEndpoint(leader_id, address[0], address[1])


class ReplicaFetcherManager:
    """Not thread safe: every method runs on the event loop."""

    def __init__(
        self,
        config: FetcherConfig,
        clock: Clock,
        *,
        throttle: ReplicationThrottle,
        connect: Connect = open_connection,
    ) -> None:
        self.config = config
        #: the follower side's replication throttle, shared by every fetcher
        self.throttle = throttle
        self.clock = clock
        self._connect = connect
        self._fetchers: dict[FetcherKey, ReplicaFetcher] = {}
        self._assigned: dict[TopicPartition, FetcherKey] = {}
        self._stopping: set[asyncio.Task[None]] = set()
        self._closed = False

    # -- queries --------------------------------------------------------------------------

    @property
    def fetchers(self) -> dict[FetcherKey, ReplicaFetcher]:
        return dict(self._fetchers)

    def fetcher_of(self, tp: TopicPartition) -> ReplicaFetcher | None:
        key = self._assigned.get(tp)
        return self._fetchers.get(key) if key is not None else None

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        fetcher = self.fetcher_of(tp)
        return fetcher.states().get(tp) if fetcher is not None else None

    def max_lag(self) -> int:
        return max((lag for f in self._fetchers.values() for lag in f.lags.values()), default=0)

    # -- changes --------------------------------------------------------------------------

    def add_partitions(
        self, entries: Mapping[TopicPartition, tuple[Partition, LeaderEndpoint, int]]
    ) -> None:
        """Fetch each ``(partition, leader endpoint, leader epoch)``, starting over in
        TRUNCATING (a partition fetched already moves to its new leader's fetcher)."""
        if self._closed:
            return
        self.remove_partitions(entries)
        grouped: dict[FetcherKey, dict[TopicPartition, tuple[Partition, int]]] = {}
        endpoints: dict[FetcherKey, LeaderEndpoint] = {}
        for tp, (partition, leader, epoch) in entries.items():
            key = (leader.broker_id, fetcher_id_for(tp, self.config.num_fetchers))
            grouped.setdefault(key, {})[tp] = (partition, epoch)
            endpoints[key] = leader
        for key, batch in grouped.items():
            fetcher = self._fetcher(key, endpoints[key])
            fetcher.add_partitions(batch)
            for tp in batch:
                self._assigned[tp] = key
            log.info(
                "%s: added %d partitions: %s",
                fetcher,
                len(batch),
                ", ".join(f"{tp}@{epoch}" for tp, (_, epoch) in sorted(batch.items())),
            )

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """Stop fetching ``tps``; fetchers left without partitions stop."""
        touched: set[FetcherKey] = set()
        for tp in tps:
            key = self._assigned.pop(tp, None)
            if key is not None and (fetcher := self._fetchers.get(key)) is not None:
                fetcher.remove_partitions([tp])
                touched.add(key)
        for key in touched:
            fetcher = self._fetchers[key]
            if fetcher.partition_count == 0:
                del self._fetchers[key]
                self._stop(fetcher)

    def resize(self, num_fetchers: int) -> None:
        """``num_fetchers`` fetchers per source broker from now on; the partitions move
        to their new fetchers with their fetch states."""
        if num_fetchers < 1:
            raise ValueError(f"num.replica.fetchers must be at least 1, got {num_fetchers}")
        if num_fetchers == self.config.num_fetchers:
            return
        log.info(
            "resizing the replica fetchers from %d to %d per source broker",
            self.config.num_fetchers, num_fetchers,
        )  # fmt: skip
        self.config = dataclasses.replace(self.config, num_fetchers=num_fetchers)
        if self._closed:
            return
        moved = []
        for fetcher in self._fetchers.values():
            for tp, (partition, state) in fetcher.remove_partitions(fetcher.states()).items():
                moved.append((fetcher.leader, tp, partition, state))
            self._stop(fetcher)
        self._fetchers.clear()
        self._assigned.clear()
        for leader, tp, partition, state in moved:
            key = (leader.broker_id, fetcher_id_for(tp, num_fetchers))
            self._fetcher(key, leader).adopt(tp, partition, state)
            self._assigned[tp] = key

    def _fetcher(self, key: FetcherKey, leader: LeaderEndpoint) -> ReplicaFetcher:
        """The fetcher for ``key``, made (and started) if missing or if its leader's
        endpoint changed (the old one's partitions move to the new one)."""
        current = self._fetchers.get(key)
        if current is not None and current.leader == leader:
            return current
        fetcher = ReplicaFetcher(
            key[1], leader, self.config, self.clock, throttle=self.throttle, connect=self._connect
        )
        fetcher.start()
        self._fetchers[key] = fetcher
        if current is not None:
            log.info("%s: leader moved to %s:%d", current, leader.host, leader.port)
            for tp, (partition, state) in current.remove_partitions(current.states()).items():
                fetcher.adopt(tp, partition, state)
            self._stop(current)
        return fetcher

    def _stop(self, fetcher: ReplicaFetcher) -> None:
        task = fetcher.stop()
        if task is not None:
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    async def shutdown(self) -> None:
        """Stop every fetcher and wait for their tasks (before the logs close)."""
        self._closed = True
        for fetcher in self._fetchers.values():
            self._stop(fetcher)
        self._fetchers.clear()
        self._assigned.clear()
        if self._stopping:
            await asyncio.gather(*self._stopping, return_exceptions=True)
