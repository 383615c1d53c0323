"""The lock-free metric families of the request path.

prometheus_client's Counter and Histogram take a lock and several Python calls per
update: a few microseconds, paid on every request. The families here keep plain numbers
instead (the broker's event loop is their only writer) and turn them into samples when
scraped; the call sites look the same (``family.labels(api="Fetch").inc()``). The scrape
runs on the same loop (``MetricsHttpServer``), so it never sees a half-made update.

A family's cells are made on first use of a label set and kept for the broker's life;
callers on the hottest paths resolve a cell once and keep it (``RequestMetrics``), so an
update is one attribute add. Histogram cells count per bucket and become cumulative only
when exported.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from typing import Generic, TypeVar

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from broker.metrics.catalog import Kind, MetricDef


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


class LocalCollector(Collector):
    """The registry's view of every lock-free family of one broker, exported in the
    order they were made."""

    def __init__(self) -> None:
        self.families: list[LocalCounterFamily | LocalHistogramFamily] = []

    def collect(self) -> Iterable[Metric]:
        return [family.collect() for family in self.families]

    def counter(self, d: MetricDef) -> LocalCounterFamily:
        if d.kind is not Kind.COUNTER:
            raise ValueError(f"{d.name} is a {d.kind.value}")
        family = LocalCounterFamily(d.full_name, d.help, d.labels)
        self.families.append(family)
        return family

    def histogram(self, d: MetricDef) -> LocalHistogramFamily:
        if d.kind is not Kind.HISTOGRAM:
            raise ValueError(f"{d.name} is a {d.kind.value}")
        family = LocalHistogramFamily(d.full_name, d.help, d.labels, d.buckets)
        self.families.append(family)
        return family
