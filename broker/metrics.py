"""Per-broker Prometheus metrics and their HTTP exposition endpoint.

Every broker owns a ``BrokerMetrics`` with its own ``CollectorRegistry`` (never the
process-global one), so several brokers in one process -- the tests, ``cluster up`` in the
foreground -- expose separate numbers. Names follow Prometheus conventions: a ``minikafka_``
namespace, base units (seconds, bytes), ``_total`` on counters, histograms for durations.

Gauges whose truth lives elsewhere (purgatory sizes, the request queue) are callbacks read
at scrape time; the HTTP server runs on the broker's event loop, so those callbacks run on
the same thread as the code that mutates what they read.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import math
import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from typing import Generic, Protocol, TypeVar

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from storage.cleaner_manager import LogCleaner
from storage.log import Log

# Counters' and histograms' ``_created`` timestamps are an OpenMetrics detail that doubles
# the series a scrape stores for no use here (prometheus-client's switch is process-wide).
disable_created_metrics()  # type: ignore[no-untyped-call]

log = logging.getLogger(__name__)

NAMESPACE = "minikafka"

#: request latencies from 100 us to 60 s (long-poll fetches sit near their max_wait_ms)
DURATION_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
LAG_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


# --- hot-path families ---------------------------------------------------------------------
#
# prometheus_client's Counter and Histogram take a lock and several Python calls per
# update: a few microseconds, paid on every request. The families below keep plain numbers
# instead (the event loop is the only writer) and turn them into samples when scraped;
# the call sites look the same (``family.labels(api="Fetch").inc()``). The scrape runs on
# the same loop (MetricsHttpServer), so it never sees a half-made update.


class LocalCounter:
    """A counter cell. Not safe across threads: update it from the event loop only."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("counters only go up")
        self.value += amount


class LocalHistogram:
    """Histogram cell: per-bucket counts (not cumulative until exported) and their sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.sum = 0.0

    def observe(self, value: float) -> None:
        # buckets are "less than or equal": the first bound >= value
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)


_Cell = TypeVar("_Cell", LocalCounter, LocalHistogram)


class _LocalFamily(Generic[_Cell]):
    def __init__(self, name: str, doc: str, labelnames: tuple[str, ...]) -> None:
        self.name, self.doc, self.labelnames = name, doc, labelnames
        self._cells: dict[tuple[str, ...], _Cell] = {}

    def labels(self, **labels: str) -> _Cell:
        # on every produce and fetch (per-topic counters): no generator for one label
        names = self.labelnames
        key = (labels[names[0]],) if len(names) == 1 else tuple([labels[n] for n in names])
        cell = self._cells.get(key)
        if cell is None:
            if len(labels) != len(self.labelnames):
                raise ValueError(f"{self.name} takes labels {self.labelnames}")
            cell = self._cells[key] = self._new()
        return cell

    def _new(self) -> _Cell:
        raise NotImplementedError


class LocalCounterFamily(_LocalFamily[LocalCounter]):
    def _new(self) -> LocalCounter:
        return LocalCounter()

    def collect(self) -> Metric:
        family = CounterMetricFamily(self.name, self.doc, labels=self.labelnames)
        for key, cell in self._cells.items():
            family.add_metric(key, cell.value)
        return family


class LocalHistogramFamily(_LocalFamily[LocalHistogram]):
    def __init__(
        self, name: str, doc: str, labelnames: tuple[str, ...], buckets: tuple[float, ...]
    ) -> None:
        super().__init__(name, doc, labelnames)
        self.buckets = buckets

    def _new(self) -> LocalHistogram:
        return LocalHistogram(self.buckets)

    def collect(self) -> Metric:
        family = HistogramMetricFamily(self.name, self.doc, labels=self.labelnames)
        for key, cell in self._cells.items():
            cumulative, buckets = 0, []
            for bound, count in zip((*cell.bounds, math.inf), cell.counts):
                cumulative += count
                buckets.append(("+Inf" if math.isinf(bound) else repr(bound), cumulative))
            family.add_metric(key, buckets, cell.sum)
        return family


class RequestMetrics:
    """The per-API cells every request of one API updates on its way through the broker:
    its total time and Kafka's split of it (queue, local, remote, response). Resolved
    once per API (``BrokerMetrics.request_metrics``) and carried on the request, so the
    network and the handlers update them without a label lookup each."""

    __slots__ = ("local_time", "queue_time", "remote_time", "response_time", "total_time")

    def __init__(self, metrics: BrokerMetrics, api: str) -> None:
        self.total_time = metrics.request_duration.labels(api=api)
        self.queue_time = metrics.request_queue_time.labels(api=api)
        self.local_time = metrics.request_local_time.labels(api=api)
        self.remote_time = metrics.request_remote_time.labels(api=api)
        self.response_time = metrics.request_response_time.labels(api=api)


class _LocalCollector(Collector):
    def __init__(self) -> None:
        self.families: list[LocalCounterFamily | LocalHistogramFamily] = []

    def collect(self) -> Iterable[Metric]:
        return [family.collect() for family in self.families]

    def counter(self, name: str, doc: str, labelnames: tuple[str, ...]) -> LocalCounterFamily:
        family = LocalCounterFamily(f"{NAMESPACE}_{name}", doc, labelnames)
        self.families.append(family)
        return family

    def histogram(
        self, name: str, doc: str, labelnames: tuple[str, ...], buckets: tuple[float, ...]
    ) -> LocalHistogramFamily:
        family = LocalHistogramFamily(f"{NAMESPACE}_{name}", doc, labelnames, buckets)
        self.families.append(family)
        return family


class BrokerMetrics:
    """The metrics of one broker. Update them from the broker's event loop only (the
    per-request families are plain numbers, see above)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r, ns = self.registry, NAMESPACE
        local = _LocalCollector()
        r.register(local)

        self._request_metrics: dict[str, RequestMetrics] = {}
        # requests, by API name (ApiKey names: "Produce", "Fetch", ...)
        self.requests = local.counter("requests", "Requests received", ("api", "listener"))
        # Fetch split by sender, as Kafka's FetchConsumer / FetchFollower request metrics:
        # since followers replicate, most Fetch requests a leader sees are theirs
        self.fetch_requests = local.counter(
            "fetch_requests", "Fetch requests by sender (consumer or follower)", ("sender",)
        )
        # its two cells, made here (every fetch counts in one; both are always exported)
        self.follower_fetches = self.fetch_requests.labels(sender="follower")
        self.consumer_fetches = self.fetch_requests.labels(sender="consumer")
        self.request_errors = Counter(  # rarer than requests: a regular counter
            "request_errors",
            "Error codes returned, per API and error name",
            ["api", "error"],
            namespace=ns,
            registry=r,
        )
        self.request_duration = local.histogram(
            "request_duration_seconds",
            "Time from a request's last byte read to its response's last byte written",
            ("api",),
            DURATION_BUCKETS,
        )
        self.request_queue_time = local.histogram(
            "request_queue_time_seconds",
            "Time a request waited in the request channel for a handler",
            ("api",),
            DURATION_BUCKETS,
        )
        self.request_queue_size = Gauge(
            "request_queue_size",
            "Requests waiting for a handler",
            ["plane"],
            namespace=ns,
            registry=r,
        )

        # per-topic traffic
        self.topic_bytes_in = local.counter("topic_bytes_in", "Record bytes appended", ("topic",))
        self.topic_bytes_out = local.counter("topic_bytes_out", "Record bytes fetched", ("topic",))
        self.topic_messages_in = local.counter("topic_messages_in", "Records appended", ("topic",))
        self.topic_messages_out = local.counter(
            "topic_messages_out",
            "Records fetched (counted per batch header, without reading records)",
            ("topic",),
        )

        # network
        self.connections = Gauge(
            "connections", "Open client connections", ["listener"], namespace=ns, registry=r
        )
        self.connections_accepted = Counter(
            "connections_accepted", "Connections accepted", ["listener"], namespace=ns, registry=r
        )
        self.connections_closed = Counter(
            "connections_closed",
            "Connections closed, by reason",
            ["listener", "reason"],
            namespace=ns,
            registry=r,
        )
        self.network_received_bytes = local.counter(
            "network_received_bytes", "Bytes read", ("listener",)
        )
        self.network_sent_bytes = local.counter(
            "network_sent_bytes", "Bytes written", ("listener",)
        )
        self.malformed_requests = Counter(
            "malformed_requests",
            "Frames that could not be parsed",
            ["listener"],
            namespace=ns,
            registry=r,
        )

        # broker state
        self.purgatory_size = Gauge(
            "purgatory_size",
            "Delayed operations waiting, per purgatory",
            ["purgatory"],
            namespace=ns,
            registry=r,
        )
        # PurgatorySize above counts watcher-list entries until the reaper purges them,
        # completed ones included; this one counts only operations still pending (Kafka's
        # NumDelayedOperations), so it drops to 0 once every long poll has been answered.
        self.purgatory_delayed_operations = Gauge(
            "purgatory_delayed_operations",
            "Delayed operations not yet completed or expired, per purgatory",
            ["purgatory"],
            namespace=ns,
            registry=r,
        )
        self.event_loop_lag = Gauge(
            "event_loop_lag_seconds",
            "How late the last event-loop probe ran",
            namespace=ns,
            registry=r,
        )
        self.event_loop_lag_histogram = Histogram(
            "event_loop_lag_distribution_seconds",
            "How late event-loop probes ran",
            namespace=ns,
            registry=r,
            buckets=LAG_BUCKETS,
        )
        self.controller_active = Gauge(
            "controller_active", "1 when this broker is the controller", namespace=ns, registry=r
        )
        self.offline_partitions = Gauge(
            "offline_partitions", "Partitions without a live leader", namespace=ns, registry=r
        )
        self.under_replicated_partitions = Gauge(
            "under_replicated_partitions",
            "Led partitions whose ISR is smaller than their replica set",
            namespace=ns,
            registry=r,
        )
        self.under_min_isr_partitions = Gauge(
            "under_min_isr_partitions",
            "Led partitions whose ISR is smaller than min.insync.replicas",
            namespace=ns,
            registry=r,
        )
        # ISR changes this broker wrote as leader (Kafka's IsrShrinksPerSec, IsrExpandsPerSec)
        self.isr_shrinks = Counter(
            "isr_shrinks", "ISR shrinks written by this leader", namespace=ns, registry=r
        )
        self.isr_expands = Counter(
            "isr_expands", "ISR expansions written by this leader", namespace=ns, registry=r
        )
        self.zookeeper_connected = Gauge(
            "zookeeper_connected", "1 while the ZooKeeper session is connected",
            namespace=ns, registry=r,
        )  # fmt: skip

        # replication, the follower's side
        self.replica_fetcher_max_lag = Gauge(
            "replica_fetcher_max_lag",
            "Largest lag of a followed partition: the leader's high watermark as last "
            "fetched minus the local log end offset (Kafka's ReplicaFetcherManager MaxLag)",
            namespace=ns,
            registry=r,
        )

        self._init_operator_metrics(local)

    # --- the operators' set: Kafka's JMX metrics under Prometheus names ------------------------
    #
    # Every name here is listed in ``OPERATOR_METRICS`` below with its labels; the alert
    # rules and the dashboard use only listed names, and a unit test scrapes a broker's
    # registry against that list, so a renamed series fails a test instead of leaving an
    # empty panel. Totals over all topics are ``sum without (topic)`` in PromQL (the
    # recording rules), not series of their own.

    def _init_operator_metrics(self, local: _LocalCollector) -> None:
        r, ns = self.registry, NAMESPACE
        # per topic, beside topic_bytes_in/out and topic_messages_in above
        self.topic_bytes_rejected = local.counter(
            "topic_bytes_rejected",
            "Record bytes of produce requests refused by validation (too large, corrupt)",
            ("topic",),
        )
        self.failed_produce_requests = local.counter(
            "topic_failed_produce_requests",
            "Partition appends answered with an error",
            ("topic",),
        )
        self.failed_fetch_requests = local.counter(
            "topic_failed_fetch_requests",
            "Partition reads answered with an error",
            ("topic",),
        )
        # a request's total time split as Kafka splits it: queue (above), local (the
        # handler's own work), remote (waiting in a purgatory), response (from the
        # response being ready to its last byte written)
        self.request_local_time = local.histogram(
            "request_local_time_seconds",
            "Time a handler worked on a request",
            ("api",),
            DURATION_BUCKETS,
        )
        self.request_remote_time = local.histogram(
            "request_remote_time_seconds",
            "Time a request waited for others (a delayed produce or fetch in its purgatory)",
            ("api",),
            DURATION_BUCKETS,
        )
        self.request_response_time = local.histogram(
            "request_response_time_seconds",
            "Time from a response being ready to its last byte written",
            ("api",),
            DURATION_BUCKETS,
        )
        # ZooKeeper: kazoo's thread observes, so these are prometheus_client's own
        # thread-safe types
        self.zookeeper_request_latency = Histogram(
            "zookeeper_request_latency_seconds",
            "Time from a ZooKeeper request being queued to its reply",
            namespace=ns,
            registry=r,
            buckets=DURATION_BUCKETS,
        )
        self.zookeeper_session_state = Gauge(
            "zookeeper_session_state",
            "1 for the ZooKeeper session's current state, 0 for the others",
            ["state"],
            namespace=ns,
            registry=r,
        )
        # controller events (every broker runs the event manager; only the active
        # controller handles more than the election and watch events)
        self.controller_events = local.counter(
            "controller_events",
            "Controller events handled, per event type",
            ("event",),
        )
        self.controller_event_queue_time = local.histogram(
            "controller_event_queue_time_seconds",
            "Time an event waited in the controller's queue",
            (),
            DURATION_BUCKETS,
        )
        self.controller_event_duration = local.histogram(
            "controller_event_duration_seconds",
            "Time the controller spent handling an event, per event type",
            ("event",),
            DURATION_BUCKETS,
        )
        self.controller_event_queue_size = Gauge(
            "controller_event_queue_size",
            "Events waiting in the controller's queue",
            namespace=ns,
            registry=r,
        )
        # consumer groups: the coordinator counts, the groups are read at scrape time
        self.group_rebalances = local.counter(
            "group_rebalances", "Rebalances started by this broker's group coordinator", ()
        )
        self.group_offset_commits = local.counter(
            "group_offset_commits", "Offsets committed to the groups coordinated here", ()
        )
        self.groups = Gauge(
            "groups",
            "Groups coordinated by this broker, per state",
            ["state"],
            namespace=ns,
            registry=r,
        )
        # replica counts
        self.partition_count = Gauge(
            "partitions", "Partitions this broker holds a replica of", namespace=ns, registry=r
        )
        self.leader_count = Gauge(
            "leader_partitions", "Partitions this broker leads", namespace=ns, registry=r
        )

    def request_metrics(self, api: str) -> RequestMetrics:
        """The per-request cells of ``api`` (Kafka's name: "Fetch"), made on first use."""
        cells = self._request_metrics.get(api)
        if cells is None:
            cells = self._request_metrics[api] = RequestMetrics(self, api)
        return cells

    def watch_zookeeper_state(self, state: Callable[[], str]) -> None:
        """The session-state gauge, read at scrape time: ``state()`` is kazoo's CONNECTED,
        SUSPENDED or LOST."""
        for name in ZOOKEEPER_STATES:
            self.zookeeper_session_state.labels(state=name).set_function(
                lambda name=name: 1 if state() == name else 0  # type: ignore[misc]
            )

    def watch_groups(self, states: Callable[[], Mapping[str, int]]) -> None:
        """The groups-by-state gauge, read at scrape time: ``states()`` counts the groups
        in each state (by name: Empty, Stable, ...); a state it leaves out has none."""
        for name in GROUP_STATES:
            self.groups.labels(state=name).set_function(
                lambda name=name: states().get(name, 0)  # type: ignore[misc]
            )

    def observe_controller_event(self, event: str, queued_s: float, handled_s: float) -> None:
        """One handled controller event: its type name, queue time and handling time."""
        self.controller_events.labels(event=event).inc()
        self.controller_event_queue_time.labels().observe(queued_s)
        self.controller_event_duration.labels(event=event).observe(handled_s)

    def watch_logs(self, log_dirs: Callable[[], list[str]], logs: Callable[[], list[Log]]) -> None:
        """Per-partition log gauges and per-directory disk usage, read at scrape time."""
        self.registry.register(_LogCollector(log_dirs, logs))

    def watch_idle(self, idle: Callable[[], Iterable[tuple[str, str, float]]]) -> None:
        """Network processors' and request handlers' idle seconds, read at scrape time:
        ``idle()`` yields (family, label value, seconds), family being ``processor``
        (labelled by processor name) or ``handler`` (by request plane)."""
        self.registry.register(_IdleCollector(idle))

    # gauges read at scrape time ------------------------------------------------------------

    def watch_request_queue(self, plane: str, size: Callable[[], int]) -> None:
        self.request_queue_size.labels(plane=plane).set_function(size)

    def watch_purgatory(
        self, name: str, size: Callable[[], int], delayed: Callable[[], int] | None = None
    ) -> None:
        self.purgatory_size.labels(purgatory=name).set_function(size)
        if delayed is not None:
            self.purgatory_delayed_operations.labels(purgatory=name).set_function(delayed)

    def watch_follower_lags(self, lags: Callable[[], dict[int, list[int]]]) -> None:
        """The followers' lag behind this leader, read at scrape time from ``lags``
        (per follower broker id, its lag in each partition led here)."""
        self.registry.register(_FollowerLagCollector(lags))

    def watch_cleaner(self, cleaner: LogCleaner) -> None:
        """The log cleaner's numbers, read from it at scrape time."""
        self.registry.register(_CleanerCollector(cleaner))

    def watch_unclean_leader_elections(self, count: Callable[[], int]) -> None:
        """Kafka's UncleanLeaderElectionsPerSec as a counter: the unclean leader elections
        this broker made while controller (``minikafka_unclean_leader_elections_total``)."""
        self.registry.register(
            _CounterFunction(
                "unclean_leader_elections",
                "Leaders elected outside the ISR by this broker as controller",
                count,
            )
        )

    def watch_group_store(self, store: GroupStoreStats) -> None:
        """The group coordinator's store: committed offsets held, expired and deleted,
        and each group's lag, read from it at scrape time."""
        self.registry.register(_GroupStoreCollector(store))

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric of this broker."""
        return generate_latest(self.registry)


class _FollowerLagCollector(Collector):
    """How far behind this leader each follower broker is, in offsets.

    Aggregated per follower rather than labelled per partition too: a broker leads
    thousands of partitions, each with its followers, and a series per (partition,
    follower) would make every scrape that large. A follower's largest lag says whether
    it keeps up at all (it is the one ISR expiry looks at); the sum says how much it has
    to copy. Per-partition detail is what the ISR itself and UnderReplicatedPartitions
    show. Followers that have not fetched since this leadership began count as lagging
    by the whole log."""

    def __init__(self, lags: Callable[[], dict[int, list[int]]]) -> None:
        self.lags = lags

    def collect(self) -> Iterable[Metric]:
        ns = NAMESPACE
        largest = GaugeMetricFamily(
            f"{ns}_follower_max_lag_messages",
            "A follower's largest lag behind this leader over the partitions led here",
            labels=("follower",),
        )
        total = GaugeMetricFamily(
            f"{ns}_follower_lag_messages",
            "A follower's lag behind this leader summed over the partitions led here",
            labels=("follower",),
        )
        for follower, lags in sorted(self.lags().items()):
            largest.add_metric((str(follower),), max(lags))
            total.add_metric((str(follower),), sum(lags))
        yield largest
        yield total


class GroupStoreStats(Protocol):
    """What the group metrics read of broker.group.manager.GroupMetadataManager."""

    offsets_expired: int
    offsets_removed: int

    def committed_offset_count(self) -> int: ...

    def lags(self) -> dict[tuple[str, str], int]: ...


class _GroupStoreCollector(Collector):
    """The offsets side of Kafka's GroupMetadataManager metrics (NumOffsets,
    OffsetExpired, OffsetDeletions; the group protocol's side counts groups, rebalances
    and commits) and a consumer lag per group and topic, as lag exporters report it
    (kafka_exporter's consumergroup_lag_sum).

    The lag is summed over a topic's partitions rather than labelled per partition (a
    group of a thousand-partition topic would otherwise add a thousand series), and
    counts only the partitions this broker holds a replica of: their high watermarks
    are known here, the others' are not; a dashboard sums it over the brokers that
    hold the group's commits."""

    def __init__(self, store: GroupStoreStats) -> None:
        self.store = store

    def collect(self) -> Iterable[Metric]:
        ns, store = NAMESPACE, self.store
        yield GaugeMetricFamily(
            f"{ns}_group_committed_offsets",
            "Committed offsets held by the groups this broker coordinates",
            store.committed_offset_count(),
        )
        yield CounterMetricFamily(
            f"{ns}_group_offsets_expired",
            "Committed offsets removed by offsets.retention.minutes",
            store.offsets_expired,
        )
        yield CounterMetricFamily(
            f"{ns}_group_offsets_deleted",
            "Committed offsets deleted (OffsetDelete, or their topic deleted)",
            store.offsets_removed,
        )
        lag = GaugeMetricFamily(
            f"{ns}_group_lag_messages",
            "Messages between a group's commits and the high watermarks of a topic's "
            "partitions held here",
            labels=("group", "topic"),
        )
        for (group, topic), value in sorted(store.lags().items()):
            lag.add_metric((group, topic), value)
        yield lag


class _CounterFunction(Collector):
    """A counter whose value another object keeps, read at scrape time."""

    def __init__(self, name: str, doc: str, value: Callable[[], int]) -> None:
        self.name, self.doc, self.value = f"{NAMESPACE}_{name}", doc, value

    def collect(self) -> Iterable[Metric]:
        yield CounterMetricFamily(self.name, self.doc, self.value())


class _CleanerCollector(Collector):
    """Kafka's LogCleaner metrics: passes, bytes read and written, the dirty ratio of
    each compacted log, time since the last pass, uncleanable partitions."""

    def __init__(self, cleaner: LogCleaner) -> None:
        self.cleaner = cleaner

    def collect(self) -> Iterable[Metric]:
        c, ns = self.cleaner, NAMESPACE
        m = c.metrics
        yield CounterMetricFamily(f"{ns}_log_cleaner_passes", "Cleaning passes", m.passes)
        yield CounterMetricFamily(
            f"{ns}_log_cleaner_read_bytes", "Bytes the cleaner read", m.bytes_read
        )
        yield CounterMetricFamily(
            f"{ns}_log_cleaner_written_bytes", "Bytes the cleaner wrote", m.bytes_written
        )
        yield GaugeMetricFamily(
            f"{ns}_log_cleaner_time_since_last_run_seconds",
            "Since the last pass ended (or startup)",
            c.time_since_last_clean_ms() / 1000,
        )
        yield GaugeMetricFamily(
            f"{ns}_log_cleaner_uncleanable_partitions",
            "Compacted partitions a pass failed on, no longer cleaned",
            len(c.uncleanable),
        )
        ratios = GaugeMetricFamily(
            f"{ns}_log_cleaner_dirty_ratio",
            "Dirty bytes over cleanable bytes of each compacted partition",
            labels=("topic", "partition"),
        )
        for tp, ratio in sorted(c.dirty_ratios().items()):
            ratios.add_metric((tp.topic, str(tp.partition)), ratio)
        yield ratios


# --- the operators' set, continued: collectors and the list the rules and panels rely on ---

#: the classic group protocol's states, each a label value of ``groups``
GROUP_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")

#: kazoo's connection states, each a label value of ``zookeeper_session_state``
ZOOKEEPER_STATES = ("CONNECTED", "SUSPENDED", "LOST")


class _LogCollector(Collector):
    """Per-partition log gauges (Kafka's Log.Size, LogStartOffset, LogEndOffset,
    NumLogSegments) and, per log directory, the bytes its logs hold and its file
    system's usage. Read at scrape time; a directory whose file system cannot be read
    (a failed disk) is left out of the usage gauges rather than failing the scrape."""

    def __init__(self, log_dirs: Callable[[], list[str]], logs: Callable[[], list[Log]]) -> None:
        self._log_dirs = log_dirs
        self._logs = logs

    def collect(self) -> Iterable[Metric]:
        ns, tp_labels, dir_labels = NAMESPACE, ("topic", "partition"), ("log_dir",)
        size = GaugeMetricFamily(
            f"{ns}_log_size_bytes", "Bytes of a partition's log", labels=tp_labels
        )
        start = GaugeMetricFamily(
            f"{ns}_log_start_offset", "A partition's log start offset", labels=tp_labels
        )
        end = GaugeMetricFamily(
            f"{ns}_log_end_offset", "A partition's log end offset", labels=tp_labels
        )
        segments = GaugeMetricFamily(
            f"{ns}_log_segments", "Segments of a partition's log", labels=tp_labels
        )
        dirs = {os.path.normpath(d): d for d in self._log_dirs()}
        held = dict.fromkeys(dirs.values(), 0)
        for log in self._logs():
            labels = (log.tp.topic, str(log.tp.partition))
            nbytes = log.size_in_bytes
            size.add_metric(labels, nbytes)
            start.add_metric(labels, log.log_start_offset)
            end.add_metric(labels, log.log_end_offset)
            segments.add_metric(labels, len(log.segments))
            parent = dirs.get(os.path.normpath(os.path.dirname(log.directory)))
            if parent is not None:
                held[parent] += nbytes
        yield from (size, start, end, segments)
        logs_bytes = GaugeMetricFamily(
            f"{ns}_log_dir_logs_bytes", "Bytes of the logs in a log directory", labels=dir_labels
        )
        used = GaugeMetricFamily(
            f"{ns}_log_dir_disk_used_bytes",
            "Used bytes of a log directory's file system",
            labels=dir_labels,
        )
        free = GaugeMetricFamily(
            f"{ns}_log_dir_disk_free_bytes",
            "Bytes free for this broker on a log directory's file system",
            labels=dir_labels,
        )
        total = GaugeMetricFamily(
            f"{ns}_log_dir_disk_total_bytes",
            "Size of a log directory's file system",
            labels=dir_labels,
        )
        for directory, nbytes in held.items():
            logs_bytes.add_metric((directory,), nbytes)
            try:
                usage = shutil.disk_usage(directory)
            except OSError:
                continue
            used.add_metric((directory,), usage.used)
            free.add_metric((directory,), usage.free)
            total.add_metric((directory,), usage.total)
        yield from (logs_bytes, used, free, total)  # fmt: skip


class _IdleCollector(Collector):
    """Idle seconds as counters: the rate of one is an idle ratio (Kafka's
    NetworkProcessorAvgIdlePercent and RequestHandlerAvgIdlePercent, as a fraction)."""

    def __init__(self, idle: Callable[[], Iterable[tuple[str, str, float]]]) -> None:
        self._idle = idle

    def collect(self) -> Iterable[Metric]:
        ns = NAMESPACE
        processors = CounterMetricFamily(
            f"{ns}_network_processor_idle_seconds",
            "Seconds a network processor had no socket to serve",
            labels=("processor",),
        )
        handlers = CounterMetricFamily(
            f"{ns}_request_handler_idle_seconds",
            "Seconds the average request handler of a plane waited for a request",
            labels=("plane",),
        )
        for family, label, seconds in self._idle():
            target = processors if family == "processor" else handlers
            target.add_metric((label,), seconds)
        return [processors, handlers]


#: Every metric the alert rules and the dashboard may use, as exposed (a counter with its
#: ``_total``, a histogram by its base name), with its labels. tests/unit/broker's
#: test_metric_names scrapes a broker's registry against it, and checks that the rules
#: and the dashboard name nothing else.
OPERATOR_METRICS: dict[str, tuple[str, ...]] = {
    # traffic, per topic (the rules sum them for the broker's total)
    "minikafka_topic_messages_in_total": ("topic",),
    "minikafka_topic_bytes_in_total": ("topic",),
    "minikafka_topic_bytes_out_total": ("topic",),
    "minikafka_topic_bytes_rejected_total": ("topic",),
    "minikafka_topic_failed_produce_requests_total": ("topic",),
    "minikafka_topic_failed_fetch_requests_total": ("topic",),
    # requests, per API
    "minikafka_requests_total": ("api", "listener"),
    "minikafka_request_errors_total": ("api", "error"),
    "minikafka_request_duration_seconds": ("api",),
    "minikafka_request_queue_time_seconds": ("api",),
    "minikafka_request_local_time_seconds": ("api",),
    "minikafka_request_remote_time_seconds": ("api",),
    "minikafka_request_response_time_seconds": ("api",),
    "minikafka_request_queue_size": ("plane",),
    "minikafka_network_processor_idle_seconds_total": ("processor",),
    "minikafka_request_handler_idle_seconds_total": ("plane",),
    "minikafka_connections": ("listener",),
    "minikafka_network_received_bytes_total": ("listener",),
    "minikafka_network_sent_bytes_total": ("listener",),
    "minikafka_purgatory_size": ("purgatory",),
    "minikafka_event_loop_lag_seconds": (),
    # partitions and logs
    "minikafka_partitions": (),
    "minikafka_leader_partitions": (),
    "minikafka_under_replicated_partitions": (),
    "minikafka_under_min_isr_partitions": (),
    "minikafka_replica_fetcher_max_lag": (),
    "minikafka_isr_shrinks_total": (),
    "minikafka_isr_expands_total": (),
    "minikafka_unclean_leader_elections_total": (),
    "minikafka_offline_partitions": (),
    "minikafka_log_size_bytes": ("topic", "partition"),
    "minikafka_log_start_offset": ("topic", "partition"),
    "minikafka_log_end_offset": ("topic", "partition"),
    "minikafka_log_segments": ("topic", "partition"),
    "minikafka_log_dir_logs_bytes": ("log_dir",),
    "minikafka_log_dir_disk_used_bytes": ("log_dir",),
    "minikafka_log_dir_disk_free_bytes": ("log_dir",),
    "minikafka_log_dir_disk_total_bytes": ("log_dir",),
    # controller and ZooKeeper
    "minikafka_controller_active": (),
    "minikafka_controller_events_total": ("event",),
    "minikafka_controller_event_queue_time_seconds": (),
    "minikafka_controller_event_duration_seconds": ("event",),
    "minikafka_controller_event_queue_size": (),
    "minikafka_zookeeper_connected": (),
    "minikafka_zookeeper_session_state": ("state",),
    "minikafka_zookeeper_request_latency_seconds": (),
    # consumer groups
    "minikafka_group_rebalances_total": (),
    "minikafka_group_offset_commits_total": (),
    "minikafka_groups": ("state",),
    # consumer groups: the offsets (the coordinator's store)
    "minikafka_group_committed_offsets": (),
    "minikafka_group_offsets_expired_total": (),
    "minikafka_group_offsets_deleted_total": (),
    "minikafka_group_lag_messages": ("group", "topic"),
}


class EventLoopLagMonitor:
    """Measures how late a periodic probe wakes up: the event loop's scheduling delay.

    ``clock`` returns monotonic seconds (injected; the loop's own ``loop.time`` by default).
    """

    def __init__(
        self,
        metrics: BrokerMetrics,
        interval_s: float = 0.5,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._metrics = metrics
        self._interval = interval_s
        self._clock = clock
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="loop-lag")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        clock = self._clock or asyncio.get_running_loop().time
        while True:
            expected = clock() + self._interval
            await asyncio.sleep(self._interval)
            lag = max(0.0, clock() - expected)
            self._metrics.event_loop_lag.set(lag)
            self._metrics.event_loop_lag_histogram.observe(lag)


class MetricsHttpServer:
    """Serves ``GET /metrics`` (and ``/``) on 127.0.0.1 from the broker's event loop.

    Scrapes are rare and small, so this uses asyncio streams; the request path never does.
    """

    def __init__(self, metrics: BrokerMetrics, port: int, host: str = "127.0.0.1") -> None:
        self._metrics = metrics
        self._host = host
        self._port = port
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        """The bound port (useful when started with port 0)."""
        assert self._server is not None, "not started"
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self._host, self._port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass  # headers are not needed
            parts = request_line.split()
            if len(parts) < 2 or parts[0] not in (b"GET", b"HEAD"):
                status, body, ctype = b"405 Method Not Allowed", b"GET only\n", b"text/plain"
            elif parts[1].split(b"?")[0] in (b"/metrics", b"/"):
                status, body = b"200 OK", self._metrics.exposition()
                ctype = CONTENT_TYPE_LATEST.encode()
            else:
                status, body, ctype = b"404 Not Found", b"try /metrics\n", b"text/plain"
            head = (
                b"HTTP/1.1 " + status + b"\r\nContent-Type: " + ctype
                + b"\r\nContent-Length: " + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
            )  # fmt: skip
            writer.write(head if parts and parts[0] == b"HEAD" else head + body)
            await writer.drain()
        except (TimeoutError, ConnectionError) as exc:
            # a scraper that goes away or stalls costs only its own connection
            log.debug("metrics connection dropped: %s", exc)
        finally:
            writer.close()
