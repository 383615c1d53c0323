"""Per-broker rates from the brokers' Prometheus endpoints, over the last minutes.

A ``MetricsSampler`` scrapes each ``--metrics-url`` every ``interval_s`` and keeps the last
``keep`` samples of a few figures per endpoint (``figures``: totals of counters, and
gauges). Rates are the difference of a counter between two consecutive samples over the
time between them, so a broker restart (a counter going down) yields no rate rather than
a negative one. A URL may be given as ``ID=URL`` to attribute it to broker ID; a bare URL
is shown under its own address.

Counters read (minikafka's names, summed over their labels)::

    bytes_in        minikafka_topic_bytes_in_total
    bytes_out       minikafka_topic_bytes_out_total
    messages_in     minikafka_topic_messages_in_total
    produce / fetch minikafka_requests_total{api="Produce"|"Fetch"}
    latency         minikafka_request_duration_seconds_{sum,count}{api="Produce"|"Fetch"}

and the gauge ``minikafka_log_dir_logs_bytes`` (disk used by the logs).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from prometheus_client.parser import text_string_to_metric_families

from timer.clock import Clock

#: figure -> (sample name, required labels)
COUNTERS: Final[dict[str, tuple[str, dict[str, str]]]] = {
    "bytes_in": ("minikafka_topic_bytes_in_total", {}),
    "bytes_out": ("minikafka_topic_bytes_out_total", {}),
    "messages_in": ("minikafka_topic_messages_in_total", {}),
    "produce_requests": ("minikafka_requests_total", {"api": "Produce"}),
    "fetch_requests": ("minikafka_requests_total", {"api": "Fetch"}),
    "produce_seconds": ("minikafka_request_duration_seconds_sum", {"api": "Produce"}),
    "produce_count": ("minikafka_request_duration_seconds_count", {"api": "Produce"}),
    "fetch_seconds": ("minikafka_request_duration_seconds_sum", {"api": "Fetch"}),
    "fetch_count": ("minikafka_request_duration_seconds_count", {"api": "Fetch"}),
}
GAUGES: Final[dict[str, str]] = {"disk_bytes": "minikafka_log_dir_logs_bytes"}
#: per-partition gauges (labels topic and partition) -> their figure
PARTITION_GAUGES: Final[dict[str, str]] = {
    "minikafka_log_size_bytes": "size",
    "minikafka_log_start_offset": "start",
    "minikafka_log_end_offset": "end",
}
TOPIC_BYTES_IN: Final = "minikafka_topic_bytes_in_total"


@dataclass
class Scrape:
    """One scrape read: the broker's totals, each topic's appended bytes, and each
    partition replica's size, log start and log end offsets."""

    totals: dict[str, float] = field(default_factory=dict)
    topic_bytes_in: dict[str, float] = field(default_factory=dict)
    partitions: dict[tuple[str, int], dict[str, float]] = field(default_factory=dict)


def parse(text: str) -> Scrape:
    out = Scrape()
    totals = out.totals
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            for figure, (name, labels) in COUNTERS.items():
                if sample.name == name and all(
                    sample.labels.get(k) == v for k, v in labels.items()
                ):
                    totals[figure] = totals.get(figure, 0.0) + sample.value
            for figure, name in GAUGES.items():
                if sample.name == name:
                    totals[figure] = totals.get(figure, 0.0) + sample.value
            if sample.name == TOPIC_BYTES_IN and "topic" in sample.labels:
                topic = sample.labels["topic"]
                out.topic_bytes_in[topic] = out.topic_bytes_in.get(topic, 0.0) + sample.value
            gauge = PARTITION_GAUGES.get(sample.name)
            if gauge is not None and sample.labels.get("partition", "").isdigit():
                key = (sample.labels.get("topic", ""), int(sample.labels["partition"]))
                out.partitions.setdefault(key, {})[gauge] = sample.value
    return out


def figures(text: str) -> dict[str, float]:
    """The totals of one scrape (Prometheus text format); absent ones are left out."""
    return parse(text).totals


@dataclass(frozen=True)
class Sample:
    time_ms: int
    figures: Mapping[str, float]


def _delta(a: Sample, b: Sample, key: str) -> float | None:
    if key not in a.figures or key not in b.figures:
        return None
    d = b.figures[key] - a.figures[key]
    return None if d < 0 else d


def rates(a: Sample, b: Sample) -> dict[str, float | None]:
    """Per-second rates and mean latencies (ms) between two samples of one endpoint."""
    seconds = (b.time_ms - a.time_ms) / 1000
    out: dict[str, float | None] = {}
    for key in ("bytes_in", "bytes_out", "messages_in", "produce_requests", "fetch_requests"):
        d = _delta(a, b, key)
        out[key] = None if d is None or seconds <= 0 else d / seconds
    for api in ("produce", "fetch"):
        total, n = _delta(a, b, f"{api}_seconds"), _delta(a, b, f"{api}_count")
        out[f"{api}_latency_ms"] = None if not total or not n else 1000 * total / n
    out["disk_bytes"] = b.figures.get("disk_bytes")
    return out


def parse_target(text: str) -> tuple[int | None, str]:
    """``ID=URL`` or ``URL``; ValueError for a malformed one."""
    head, sep, rest = text.partition("=")
    if sep and head.strip().isdigit() and "://" not in head:
        url, broker = rest.strip(), int(head)
    else:
        url, broker = text.strip(), None
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"--metrics-url {text!r} is not [ID=]http(s)://HOST:PORT/metrics")
    return broker, url


@dataclass
class Endpoint:
    url: str
    broker: int | None
    samples: collections.deque[Sample] = field(default_factory=lambda: collections.deque())
    error: str | None = None
    #: the last two scrapes' per-topic and per-partition figures (not kept longer)
    latest: Scrape | None = None
    previous: Scrape | None = None


class MetricsSampler:
    def __init__(self, targets: Iterable[str], clock: Clock, interval_s: float, keep: int) -> None:
        self.clock = clock
        self.interval_s = interval_s
        self.endpoints = []
        for text in targets:
            broker, url = parse_target(text)
            self.endpoints.append(Endpoint(url, broker, collections.deque(maxlen=keep)))
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.endpoints and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            await self.scrape_all()
            await asyncio.sleep(self.interval_s)

    async def scrape_all(self) -> None:
        await asyncio.gather(*(self._scrape(e) for e in self.endpoints))

    async def _scrape(self, endpoint: Endpoint) -> None:
        try:
            text = await asyncio.to_thread(_get, endpoint.url)
            scrape = await asyncio.to_thread(parse, text)
            endpoint.samples.append(Sample(self.clock.time_ms(), scrape.totals))
            endpoint.previous, endpoint.latest = endpoint.latest, scrape
            endpoint.error = None
        except (OSError, ValueError) as exc:
            endpoint.error = f"cannot scrape {endpoint.url}: {exc}"

    def summary(self) -> list[dict[str, object]]:
        """Per endpoint: the latest rates, and the bytes-in/out rate series (for charts)."""
        out: list[dict[str, object]] = []
        for e in self.endpoints:
            samples = list(e.samples)
            pairs = list(itertools.pairwise(samples))
            series = [rates(a, b) for a, b in pairs]
            out.append(
                {
                    "url": e.url,
                    "broker": e.broker,
                    "error": e.error,
                    "rates": series[-1] if series else {},
                    "history": {
                        key: [s.get(key) or 0.0 for s in series]
                        for key in ("bytes_in", "bytes_out")
                    },
                    "history_times_ms": [b.time_ms for _, b in pairs],
                }
            )
        return out

    def topics(self) -> dict[str, dict[str, float | None]]:
        """Per topic, from every endpoint's latest scrape: bytes on disk (all replicas),
        messages (per partition, the highest log end less the highest log start any
        replica reports) and bytes appended per second (leaders' counters)."""
        size: dict[str, float] = {}
        bounds: dict[tuple[str, int], tuple[float, float]] = {}
        rate: dict[str, float] = {}
        for e in self.endpoints:
            if e.latest is None:
                continue
            for (topic, p), figs in e.latest.partitions.items():
                size[topic] = size.get(topic, 0.0) + figs.get("size", 0.0)
                start, end = bounds.get((topic, p), (0.0, 0.0))
                bounds[topic, p] = (
                    max(start, figs.get("start", 0.0)),
                    max(end, figs.get("end", 0.0)),
                )
            samples = list(e.samples)
            if e.previous is not None and len(samples) >= 2:
                seconds = (samples[-1].time_ms - samples[-2].time_ms) / 1000
                for topic, total in e.latest.topic_bytes_in.items():
                    d = total - e.previous.topic_bytes_in.get(topic, total)
                    if seconds > 0 and d >= 0:
                        rate[topic] = rate.get(topic, 0.0) + d / seconds
        messages: dict[str, float] = {}
        for (topic, _), (start, end) in bounds.items():
            messages[topic] = messages.get(topic, 0.0) + max(0.0, end - start)
        return {
            t: {
                "size_bytes": size.get(t),
                "messages": messages.get(t),
                "bytes_in_per_s": rate.get(t),
            }
            for t in set(size) | set(rate)
        }

    def partition_sizes(self, topic: str) -> dict[int, float]:
        """A topic's partitions' bytes on disk, summed over the replicas scraped."""
        out: dict[int, float] = {}
        for e in self.endpoints:
            if e.latest is not None:
                for (t, p), figs in e.latest.partitions.items():
                    if t == topic:
                        out[p] = out.get(p, 0.0) + figs.get("size", 0.0)
        return out


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode("utf-8"))
