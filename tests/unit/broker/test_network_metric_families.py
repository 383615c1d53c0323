"""Per-request metric families: plain numbers exported in Prometheus' format at scrape time."""

from __future__ import annotations

import pytest

from broker.metrics import BrokerMetrics


def test_local_counters_export_as_prometheus_counters() -> None:
    metrics = BrokerMetrics()
    metrics.requests.labels(api="Fetch", listener="PLAINTEXT").inc()
    metrics.requests.labels(api="Fetch", listener="PLAINTEXT").inc(2)
    metrics.topic_bytes_in.labels(topic="t").inc(100)
    get = metrics.registry.get_sample_value
    assert get("minikafka_requests_total", {"api": "Fetch", "listener": "PLAINTEXT"}) == 3
    assert get("minikafka_topic_bytes_in_total", {"topic": "t"}) == 100
    text = metrics.exposition().decode()
    assert "# TYPE minikafka_requests_total counter" in text


def test_local_histograms_have_cumulative_inclusive_buckets() -> None:
    metrics = BrokerMetrics()
    duration = metrics.request_duration.labels(api="Produce")
    for value in (0.0001, 0.0002, 0.003, 100.0):
        duration.observe(value)
    get = metrics.registry.get_sample_value
    bucket = "minikafka_request_duration_seconds_bucket"
    assert get(bucket, {"api": "Produce", "le": "0.0001"}) == 1  # le is inclusive
    assert get(bucket, {"api": "Produce", "le": "0.00025"}) == 2
    assert get(bucket, {"api": "Produce", "le": "0.005"}) == 3
    assert get(bucket, {"api": "Produce", "le": "60.0"}) == 3
    assert get(bucket, {"api": "Produce", "le": "+Inf"}) == 4
    assert get("minikafka_request_duration_seconds_count", {"api": "Produce"}) == 4
    assert get("minikafka_request_duration_seconds_sum", {"api": "Produce"}) == pytest.approx(
        100.0033
    )
    assert duration.count == 4


def test_local_families_check_labels_and_direction() -> None:
    metrics = BrokerMetrics()
    with pytest.raises((ValueError, KeyError)):
        metrics.requests.labels(api="Fetch")
    with pytest.raises(ValueError):
        metrics.topic_bytes_out.labels(topic="t").inc(-1)


def test_each_broker_has_its_own_registry() -> None:
    first, second = BrokerMetrics(), BrokerMetrics()
    first.request_errors.labels(api="Fetch", error="NOT_LEADER_OR_FOLLOWER").inc()
    first.watch_purgatory("Fetch", lambda: 3)
    labels = {"api": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER"}
    assert first.registry.get_sample_value("minikafka_request_errors_total", labels) == 1
    assert second.registry.get_sample_value("minikafka_request_errors_total", labels) is None
    assert first.registry.get_sample_value("minikafka_purgatory_size", {"purgatory": "Fetch"}) == 3


def test_a_purgatory_reports_its_entries_and_its_pending_operations_apart() -> None:
    metrics = BrokerMetrics()
    metrics.watch_purgatory("Fetch", lambda: 5, lambda: 2)  # 3 completed, not yet purged
    get = metrics.registry.get_sample_value
    assert get("minikafka_purgatory_size", {"purgatory": "Fetch"}) == 5
    assert get("minikafka_purgatory_delayed_operations", {"purgatory": "Fetch"}) == 2
