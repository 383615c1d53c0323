"""The controller's one bridge from its event task to the blocking ZooKeeper client.

``KafkaZkClient`` blocks on kazoo's replies; the controller's handlers run on the event
loop and must not. Every ZooKeeper call of the controller's modules goes through
``in_zk_thread`` (as ``await self._zk(self.zk.method, args...)``), which runs it in a
worker thread and hands back its result or raises its exception on the loop. Keeping the
crossing in one place means the day the client becomes asynchronous only this function
and its callers' spelling change, not the handlers' logic.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def in_zk_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run the blocking ZooKeeper call ``fn(*args)`` in a worker thread."""
    return await asyncio.to_thread(fn, *args)
