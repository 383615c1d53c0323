"""Shared helpers for the timer tests: recording tasks, and moving a Scheduler's mock time."""

from __future__ import annotations

from typing import Any

from timer import Clock, MockClock, Scheduler, TimerTask


class Recorder(TimerTask):
    """A task that records (name, clock reading when run, its expiration) in a log."""

    __slots__ = ("clock", "log", "name")

    def __init__(
        self, name: Any, delay_ms: int, clock: Clock, log: list[tuple[Any, int, int]]
    ) -> None:
        super().__init__(delay_ms)
        self.name = name
        self.clock = clock
        self.log = log

    def run(self) -> None:
        self.log.append((self.name, self.clock.monotonic_ms(), self.expiration_ms))


def tick(scheduler: Scheduler, clock: MockClock, ms: int) -> None:
    """Advance the mock time by ``ms`` and let the scheduler run what that makes due."""
    clock.advance(ms)
    scheduler.advance_clock()
