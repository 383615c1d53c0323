"""Timer tasks and the entry through which a task sits in a bucket.

In Kafka a TimerTask and its TimerTaskEntry are two objects that point at each other.
Here the list links live *in* the task (an intrusive list, as in the Linux kernel's
list_head): ``TimerTaskEntry`` holds the expiration and the links, ``TimerTask``
extends it with the delay, the cancelled flag and ``run``. Scheduling a timeout then
allocates nothing but the task the caller already has (a DelayedOperation *is* a
TimerTask), and cancelling one unlinks it in O(1) and frees it at once. With a million
pending timeouts this is what keeps the wheel smaller than a heap of (deadline, seq,
callback) tuples or of asyncio TimerHandles.

Links never dangle and never form cycles with dead objects: an entry outside any bucket
points both links at the shared ``DETACHED`` sentinel and has ``bucket is None``. (A link
left pointing at an old neighbour would keep that neighbour alive, and two stale
neighbours pointing at each other would need the cyclic garbage collector to free.)

Not thread-safe: tasks are added, cancelled and run on the event loop's thread only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from timer.timer_task_list import TimerTaskList


class TimerTaskEntry:
    """The part of a task that lives in a bucket: its expiration and its list links.

    Invariant: ``bucket is None`` exactly when ``next`` and ``prev`` are ``DETACHED``;
    otherwise the entry is linked into ``bucket``'s circular list.
    """

    __slots__ = ("bucket", "expiration_ms", "next", "prev")

    expiration_ms: int
    bucket: TimerTaskList | None
    next: TimerTask
    prev: TimerTask


class TimerTask(TimerTaskEntry, ABC):
    """Work to run once ``delay_ms`` after it is added to a SystemTimer.

    Cancelling is permanent: a cancelled task is taken out of its bucket at once, never
    runs, and adding it again is refused. A task that has run (and was not cancelled) may
    be added again, which is how periodic work reschedules itself.
    """

    __slots__ = ("cancelled", "delay_ms")

    def __init__(self, delay_ms: int) -> None:
        # Fields are set here rather than in a TimerTaskEntry.__init__: one call fewer per
        # task on the hot path.
        self.delay_ms = delay_ms
        self.cancelled = False
        self.expiration_ms = -1
        self.bucket = None
        self.next = self.prev = DETACHED

    @abstractmethod
    def run(self) -> None:
        """Called on the event loop once the task's expiration has passed."""

    def cancel(self) -> None:
        """Never run this task; remove it from its bucket now (O(1))."""
        self.cancelled = True
        bucket = self.bucket
        if bucket is not None:
            # bucket.remove(self), inlined: in a purgatory nearly every operation ends
            # here (completed before its timeout), so this is the commonest timer call.
            prev = self.prev
            nxt = self.next
            prev.next = nxt
            nxt.prev = prev
            self.next = self.prev = DETACHED
            self.bucket = None
            bucket.size -= 1

    @property
    def scheduled(self) -> bool:
        """True while the task waits in a bucket."""
        return self.bucket is not None


class _Sentinel(TimerTask):
    """A list head, or the shared DETACHED marker: never runs, never in a bucket."""

    __slots__ = ()

    def run(self) -> None:  # pragma: no cover - would be a linked-list bug
        raise RuntimeError("a list sentinel was run as a timer task")


def new_sentinel() -> TimerTask:
    """A fresh sentinel whose links point at itself (an empty circular list)."""
    node = _Sentinel.__new__(_Sentinel)
    node.delay_ms = 0
    node.cancelled = True
    node.expiration_ms = -1
    node.bucket = None
    node.next = node.prev = node
    return node


# What every detached entry links to. Created without __init__ because __init__ itself
# refers to it.
DETACHED: TimerTask = new_sentinel()
