"""BackgroundTasks: the tasks a component starts and must cancel when it stops.

A task that nobody holds may be garbage-collected mid-flight, and one that nobody cancels
outlives the broker's shutdown (it then fails against closed sockets, or keeps the
event loop from closing). So every task a broker component starts without awaiting it
is spawned here, by the component that owns it; the owner's stop ``close()``\\ s it, which
cancels whatever is still running and waits for it to unwind. After ``close()`` nothing
new starts: a late ``spawn`` closes its coroutine unrun. Event-loop bound.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class BackgroundTasks:
    """A named set of running tasks, cancelled together by ``close()``."""

    __slots__ = ("_closed", "_tasks", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any] | None:
        """Run ``coro`` as a task held here until it ends (or ``close()`` cancels it);
        None, with ``coro`` closed unrun, once closed."""
        if self._closed:
            coro.close()
            log.debug("%s: not starting %s, shutting down", self.name, name)
            return None
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def __len__(self) -> int:
        return len(self._tasks)

    async def close(self) -> None:
        """Cancel every task still running and wait until they have all ended."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
