"""The seam for blocking disk and CPU work on the broker (fsync, loading a log or a batch
of __consumer_offsets records, deleting directories): ``RunBlocking`` is how a component
is given a way to run such a function off the event loop, ``in_thread`` the real one (a
worker thread); unit tests pass a runner that calls the function inline.

ZooKeeper calls do not go through here: ``zk.facade.ZkFacade`` is their one bridge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

T = TypeVar("T")


class RunBlocking(Protocol):
    """Runs a blocking function off the event loop and awaits its result."""

    def __call__(self, fn: Callable[[], T], /) -> Awaitable[T]: ...


async def in_thread(fn: Callable[[], T]) -> T:
    return await asyncio.to_thread(fn)
