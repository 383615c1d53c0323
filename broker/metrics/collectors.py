"""Metrics read at scrape time from the objects that keep the numbers.

Some truths live elsewhere and are cheap to read but costly to mirror: the logs and their
directories, the log cleaner, the group coordinator's store, the followers' lags, the
network threads' idle time. A collector here reads them when Prometheus scrapes (on the
broker's event loop, see ``MetricsHttpServer``), so nothing on the request path pays for
them. Each family's name, help and labels come from its declaration in ``catalog``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from broker.metrics import catalog as c
from broker.metrics.catalog import Kind, MetricDef
from broker.metrics.lso import LsoWatch
from storage.cleaner_manager import LogCleaner
from storage.log import Log


def _counter(d: MetricDef, value: float | None = None) -> CounterMetricFamily:
    """The family of counter ``d``: its one sample ``value`` if it has no labels, else
    empty for ``add_metric``."""
    if d.kind is not Kind.COUNTER:
        raise ValueError(f"{d.name} is a {d.kind.value}")
    if value is not None:
        return CounterMetricFamily(d.full_name, d.help, value)
    return CounterMetricFamily(d.full_name, d.help, labels=d.labels)


def _gauge(d: MetricDef, value: float | None = None) -> GaugeMetricFamily:
    """As ``_counter``, for a gauge."""
    if d.kind is not Kind.GAUGE:
        raise ValueError(f"{d.name} is a {d.kind.value}")
    if value is not None:
        return GaugeMetricFamily(d.full_name, d.help, value)
    return GaugeMetricFamily(d.full_name, d.help, labels=d.labels)


class FollowerLagCollector(Collector):
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
        largest = _gauge(c.FOLLOWER_MAX_LAG)
        total = _gauge(c.FOLLOWER_LAG)
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


class GroupStoreCollector(Collector):
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
        store = self.store
        yield _gauge(c.GROUP_COMMITTED_OFFSETS, store.committed_offset_count())
        yield _counter(c.GROUP_OFFSETS_EXPIRED, store.offsets_expired)
        yield _counter(c.GROUP_OFFSETS_DELETED, store.offsets_removed)
        lag = _gauge(c.GROUP_LAG)
        for (group, topic), value in sorted(store.lags().items()):
            lag.add_metric((group, topic), value)
        yield lag


class CounterFunction(Collector):
    """A counter without labels whose value another object keeps, read at scrape time."""

    def __init__(self, d: MetricDef, value: Callable[[], int]) -> None:
        self.d, self.value = d, value

    def collect(self) -> Iterable[Metric]:
        yield _counter(self.d, self.value())


class CleanerCollector(Collector):
    """Kafka's LogCleaner metrics: passes, bytes read and written, the dirty ratio of
    each compacted log, time since the last pass, uncleanable partitions."""

    def __init__(self, cleaner: LogCleaner) -> None:
        self.cleaner = cleaner

    def collect(self) -> Iterable[Metric]:
        cleaner = self.cleaner
        m = cleaner.metrics
        yield _counter(c.LOG_CLEANER_PASSES, m.passes)
        yield _counter(c.LOG_CLEANER_READ_BYTES, m.bytes_read)
        yield _counter(c.LOG_CLEANER_WRITTEN_BYTES, m.bytes_written)
        yield _gauge(c.LOG_CLEANER_TIME_SINCE_LAST_RUN, cleaner.time_since_last_clean_ms() / 1000)
        yield _gauge(c.LOG_CLEANER_UNCLEANABLE_PARTITIONS, len(cleaner.uncleanable))
        ratios = _gauge(c.LOG_CLEANER_DIRTY_RATIO)
        for tp, ratio in sorted(cleaner.dirty_ratios().items()):
            ratios.add_metric((tp.topic, str(tp.partition)), ratio)
        yield ratios


class LogCollector(Collector):
    """Per-partition log gauges (Kafka's Log.Size, LogStartOffset, LogEndOffset,
    NumLogSegments) and, per log directory, the bytes its logs hold and its file
    system's usage. Read at scrape time; a directory whose file system cannot be read
    (a failed disk) is left out of the usage gauges rather than failing the scrape."""

    def __init__(self, log_dirs: Callable[[], list[str]], logs: Callable[[], list[Log]]) -> None:
        self._log_dirs = log_dirs
        self._logs = logs

    def collect(self) -> Iterable[Metric]:
        size, start = _gauge(c.LOG_SIZE), _gauge(c.LOG_START_OFFSET)
        end, segments = _gauge(c.LOG_END_OFFSET), _gauge(c.LOG_SEGMENTS)
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
        logs_bytes, used = _gauge(c.LOG_DIR_LOGS_BYTES), _gauge(c.LOG_DIR_DISK_USED)
        free, total = _gauge(c.LOG_DIR_DISK_FREE), _gauge(c.LOG_DIR_DISK_TOTAL)
        for directory, nbytes in held.items():
            logs_bytes.add_metric((directory,), nbytes)
            try:
                usage = shutil.disk_usage(directory)
            except OSError:
                continue
            used.add_metric((directory,), usage.used)
            free.add_metric((directory,), usage.free)
            total.add_metric((directory,), usage.total)
        yield from (logs_bytes, used, free, total)


class LsoCollector(Collector):
    """The last stable offset's lag and how long it has been stuck (broker.metrics.lso),
    over the logs held here, read at scrape time."""

    def __init__(self, logs: Callable[[], list[Log]], watch: LsoWatch) -> None:
        self._logs = logs
        self._watch = watch

    def collect(self) -> Iterable[Metric]:
        report = self._watch.observe(
            (log.tp, log.last_stable_offset, log.high_watermark) for log in self._logs()
        )
        lags = _gauge(c.LSO_LAG)
        for tp, lag in report.lags:
            lags.add_metric((tp.topic, str(tp.partition)), lag)
        yield lags
        yield _gauge(c.LSO_LAG_MAX, report.max_lag)
        yield _gauge(c.LSO_LAGGING_PARTITIONS, report.lagging)
        yield _gauge(c.LSO_STUCK, report.stuck_s)


class IdleCollector(Collector):
    """Idle seconds as counters: the rate of one is an idle ratio (Kafka's
    NetworkProcessorAvgIdlePercent and RequestHandlerAvgIdlePercent, as a fraction).
    ``idle()`` yields (family, label value, seconds), family being ``processor``
    (labelled by processor name) or ``handler`` (by request plane)."""

    def __init__(self, idle: Callable[[], Iterable[tuple[str, str, float]]]) -> None:
        self._idle = idle

    def collect(self) -> Iterable[Metric]:
        processors = _counter(c.NETWORK_PROCESSOR_IDLE)
        handlers = _counter(c.REQUEST_HANDLER_IDLE)
        for family, label, seconds in self._idle():
            target = processors if family == "processor" else handlers
            target.add_metric((label,), seconds)
        return [processors, handlers]


class PrincipalConnectionsCollector(Collector):
    """Open connections per (listener, principal), read from the network at scrape
    time: ``counts()`` maps each pair to its count. Per listener, the
    ``PRINCIPALS_PER_LISTENER`` principals with the most connections are named and the
    rest summed as ``other``, so the series stay few whatever the number of users."""

    def __init__(self, counts: Callable[[], Mapping[tuple[str, str], int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterable[Metric]:
        family = _gauge(c.CONNECTIONS_BY_PRINCIPAL)
        by_listener: dict[str, list[tuple[int, str]]] = {}
        for (listener, principal), count in self._counts().items():
            by_listener.setdefault(listener, []).append((count, principal))
        for listener, entries in sorted(by_listener.items()):
            entries.sort(key=lambda e: (-e[0], e[1]))
            named, rest = entries[: c.PRINCIPALS_PER_LISTENER], entries[c.PRINCIPALS_PER_LISTENER :]
            for count, principal in named:
                family.add_metric((listener, principal), count)
            if rest:
                family.add_metric((listener, "other"), sum(count for count, _ in rest))
        return [family]
