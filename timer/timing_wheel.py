"""The hierarchical timing wheel (Kafka's TimingWheel).

One level is a ring of ``wheel_size`` buckets, each covering ``tick_ms``; the level spans
``interval = tick_ms * wheel_size``. A task expiring at ``t`` belongs to the bucket
``(t // tick_ms) % wheel_size``: the index depends on ``t`` alone, never on the current
time, so every task of one tick lands in the same bucket however late it was added (the
rolling-wheel picture), and a slot is reused for the tick ``interval`` later
only after it has been flushed.

``current_time`` is the start of the level's current tick (always a multiple of
``tick_ms``). A task that expires before ``current_time + tick_ms`` is already due and is
refused (the caller runs it); one beyond ``current_time + interval`` goes to the overflow
wheel, a level whose tick is this level's whole interval, created on demand when the first
such task arrives. Levels stack until one spans the deadline: with tick 1 ms and 20
buckets, level 0 spans 20 ms, level 1 400 ms, level 2 8 s, level 3 160 s, level 4 ~53 min.

The wheels only sort tasks into buckets; the shared delay queue decides when a bucket is
due. When one is, SystemTimer advances the clock to the bucket's expiration and pushes
its tasks back through ``add``: now that time has moved they either run or fall to a finer
level (the cascade). A task in level ``L`` is therefore moved at most ``L`` times.

Not thread-safe: used on the event loop's thread only.
"""

from __future__ import annotations

from collections.abc import Iterator

from timer.delay_queue import DelayQueue
from timer.timer_task import TimerTask
from timer.timer_task_list import TimerTaskList


class TimingWheel:
    """One level of the hierarchy; ``overflow`` is the next, coarser level (or None)."""

    __slots__ = (
        "buckets",
        "current_time",
        "interval",
        "overflow",
        "queue",
        "tick_ms",
        "wheel_size",
    )

    def __init__(self, tick_ms: int, wheel_size: int, start_ms: int, queue: DelayQueue) -> None:
        if tick_ms < 1:
            raise ValueError(f"tick_ms must be at least 1, got {tick_ms}")
        if wheel_size < 2:
            raise ValueError(f"wheel_size must be at least 2, got {wheel_size}")
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval = tick_ms * wheel_size
        self.current_time = start_ms - start_ms % tick_ms
        self.buckets = [TimerTaskList() for _ in range(wheel_size)]
        self.overflow: TimingWheel | None = None
        self.queue = queue

    def _add_overflow_wheel(self) -> TimingWheel:
        overflow = TimingWheel(self.interval, self.wheel_size, self.current_time, self.queue)
        self.overflow = overflow
        return overflow

    def add(self, task: TimerTask) -> bool:
        """Put ``task`` into the bucket of its expiration, on the finest level that spans it.

        Returns False, leaving the task untouched, when it is cancelled or already due
        (expires before the end of the current tick); the caller then runs it or drops it.
        """
        if task.cancelled:
            return False
        expiration = task.expiration_ms
        wheel = self
        if expiration < wheel.current_time + wheel.tick_ms:
            return False
        # Climb until a level spans the expiration. (No expired check above level 0: a
        # coarser level's current time is never later than a finer one's, so a task too
        # far for level L-1 is past level L's current tick too.)
        while expiration >= wheel.current_time + wheel.interval:
            overflow = wheel.overflow
            wheel = overflow if overflow is not None else wheel._add_overflow_wheel()
        tick = wheel.tick_ms
        virtual_id = expiration // tick
        bucket = wheel.buckets[virtual_id % wheel.wheel_size]
        # bucket.add(task) and bucket.set_expiration(...), inlined: this is the hot path
        # of every timeout (two Python calls are a fifth of its cost).
        old = task.bucket
        if old is not None:
            old.remove(task)
        root = bucket.root
        tail = root.prev
        task.next = root
        task.prev = tail
        tail.next = task
        root.prev = task
        task.bucket = bucket
        bucket.size += 1
        # A changed expiration means the bucket was empty and unqueued (flushed since its
        # last tick): queue it for its new tick.
        bucket_expiration = virtual_id * tick
        if bucket.expiration_ms != bucket_expiration:
            bucket.expiration_ms = bucket_expiration
            self.queue.offer(bucket)
        return True

    def advance_clock(self, time_ms: int) -> None:
        """Move every level's current tick up to ``time_ms`` (rounded down per level)."""
        wheel: TimingWheel | None = self
        while wheel is not None and time_ms >= wheel.current_time + wheel.tick_ms:
            wheel.current_time = time_ms - time_ms % wheel.tick_ms
            time_ms = wheel.current_time
            wheel = wheel.overflow

    def levels(self) -> Iterator[TimingWheel]:
        """This wheel and every overflow wheel above it, finest first."""
        wheel: TimingWheel | None = self
        while wheel is not None:
            yield wheel
            wheel = wheel.overflow

    @property
    def size(self) -> int:
        """Tasks held by this level and the levels above it."""
        return sum(bucket.size for level in self.levels() for bucket in level.buckets)

    def __repr__(self) -> str:
        return (
            f"TimingWheel(tick_ms={self.tick_ms}, wheel_size={self.wheel_size}, "
            f"current_time={self.current_time})"
        )
