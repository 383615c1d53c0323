"""Waiting for a condition in a test: the one polling helper, in a blocking and an asyncio form.

Both call ``predicate`` every ``interval`` seconds until it returns something other than
None or False, and return that value, so a predicate may hand back what it found (a
controller id 0 counts as found). A predicate that raises is polled again: a broker or
ZooKeeper may be restarting. After ``timeout`` seconds the test fails with an
AssertionError naming ``what`` and the last value or exception seen.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, cast, overload

T = TypeVar("T")

#: Long enough for a controller election or a broker restart on a loaded machine.
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_INTERVAL_S = 0.02


class _Poll:
    """The bookkeeping both forms share: the deadline, and the last outcome for the report."""

    def __init__(self, timeout: float, what: str) -> None:
        self.timeout = timeout
        self.what = what
        self.deadline = time.monotonic() + timeout
        self.last: object = None

    def found(self, value: object) -> bool:
        self.last = value
        return value is not None and value is not False

    def check_deadline(self) -> None:
        if time.monotonic() >= self.deadline:
            cause = self.last if isinstance(self.last, Exception) else None
            raise AssertionError(
                f"timed out after {self.timeout}s waiting for {self.what} (last: {self.last!r})"
            ) from cause


def wait_until(
    predicate: Callable[[], T | None],
    timeout: float = DEFAULT_TIMEOUT_S,
    what: str = "condition",
    *,
    interval: float = DEFAULT_INTERVAL_S,
) -> T:
    """Block (sleeping) until ``predicate()`` finds something; return it."""
    poll = _Poll(timeout, what)
    while True:
        try:
            value = predicate()
        except Exception as exc:
            poll.last = exc
        else:
            if poll.found(value):
                return cast(T, value)
        poll.check_deadline()
        time.sleep(interval)


@overload
async def until(
    predicate: Callable[[], Awaitable[T | None]],
    timeout: float = ...,
    what: str = ...,
    *,
    interval: float = ...,
) -> T: ...


@overload
async def until(
    predicate: Callable[[], T | None],
    timeout: float = ...,
    what: str = ...,
    *,
    interval: float = ...,
) -> T: ...


async def until(
    predicate: Callable[[], object],
    timeout: float = DEFAULT_TIMEOUT_S,
    what: str = "condition",
    *,
    interval: float = DEFAULT_INTERVAL_S,
) -> object:
    """Wait on the running loop until ``predicate()`` (or the awaitable it returns) finds
    something; return it. Other tasks run while this one sleeps."""
    poll = _Poll(timeout, what)
    while True:
        try:
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            poll.last = exc
        else:
            if poll.found(value):
                return value
        poll.check_deadline()
        await asyncio.sleep(interval)
