"""The event-loop lag probe.

Everything a broker does runs on one event loop, so a handler that blocks it (a slow
disk call, a long CPU-bound loop) delays every connection at once. The probe measures
that directly: a task sleeps a fixed interval and records how much later than asked it
woke up. It feeds ``event_loop_lag_seconds`` (the last probe) and its distribution.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from broker.metrics.broker_metrics import BrokerMetrics


class EventLoopLagMonitor:
    """Measures how late a periodic probe wakes up: the event loop's scheduling delay.

    ``clock`` returns monotonic seconds (injected; the loop's own ``loop.time`` by default).
    """

    def __init__(
        self,
        metrics: BrokerMetrics,
        interval_s: float = 0.5,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._metrics = metrics
        self._interval = interval_s
        self._clock = clock
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="loop-lag")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        clock = self._clock or asyncio.get_running_loop().time
        while True:
            expected = clock() + self._interval
            await asyncio.sleep(self._interval)
            lag = max(0.0, clock() - expected)
            self._metrics.event_loop_lag.set(lag)
            self._metrics.event_loop_lag_histogram.observe(lag)
