"""Figures of the perf tools (pure): latency percentiles, throttling, Kafka's report lines.

Latencies are kept per send with the number of records it carried, and percentiles are
weighted by records, as if each record had its own sample (Kafka's producer perf test
times each record from send to acknowledgement; here all records of a batch share one
send). Rates use MB = 2**20 bytes, as Kafka's tools do.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

MB = 1024 * 1024


def weighted_percentiles(
    samples: list[tuple[float, int]], quantiles: tuple[float, ...]
) -> list[float]:
    """For (value, weight) samples, the smallest value at or below which at least q of
    the total weight lies, per quantile q (0 for no samples)."""
    if not samples:
        return [0.0 for _ in quantiles]
    ordered = sorted(samples)
    total = sum(w for _, w in ordered)
    out = []
    for q in quantiles:
        target = q * total
        running = 0
        value = ordered[-1][0]
        for v, w in ordered:
            running += w
            if running >= target:
                value = v
                break
        out.append(value)
    return out


@dataclass
class Window:
    """Totals since the last report."""

    records: int = 0
    bytes: int = 0
    latency_sum_ms: float = 0.0
    latency_max_ms: float = 0.0

    def add(self, records: int, nbytes: int, latency_ms: float) -> None:
        self.records += records
        self.bytes += nbytes
        self.latency_sum_ms += latency_ms * records
        if latency_ms > self.latency_max_ms:
            self.latency_max_ms = latency_ms

    @property
    def avg_latency_ms(self) -> float:
        return self.latency_sum_ms / self.records if self.records else 0.0


@dataclass
class ProduceStats:
    """Whole-run totals, the current window, and the latency samples."""

    total: Window = field(default_factory=Window)
    window: Window = field(default_factory=Window)
    samples: list[tuple[float, int]] = field(default_factory=list)
    errors: int = 0

    def record(self, records: int, nbytes: int, latency_ms: float) -> None:
        self.total.add(records, nbytes, latency_ms)
        self.window.add(records, nbytes, latency_ms)
        self.samples.append((latency_ms, records))

    def take_window(self) -> Window:
        window, self.window = self.window, Window()
        return window


def throttle_delay_ms(sent_records: int, elapsed_ms: float, throughput: float) -> float:
    """How long to wait before sending more, so that ``sent_records`` over the elapsed
    time stays at or under ``throughput`` records/s (no cap when throughput <= 0)."""
    if throughput <= 0:
        return 0.0
    return max(0.0, sent_records * 1000.0 / throughput - elapsed_ms)


def _rate(n: float, elapsed_ms: float) -> float:
    return n * 1000.0 / elapsed_ms if elapsed_ms > 0 else 0.0


def progress_line(window: Window, elapsed_ms: float) -> str:
    """Kafka's producer perf test's periodic line."""
    return (
        f"{window.records} records sent, {_rate(window.records, elapsed_ms):.1f} records/sec "
        f"({_rate(window.bytes, elapsed_ms) / MB:.2f} MB/sec), "
        f"{window.avg_latency_ms:.1f} ms avg latency, {window.latency_max_ms:.1f} ms max latency."
    )


def summary_line(stats: ProduceStats, elapsed_ms: float) -> str:
    """Kafka's producer perf test's final line (percentiles in whole ms, as it prints
    them, plus the fraction for sub-millisecond latencies)."""
    total = stats.total
    p50, p95, p99, p999 = weighted_percentiles(stats.samples, (0.5, 0.95, 0.99, 0.999))
    return (
        f"{total.records} records sent, {_rate(total.records, elapsed_ms):.6f} records/sec "
        f"({_rate(total.bytes, elapsed_ms) / MB:.2f} MB/sec), "
        f"{total.avg_latency_ms:.2f} ms avg latency, {total.latency_max_ms:.2f} ms max latency, "
        f"{p50:.2f} ms 50th, {p95:.2f} ms 95th, {p99:.2f} ms 99th, {p999:.2f} ms 99.9th."
    )


CONSUMER_HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)


def _stamp(wall_ms: int) -> str:
    t = dt.datetime.fromtimestamp(wall_ms / 1000)
    return t.strftime("%Y-%m-%d %H:%M:%S:") + f"{wall_ms % 1000:03d}"


def consumer_line(
    start_wall_ms: int, end_wall_ms: int, nbytes: int, records: int, elapsed_ms: float
) -> str:
    """Kafka's consumer perf test's result row (no group, so no rebalance time; fetch
    time is the whole run)."""
    mb = nbytes / MB
    return (
        f"{_stamp(start_wall_ms)}, {_stamp(end_wall_ms)}, {mb:.4f}, {_rate(mb, elapsed_ms):.4f}, "
        f"{records}, {_rate(records, elapsed_ms):.4f}, 0, {elapsed_ms:.0f}, "
        f"{_rate(mb, elapsed_ms):.4f}, {_rate(records, elapsed_ms):.4f}"
    )
