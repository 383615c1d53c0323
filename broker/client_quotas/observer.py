"""The client quotas' measurements as the broker's metrics (``broker.metrics.catalog``):
the byte rate per quota type and quota tags (user, client id), the throttle time of each
throttled response and their count, per quota type."""

from __future__ import annotations

from broker.metrics import BrokerMetrics


class MetricsObserver:
    """``broker.client_quotas.manager.QuotaObserver`` over ``BrokerMetrics``."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self._metrics = metrics

    def rate(self, quota_type: str, tags: tuple[str, str], value: float) -> None:
        user, client_id = tags
        self._metrics.client_quota_byte_rate.labels(
            quota_type=quota_type, user=user, client_id=client_id
        ).set(value)

    def throttled(self, quota_type: str, throttle_ms: int) -> None:
        metrics = self._metrics
        metrics.client_quota_throttle_time.labels(quota_type=quota_type).observe(
            throttle_ms / 1000.0
        )
        metrics.client_quota_throttled.labels(quota_type=quota_type).inc()
