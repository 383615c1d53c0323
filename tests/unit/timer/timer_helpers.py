"""Shared helpers for the timer tests: recording tasks and a bounded poll."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from timer import Clock, TimerTask


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


async def wait_until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Poll ``condition`` on the running loop until true; fail after ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        await asyncio.sleep(0.001)
