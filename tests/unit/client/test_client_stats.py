"""Perf figures: weighted percentiles, throttling, Kafka's report lines."""

from __future__ import annotations

from client.stats import (
    CONSUMER_HEADER,
    ProduceStats,
    Window,
    consumer_line,
    progress_line,
    summary_line,
    throttle_delay_ms,
    weighted_percentiles,
)


def test_percentiles_weigh_each_sample_by_its_records() -> None:
    samples = [(1.0, 90), (10.0, 9), (100.0, 1)]
    assert weighted_percentiles(samples, (0.5, 0.9, 0.95, 0.99, 0.999)) == [
        1.0, 1.0, 10.0, 10.0, 100.0,
    ]  # fmt: skip
    assert weighted_percentiles([], (0.5,)) == [0.0]


def test_throttle_waits_only_when_ahead_of_the_rate() -> None:
    assert throttle_delay_ms(1000, 500, 1000) == 500
    assert throttle_delay_ms(1000, 1500, 1000) == 0
    assert throttle_delay_ms(10**9, 1, -1) == 0


def test_progress_and_summary_lines_read_like_kafkas() -> None:
    w = Window()
    w.add(1000, 100_000, 2.0)
    w.add(1000, 100_000, 4.0)
    assert progress_line(w, 1000.0) == (
        "2000 records sent, 2000.0 records/sec (0.19 MB/sec), 3.0 ms avg latency, "
        "4.0 ms max latency."
    )
    stats = ProduceStats()
    stats.record(1000, 1024 * 1024, 1.5)
    stats.record(1000, 1024 * 1024, 2.5)
    assert stats.take_window().records == 2000 and stats.window.records == 0
    assert summary_line(stats, 2000.0) == (
        "2000 records sent, 1000.000000 records/sec (1.00 MB/sec), 2.00 ms avg latency, "
        "2.50 ms max latency, 1.50 ms 50th, 2.50 ms 95th, 2.50 ms 99th, 2.50 ms 99.9th."
    )


def test_consumer_row_matches_the_header() -> None:
    row = consumer_line(1_700_000_000_000, 1_700_000_002_000, 2 * 1024 * 1024, 20_000, 2000.0)
    fields = row.split(", ")
    assert len(fields) == len(CONSUMER_HEADER.split(", "))
    assert fields[2:] == [
        "2.0000",
        "1.0000",
        "20000",
        "10000.0000",
        "0",
        "2000",
        "1.0000",
        "10000.0000",
    ]
    assert fields[0].endswith(":000") and len(fields[0]) == len("2023-11-14 22:13:20:000")
