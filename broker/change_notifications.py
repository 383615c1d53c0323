"""Following a queue of change notifications in ZooKeeper (Kafka's
ZkNodeChangeNotificationListener): one mechanism for dynamic configs and ACLs.

Whoever changes a shared entity writes it, then creates a persistent sequential znode
under the queue's root whose payload names what changed: ``/config/changes`` names a
config entity (``topics/t``, ``brokers/0``, ``users/alice``), ``/kafka-acl-changes`` and
``/kafka-acl-extended-changes`` a resource pattern. Every broker follows the queues:

- ``start`` handles every notification still there, so a broker that was down misses
  nothing (handling one twice is harmless: the entity is re-read whole, never patched);
- then a children watch on each root wakes the follower's task, which lists the root
  again (re-arming the watch) and handles each notification whose sequence is above the
  last one it handled, in sequence order: each change reaches every broker within a
  ZooKeeper round trip or two. The watch fires on kazoo's thread, which only wakes the
  task;
- a failure while handling (ZooKeeper unreachable) is logged and retried from the last
  sequence handled, after :data:`RETRY_BACKOFF_S`: the listing that failed armed no
  watch, so no watch would ever wake the task again;
- the connection coming back (kazoo's CONNECTED) wakes the task too: a session that
  expired took every watch with it, and the changes made meanwhile fired none;
- a notification whose payload cannot be read is skipped with a warning (once: its
  sequence counts as handled); one that vanished meanwhile is passed over;
- the notifications older than ``expiration_ms`` (Kafka: 15 minutes), unreadable ones
  included, are deleted by whichever broker sees them first (:func:`obsolete`).

What a notification means is its queue's: a :class:`NotificationQueue` says how to list,
read and delete the root's notifications and what to do with a payload (``handle``, given
it only once the sequence counts as handled, so a payload whose entity is malformed is
not retried forever).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, Protocol, TypeVar

from kazoo.protocol.states import KazooState

from zk.codec import ZkDataError

log = logging.getLogger(__name__)

P = TypeVar("P")

#: Kafka's change notification expiration (ZkConfigManager's and the ACL changes')
DEFAULT_EXPIRATION_MS: Final = 15 * 60 * 1000

#: how long after a failed pass (ZooKeeper unreachable) the follower tries again
RETRY_BACKOFF_S: Final = 1.0

#: a kazoo watch: called once, on kazoo's thread
Watch = Callable[[Any], None]


class SessionStates(Protocol):
    """Where connection states are announced (a KazooClient): the listener is called
    on kazoo's thread with each new state."""

    def add_listener(self, listener: Callable[[str], Any]) -> None: ...

    def remove_listener(self, listener: Callable[[str], Any]) -> None: ...


def obsolete(created_ms: Mapping[str, int], now_ms: int, expiration_ms: int) -> list[str]:
    """The notifications old enough to purge."""
    return sorted(name for name, ctime in created_ms.items() if now_ms - ctime > expiration_ms)


@dataclass(frozen=True)
class NotificationQueue(Generic[P]):
    """One root of sequential notifications and what its payloads mean."""

    #: the root, as log lines name it
    root: str
    #: the children's names, re-arming the children watch
    list_names: Callable[[Watch], Awaitable[list[str]]]
    #: a notification's sequence number, from its name
    sequence: Callable[[str], int]
    #: its payload (a ZkDataError when unreadable) and creation time (ms); None when it
    #: vanished
    read: Callable[[str], Awaitable[tuple[P | ZkDataError, int] | None]]
    #: act on a new notification's payload
    handle: Callable[[P], Awaitable[None]]
    delete: Callable[[list[str]], Awaitable[None]]


class NotificationFollower:
    """Follows ``queues`` (see the module docstring). ``what`` names the notifications in
    log lines ("config change", "ACL change"); ``states`` announces the ZooKeeper
    connection's states."""

    def __init__(
        self,
        what: str,
        queues: Sequence[NotificationQueue[Any]],
        states: SessionStates,
        time_ms: Callable[[], int],
        expiration_ms: int,
    ) -> None:
        self._what = what
        self._queues = tuple(queues)
        self._states = states
        self._time_ms = time_ms
        self._expiration_ms = expiration_ms
        self._last_sequence = dict.fromkeys((q.root for q in self._queues), -1)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._watch: Watch = lambda _event: None
        self._on_state: Callable[[str], None] = lambda _state: None

    async def start(self) -> None:
        """Handle every notification there is, then follow the queues in a task."""
        loop = asyncio.get_running_loop()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens
                loop.call_soon_threadsafe(self._wake.set)

        def watch(_event: object) -> None:  # on kazoo's thread: only wake the task
            wake()

        def on_state(state: str) -> None:  # on kazoo's thread too
            if state == KazooState.CONNECTED:
                wake()

        self._watch = watch
        self._on_state = on_state
        self._states.add_listener(on_state)
        await self._process()
        self._task = asyncio.create_task(self._run(), name=self._what.replace(" ", "-"))

    async def stop(self) -> None:
        self._states.remove_listener(self._on_state)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._process()
            except Exception:  # ZooKeeper trouble: retried, from the last sequence handled
                log.exception(
                    "processing %s notifications failed; retrying in %s s",
                    self._what,
                    RETRY_BACKOFF_S,
                )
                await asyncio.sleep(RETRY_BACKOFF_S)
                self._wake.set()

    async def _process(self) -> None:
        for queue in self._queues:
            await self._process_queue(queue)

    async def _process_queue(self, queue: NotificationQueue[Any]) -> None:
        names = await queue.list_names(self._watch)
        created: dict[str, int] = {}
        for name in names:
            sequence = queue.sequence(name)
            found = await queue.read(name)
            if found is None:
                continue
            payload, created[name] = found
            if sequence <= self._last_sequence[queue.root]:
                continue
            self._last_sequence[queue.root] = sequence
            if isinstance(payload, ZkDataError):  # not ours to understand
                log.warning("skipping %s notification %s: %s", self._what, name, payload)
                continue
            await queue.handle(payload)
        stale = obsolete(created, self._time_ms(), self._expiration_ms)
        if stale:
            await queue.delete(stale)
