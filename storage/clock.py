"""The clock storage reads time from: ``timer.clock`` (docs/architecture.md, "Time").

Storage needs only wall-clock milliseconds (segment ages for roll and retention, flush
intervals, LogAppendTime), so it asks for the narrow :class:`Clock` protocol below;
``timer.clock.SystemClock`` and ``timer.clock.MockClock`` both satisfy it.
"""

from __future__ import annotations

from typing import Protocol

from timer.clock import MockClock, SystemClock


class Clock(Protocol):
    def time_ms(self) -> int: ...


__all__ = ["Clock", "MockClock", "SystemClock"]
