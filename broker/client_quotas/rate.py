"""A byte rate over sampled windows, and the throttle time a violation costs (pure).

The rate is Kafka's sampled Rate: ``num_samples`` windows of ``window_ms`` each
(``quota.window.num``, ``quota.window.size.seconds``). Recording adds to the current
sample; a sample is current for ``window_ms`` from its first record, then a new one
starts (the oldest is dropped past ``num_samples``). Samples older than the whole span
(``num_samples * window_ms``) count for nothing. The rate is the total of the live
samples divided by the time they cover: from the oldest sample's start to now, but at
least ``num_samples - 1`` whole windows, so that the first bytes of a quiet client are
not measured over a few milliseconds (which would throttle any first request).

Throttling (``throttle_ms``): once a record takes the rate above the quota, the client
must stay silent until the rate measured over the same span falls back to the quota:
``(rate - quota) / quota * span`` milliseconds, rounded, and at most ``max_ms``.

Time is injected (milliseconds): the caller passes ``now_ms`` to every call.
"""

from __future__ import annotations


class SampledRate:
    """Bytes per second over sampled windows. Not thread-safe (one event loop)."""

    __slots__ = ("_samples", "num_samples", "window_ms")

    def __init__(self, num_samples: int, window_ms: int) -> None:
        if num_samples < 1 or window_ms < 1:
            raise ValueError("a rate needs at least one sample of at least 1 ms")
        self.num_samples = num_samples
        self.window_ms = window_ms
        #: [start ms, total] of each sample, oldest first
        self._samples: list[list[float]] = []

    def _purge(self, now_ms: float) -> None:
        horizon = now_ms - self.num_samples * self.window_ms
        while self._samples and self._samples[0][0] <= horizon:
            self._samples.pop(0)

    def record(self, value: float, now_ms: float) -> None:
        self._purge(now_ms)
        samples = self._samples
        if not samples or now_ms - samples[-1][0] >= self.window_ms:
            samples.append([now_ms, 0.0])
            if len(samples) > self.num_samples:
                samples.pop(0)
        samples[-1][1] += value

    def span_ms(self, now_ms: float) -> float:
        """The time the rate divides by (module docstring)."""
        self._purge(now_ms)
        oldest = self._samples[0][0] if self._samples else now_ms
        elapsed = now_ms - oldest
        minimum = (self.num_samples - 1) * self.window_ms
        return max(elapsed, minimum, 1.0)

    def measure(self, now_ms: float) -> float:
        """Bytes per second at ``now_ms``."""
        span = self.span_ms(now_ms)
        total = sum(s[1] for s in self._samples)
        return total * 1000.0 / span


def throttle_ms(rate: float, quota: float, span_ms: float, max_ms: int) -> int:
    """How long a client measured at ``rate`` over ``span_ms`` waits for its rate to
    fall to ``quota``; 0 when within it."""
    if rate <= quota or quota <= 0:
        return 0
    return min(round((rate - quota) / quota * span_ms), max_ms)
