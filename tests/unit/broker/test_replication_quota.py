"""Kafka's windowed rate quota (broker.replication.quota), time driven by hand."""

from __future__ import annotations

import pytest

from broker.replication.quota import WindowedRate


def test_a_fresh_quota_spreads_its_bytes_over_all_but_one_window() -> None:
    rate = WindowedRate(11, 1000)
    rate.record(1_000_000, now_ms=0)
    # 10 whole windows are assumed until they have elapsed: 1 MB over 10 s
    assert rate.rate(0) == pytest.approx(100_000)
    assert rate.rate(500) == pytest.approx(1_000_000 / 10.5)
    assert not rate.exceeded(100_000, 0)
    assert rate.exceeded(99_999, 0)


def test_the_rate_is_the_sum_over_the_time_the_windows_span() -> None:
    rate = WindowedRate(3, 1000)
    for t in (0, 1000, 2000):
        rate.record(300, t)  # a new window each second
    # three samples spanning 2.5 s at 2500 (at least 2 whole windows: no padding)
    assert rate.rate(2500) == pytest.approx(900 / 2.5)


def test_a_window_older_than_the_span_of_the_windows_is_forgotten() -> None:
    rate = WindowedRate(2, 1000)
    rate.record(5000, 0)
    # 5000 bytes over 0.999 s plus the one whole window missing
    assert rate.rate(999) == pytest.approx(5000 / 1.999)
    assert rate.exceeded(2000, 999)
    assert rate.rate(2000) == 0  # 2 windows of 1 s later the sample is gone
    assert not rate.exceeded(0, 2000)


def test_bytes_within_one_window_share_its_sample() -> None:
    rate = WindowedRate(2, 1000)
    rate.record(100, 0)
    rate.record(100, 999)  # same window
    rate.record(100, 1000)  # the next one
    assert rate.rate(1500) == pytest.approx(300 / 1.5)
    assert rate.rate(2000) == pytest.approx(100 / 1.0)  # the first window expired


def test_at_most_the_configured_number_of_samples_is_kept() -> None:
    rate = WindowedRate(2, 1000)
    rate.record(1, 0)
    rate.record(10, 1000)
    rate.record(100, 1999)  # same window as the second
    assert rate.rate(1999) == pytest.approx(111 / 1.999)
    rate.record(1000, 2000)  # a third window pushes out the first
    assert rate.rate(2000) == pytest.approx(1110 / 1.0)


def test_the_extra_bytes_ask_whether_adding_them_would_exceed() -> None:
    rate = WindowedRate(11, 1000)
    rate.record(900_000, 0)
    assert not rate.exceeded(100_000, 0)
    assert not rate.exceeded(100_000, 0, extra=100_000)  # exactly at the bound
    assert rate.exceeded(100_000, 0, extra=100_001)


def test_the_default_bound_is_never_exceeded() -> None:
    rate = WindowedRate(11, 1000)
    rate.record(2**40, 0)
    assert not rate.exceeded(2**63 - 1, 0)


def test_nothing_recorded_is_a_rate_of_zero() -> None:
    rate = WindowedRate(1, 1000)
    assert rate.rate(12345) == 0
    assert not rate.exceeded(0, 12345)


@pytest.mark.parametrize(("windows", "window_ms"), [(0, 1000), (1, 0)])
def test_a_quota_without_windows_is_refused(windows: int, window_ms: int) -> None:
    with pytest.raises(ValueError):
        WindowedRate(windows, window_ms)
