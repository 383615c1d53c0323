"""The delay queue: buckets ordered by expiration (Kafka's DelayQueue[TimerTaskList]).

Buckets, not tasks, are queued: a million timeouts spread over two seconds fill at most a
few dozen buckets, so the heap stays tiny and each heap operation is paid once per
bucket per tick, not once per task.

Heap items are ``(expiration_ms, seq, bucket)``; ``seq`` breaks ties so buckets are never
compared. A bucket is pushed each time its expiration changes, so an item whose
expiration no longer matches its bucket's is stale (the bucket was flushed and reused, or
emptied and re-armed) and is dropped when it reaches the top.

Not thread-safe: used on the event loop's thread only.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

from timer.timer_task_list import TimerTaskList


class DelayQueue:
    """A min-heap of buckets by expiration, with a hook for "a new earliest bucket"."""

    __slots__ = ("_heap", "_seq", "on_new_head")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, TimerTaskList]] = []
        self._seq = itertools.count()
        # Called with the expiration when an offered bucket becomes the earliest one, so
        # a driver sleeping until the old head can wake up sooner.
        self.on_new_head: Callable[[int], None] | None = None

    def offer(self, bucket: TimerTaskList) -> None:
        """Queue ``bucket`` at its current expiration."""
        expiration = bucket.expiration_ms
        heap = self._heap
        heapq.heappush(heap, (expiration, next(self._seq), bucket))
        hook = self.on_new_head
        if hook is not None and heap[0][2] is bucket:
            hook(expiration)

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap and heap[0][2].expiration_ms != heap[0][0]:
            heapq.heappop(heap)

    def peek_expiration(self) -> int | None:
        """The earliest live bucket's expiration, or None when nothing is queued."""
        self._drop_stale()
        heap = self._heap
        return heap[0][0] if heap else None

    def poll(self, now_ms: int) -> TimerTaskList | None:
        """Remove and return the earliest bucket if it has expired by ``now_ms``."""
        self._drop_stale()
        heap = self._heap
        if heap and heap[0][0] <= now_ms:
            return heapq.heappop(heap)[2]
        return None

    def clear(self) -> None:
        self._heap.clear()

    def __len__(self) -> int:
        """Live buckets queued (stale items excluded; O(n), for tests and metrics)."""
        return sum(1 for exp, _, bucket in self._heap if bucket.expiration_ms == exp)

    def expirations(self) -> list[int]:
        """Expirations of the live queued buckets, earliest first (for tests)."""
        return sorted(exp for exp, _, bucket in self._heap if bucket.expiration_ms == exp)
