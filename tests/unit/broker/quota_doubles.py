"""A QuotaObserver that keeps what it is told (broker.client_quotas.manager)."""

from __future__ import annotations


class RecordingObserver:
    def __init__(self) -> None:
        self.rates: list[tuple[str, tuple[str, str], float]] = []
        self.throttles: list[tuple[str, int]] = []

    def rate(self, quota_type: str, tags: tuple[str, str], value: float) -> None:
        self.rates.append((quota_type, tags, value))

    def throttled(self, quota_type: str, throttle_ms: int) -> None:
        self.throttles.append((quota_type, throttle_ms))
