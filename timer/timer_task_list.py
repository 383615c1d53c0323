"""A bucket of the timing wheel: the tasks that expire within one tick.

Layout: a circular doubly linked list through a sentinel ``root`` (``root.next`` is the
oldest task, ``root.prev`` the newest), so add and remove are O(1) with no special
cases for an empty list or the ends. The links are the tasks' own fields (see
timer_task): the list allocates nothing per task.

A bucket carries one expiration, the start of the tick it covers. The wheel reuses a
bucket for a later tick once it has been flushed; ``set_expiration`` reports whether the
expiration changed, which tells the wheel to put the bucket (not its tasks) into the
delay queue again. ``expiration_ms == -1`` means "flushed, not queued".

Not thread-safe: used on the event loop's thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from timer.timer_task import DETACHED, TimerTask, new_sentinel


class TimerTaskList:
    """One bucket: a doubly linked list of tasks sharing a tick, with that tick's start."""

    __slots__ = ("expiration_ms", "root", "size")

    def __init__(self) -> None:
        self.root: TimerTask = new_sentinel()
        self.expiration_ms = -1
        self.size = 0

    def set_expiration(self, expiration_ms: int) -> bool:
        """Set the tick this bucket now covers; True if that changed (queue it again)."""
        changed = self.expiration_ms != expiration_ms
        self.expiration_ms = expiration_ms
        return changed

    def add(self, task: TimerTask) -> None:
        """Append ``task``, first taking it out of whatever bucket held it."""
        old = task.bucket
        if old is not None:
            old.remove(task)
        root = self.root
        tail = root.prev
        task.next = root
        task.prev = tail
        tail.next = task
        root.prev = task
        task.bucket = self
        self.size += 1

    def remove(self, task: TimerTask) -> None:
        """Unlink ``task`` if it is in this bucket (a no-op otherwise)."""
        if task.bucket is not self:
            return
        prev = task.prev
        nxt = task.next
        prev.next = nxt
        nxt.prev = prev
        task.next = task.prev = DETACHED
        task.bucket = None
        self.size -= 1

    def flush(self, reinsert: Callable[[TimerTask], None]) -> None:
        """Take every task out, oldest first, and hand each to ``reinsert``.

        The head is unlinked before ``reinsert`` sees it, and the next head is read only
        afterwards, so ``reinsert`` (which may run tasks, which may cancel or add other
        tasks) never walks a stale link. ``reinsert`` never puts a task back into this
        bucket: by the time a bucket is flushed the wheel's clock has reached its tick, so
        its tasks either run or go to a finer wheel. The bucket ends empty and unqueued.
        """
        root = self.root
        task = root.next
        while task is not root:
            # Unlinking the head, inlined (this loop is the expiry hot path).
            nxt = task.next
            root.next = nxt
            nxt.prev = root
            task.next = task.prev = DETACHED
            task.bucket = None
            self.size -= 1
            reinsert(task)
            task = root.next
        self.expiration_ms = -1

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[TimerTask]:
        """The tasks, oldest first (a snapshot, safe to cancel while iterating)."""
        tasks: list[TimerTask] = []
        root = self.root
        task = root.next
        while task is not root:
            tasks.append(task)
            task = task.next
        return iter(tasks)

    def __repr__(self) -> str:
        return f"TimerTaskList(expiration_ms={self.expiration_ms}, size={self.size})"
