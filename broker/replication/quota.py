"""A windowed byte rate and its bound: Kafka's replication quota, pure and clock-free.

Bytes are recorded into samples, each covering ``window_ms`` from the time of the first
byte it holds; at most ``windows`` samples are kept, and a sample whose start lies
``windows * window_ms`` or more in the past is forgotten. The rate is the bytes of the
samples kept divided by the time they span, from the start of the oldest to now; while
fewer than ``windows - 1`` whole windows have elapsed, that span is lengthened by the
missing whole windows, as Kafka's Rate does, so that a quota that just started (or just
went idle) does not read one small transfer as a huge rate. The effect: a transfer may
start with a burst of about ``(windows - 1) * window_ms`` worth of the bound, after
which it runs at the bound on average.

The quota is exceeded when the rate is above the bound; :meth:`WindowedRate.exceeded`
also answers "would it be, with these bytes added" (``extra``). A bound of Long.MAX
(Kafka's default for the throttled rates) is never exceeded.

Every call takes the time (monotonic milliseconds) from its caller: the module holds no
clock, so its tests drive time by hand.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class _Sample:
    start_ms: int
    total: int


class WindowedRate:
    """Bytes per second over the last ``windows`` samples of ``window_ms`` each."""

    def __init__(self, windows: int, window_ms: int) -> None:
        if windows < 1 or window_ms < 1:
            raise ValueError("a rate needs at least one window of at least 1 ms")
        self.windows = windows
        self.window_ms = window_ms
        self._samples: list[_Sample] = []

    def _purge(self, now_ms: int) -> None:
        horizon = self.windows * self.window_ms
        self._samples = [s for s in self._samples if now_ms - s.start_ms < horizon]

    def record(self, size: int, now_ms: int) -> None:
        """Count ``size`` bytes at ``now_ms``."""
        self._purge(now_ms)
        samples = self._samples
        if not samples or now_ms - samples[-1].start_ms >= self.window_ms:
            samples.append(_Sample(now_ms, 0))
            if len(samples) > self.windows:
                del samples[0]
        samples[-1].total += size

    def _span_ms(self, now_ms: int) -> int:
        """The time the kept samples span, lengthened to ``windows - 1`` whole windows."""
        oldest = self._samples[0].start_ms if self._samples else now_ms
        elapsed = max(0, now_ms - oldest)
        full = elapsed // self.window_ms
        minimum = self.windows - 1
        if full < minimum:
            elapsed += (minimum - full) * self.window_ms
        return elapsed

    def rate(self, now_ms: int, extra: int = 0) -> float:
        """Bytes per second at ``now_ms`` (with ``extra`` bytes counted as if recorded)."""
        self._purge(now_ms)
        total = sum(s.total for s in self._samples) + extra
        span = self._span_ms(now_ms)
        if span <= 0:  # one window of one sample: nothing elapsed yet
            span = self.window_ms
        return total * 1000 / span

    def exceeded(self, bound: int, now_ms: int, extra: int = 0) -> bool:
        """Whether the rate (with ``extra`` bytes added) is above ``bound`` bytes/s."""
        return self.rate(now_ms, extra) > bound
