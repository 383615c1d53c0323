"""Time, injected.

Everything in timer/ (and the packages that use it) reads time through a Clock, never
through the time module, so that tests can move time forward by hand (MockClock) and a
purgatory test that spans hours runs in microseconds.

Two readings are offered, both in whole milliseconds:

- ``monotonic_ms()``: a clock that never goes backwards, with an arbitrary origin. All
  deadlines (timer expirations, scheduler periods) are computed on it.
- ``time_ms()``: wall-clock milliseconds since the Unix epoch, for values that leave the
  process (record timestamps, log file times). It may jump.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """The source of time every timer component is given."""

    def monotonic_ms(self) -> int:
        """Milliseconds on a clock that never goes backwards (arbitrary origin)."""
        ...

    def time_ms(self) -> int:
        """Wall-clock milliseconds since the Unix epoch."""
        ...


class SystemClock:
    """The real clocks of the machine (CLOCK_MONOTONIC and the wall clock).

    ``monotonic_ms`` is on the same base as ``asyncio``'s ``loop.time()`` (both read
    time.monotonic), so deadlines computed here line up with the event loop's timers.
    """

    __slots__ = ()

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def time_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def __repr__(self) -> str:
        return "SystemClock()"


class MockClock:
    """A clock that only moves when a test says so.

    Both readings advance together, so a test can check wall-clock stamps as well as
    deadlines. Not thread-safe (tests drive it from one thread).
    """

    __slots__ = ("_monotonic_ms", "_time_ms")

    # A fixed, plausible epoch (2020-09-13) so wall-clock values look like real ones.
    DEFAULT_WALL_MS = 1_600_000_000_000

    def __init__(self, monotonic_ms: int = 0, time_ms: int = DEFAULT_WALL_MS) -> None:
        self._monotonic_ms = monotonic_ms
        self._time_ms = time_ms

    def monotonic_ms(self) -> int:
        return self._monotonic_ms

    def time_ms(self) -> int:
        return self._time_ms

    def advance(self, ms: int) -> None:
        """Move both clocks forward by ``ms`` milliseconds (never backwards)."""
        if ms < 0:
            raise ValueError(f"a clock cannot go backwards (advance by {ms} ms)")
        self._monotonic_ms += ms
        self._time_ms += ms

    def __repr__(self) -> str:
        return f"MockClock(monotonic_ms={self._monotonic_ms}, time_ms={self._time_ms})"
