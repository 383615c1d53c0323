"""The controller's events and its single-consumer event queue.

Everything that changes controller state arrives here as an event: ZooKeeper watches
and session changes (enqueued from kazoo's thread with ``put_threadsafe``), requests
from the broker (controlled shutdown), and the controller's own start and stop. One task
takes events in order and awaits the handler for each, so handlers never interleave and
the ControllerContext needs no locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


class ControllerEvent:
    """Base class of every event."""


@dataclass
class Startup(ControllerEvent):
    """Run the first election."""


@dataclass
class ControllerChange(ControllerEvent):
    """/controller was created, changed or deleted."""


@dataclass
class Reelect(ControllerEvent):
    """Resign if needed and elect again (after /controller vanished)."""


@dataclass
class BrokerChange(ControllerEvent):
    """/brokers/ids children changed."""


@dataclass
class TopicChange(ControllerEvent):
    """/brokers/topics children changed."""


@dataclass
class PartitionModifications(ControllerEvent):
    """A topic's assignment znode changed (partitions added)."""

    topic: str


@dataclass
class IsrChangeNotification(ControllerEvent):
    """Leaders wrote /isr_change_notification entries."""


@dataclass
class SessionExpired(ControllerEvent):
    """Kazoo reported LOST: our ephemerals are gone; resign now."""


@dataclass
class NewSession(ControllerEvent):
    """Connected again after LOST: register the broker again and re-elect."""


@dataclass
class Reconnected(ControllerEvent):
    """Connected again within the same session: kazoo dropped its watches; re-arm them."""


@dataclass
class ControlledShutdown(ControllerEvent):
    """A broker asks to shut down cleanly; the result goes to ``reply``."""

    broker_id: int
    broker_epoch: int
    reply: asyncio.Future[object] = field(repr=False)


@dataclass
class Stop(ControllerEvent):
    """Sentinel: the consumer task ends after it."""


class ControllerEventManager:
    """One asyncio queue, one consumer task. Not thread safe except ``put_threadsafe``."""

    def __init__(self, handler: Callable[[ControllerEvent], Awaitable[None]]) -> None:
        self._handler = handler
        self._queue: asyncio.Queue[ControllerEvent] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.processed = 0

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._run(), name="controller-events")

    def put(self, event: ControllerEvent) -> None:
        self._queue.put_nowait(event)

    def put_threadsafe(self, event: ControllerEvent) -> None:
        """From kazoo's threads: hand the event to the loop; drop it if the loop is gone."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # loop closed between the check and the call
            loop.call_soon_threadsafe(self._queue.put_nowait, event)

    def queue_size(self) -> int:
        return self._queue.qsize()

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            if isinstance(event, Stop):
                return
            try:
                await self._handler(event)
            except asyncio.CancelledError:
                raise
            except Exception:
                # the loop boundary: one failed event must not stop the controller
                log.exception("controller event %r failed", event)
            self.processed += 1

    async def shutdown(self) -> None:
        if self._task is None:
            return
        self.put(Stop())
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
