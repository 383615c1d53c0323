"""SystemTimer: the timing wheel, its delay queue, and what drives them on asyncio.

Adding a task stamps ``expiration_ms = clock.monotonic_ms() + delay_ms`` and gives it to
the wheel. ``advance_clock()`` polls the delay queue for every bucket whose expiration has
passed; for each, oldest first, it advances the wheels to that expiration and flushes the
bucket through ``_reinsert``: the wheel refuses a task that is now due, and then it runs;
otherwise the task drops to a finer level (the cascade of Kafka's hierarchical wheel).
Because the clock is advanced one bucket at a time, a jump of hours (a MockClock in a test,
or a loop that was blocked) still cascades every task through the levels in deadline order.

Where tasks run: always inside ``advance_clock``, on the event loop. A task that is
already due when added is not run inside ``add`` (that would re-enter the caller, e.g. a
purgatory in the middle of try_complete_else_watch); it goes into the ``_due`` bucket,
which is queued as expiring now and so runs at the next advance, like Kafka handing it to
its executor thread.

Who advances: in production, ``start()`` spawns a background task that loops on
``poll(max_wait_ms)``: sleep on the event loop until the earliest bucket is due (or a new
earlier bucket is queued, or ``max_wait_ms`` passes), then ``advance_clock()``. The loop
timer that ends the sleep advances the clock itself, so expiry is not held up by the
loop iteration it takes the task to resume. Tests with a MockClock skip the background
task and call ``advance_clock()`` after moving the clock.

Not thread-safe: every method must be called on the event loop's thread (from another
thread, hand over with ``loop.call_soon_threadsafe``). This replaces Kafka's read-write
lock: adds and advances cannot interleave because each runs to completion.
"""

from __future__ import annotations

import asyncio
import logging

from timer.clock import Clock, SystemClock
from timer.delay_queue import DelayQueue
from timer.timer_task import TimerTask
from timer.timer_task_list import TimerTaskList
from timer.timing_wheel import TimingWheel

log = logging.getLogger(__name__)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class SystemTimer:
    """A hierarchical timing wheel driven on the event loop (Kafka's SystemTimer)."""

    def __init__(
        self,
        name: str = "timer",
        *,
        tick_ms: int = 1,
        wheel_size: int = 20,
        clock: Clock | None = None,
        start_ms: int | None = None,
        max_wait_ms: int = 200,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else SystemClock()
        # Bound once: add() reads the clock per task.
        self._now = self._clock.monotonic_ms
        self._queue = DelayQueue()
        self._queue.on_new_head = self._on_new_head
        start = start_ms if start_ms is not None else self._now()
        self._wheel = TimingWheel(tick_ms, wheel_size, start, self._queue)
        self._due = TimerTaskList()
        self._max_wait_ms = max_wait_ms
        self._waiter: asyncio.Future[None] | None = None
        self._waiter_deadline = 0
        self._expired_in_callback = False
        self._driver: asyncio.Task[None] | None = None
        self._closed = False
        #: the loop of the first poll, the timer's one loop: looked up once (on Python
        #: 3.11 asyncio.get_running_loop makes a system call, and poll runs per wake-up)
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def wheel(self) -> TimingWheel:
        """The finest level (its ``levels()`` walks the overflow wheels)."""
        return self._wheel

    @property
    def queue(self) -> DelayQueue:
        return self._queue

    @property
    def size(self) -> int:
        """Tasks waiting to run (Kafka's taskCounter; the purgatory's numDelayed)."""
        return self._wheel.size + self._due.size

    def __len__(self) -> int:
        return self.size

    # ---- adding -------------------------------------------------------------------------

    def add(self, task: TimerTask) -> None:
        """Schedule ``task`` to run ``task.delay_ms`` from now.

        A task already in a bucket is moved; a cancelled task is ignored; adding after
        shutdown is ignored (logged), so a late completion path cannot resurrect work.
        """
        if self._closed:
            log.debug("timer %s is shut down; dropping %r", self.name, task)
            return
        task.expiration_ms = task.delay_ms + self._now()
        if self._wheel.add(task) or task.cancelled:
            return
        # Already due: run at the next advance, not inside the caller (see module doc).
        due = self._due
        due.add(task)
        if due.set_expiration(self._wheel.current_time):
            self._queue.offer(due)

    def _reinsert(self, task: TimerTask) -> None:
        # A flushed task goes back through the wheel; refused means due now. The due
        # test is made here first (it is the wheel's own first test) so that a task of a
        # level-0 bucket, the common case, runs without a call into the wheel.
        wheel = self._wheel
        if task.expiration_ms >= wheel.current_time + wheel.tick_ms and wheel.add(task):
            return  # cascaded to a finer level
        if task.cancelled:
            return
        try:
            task.run()
        except Exception:  # a failing task must not stop the others in the bucket
            log.exception("timer %s: task %r failed", self.name, task)

    # ---- advancing ----------------------------------------------------------------------

    def advance_clock(self) -> bool:
        """Run or cascade everything due by now; True if any bucket had expired."""
        queue = self._queue
        now = self._now()
        bucket = queue.poll(now)
        wheel = self._wheel
        if bucket is None:
            # Nothing due: bring the wheels' current time up to now anyway. Safe, since
            # every queued bucket expires after now (so stays beyond the current tick),
            # and it spares tasks added after an idle spell a climb to a coarse level
            # whose bucket is already overdue (Kafka's wheel lags until a bucket expires).
            wheel.advance_clock(now)
            return False
        reinsert = self._reinsert
        while bucket is not None:
            wheel.advance_clock(bucket.expiration_ms)
            bucket.flush(reinsert)
            # Tasks run while flushing may take time; anything that fell due meanwhile is
            # handled now, in order, rather than after another trip through the loop.
            bucket = queue.poll(self._now())
        return True

    def next_expiration_ms(self) -> int | None:
        """When the earliest queued bucket is due (None when nothing is scheduled)."""
        return self._queue.peek_expiration()

    def _on_new_head(self, expiration_ms: int) -> None:
        # Called from inside add(): only wake the driver, never advance here (that would
        # run tasks inside the caller of add).
        waiter = self._waiter
        if waiter is not None and expiration_ms < self._waiter_deadline:
            _wake(waiter)

    def _on_wait_over(self, waiter: asyncio.Future[None]) -> None:
        # The loop timer of poll(): advance right here, in the timer callback, instead of
        # one loop iteration later when the waiting task resumes. That iteration can be
        # a long one (other callbacks, other tasks' steps), and expiry is on time only if
        # it does not wait for it.
        try:
            self._expired_in_callback = self.advance_clock() or self._expired_in_callback
        finally:
            _wake(waiter)

    async def poll(self, timeout_ms: int) -> bool:
        """Wait up to ``timeout_ms`` for a bucket to come due, then ``advance_clock()``.

        Kafka's advanceClock(timeoutMs) with the blocking DelayQueue.poll replaced by a
        future on the event loop: woken by a loop timer at the earliest bucket's
        expiration (whose callback advances the clock at once), or as soon as a bucket
        earlier than that is queued. Always yields to the loop at least once, so a
        driver looping on it cannot starve other tasks. One task polls a timer: its own
        driver (``start()``) or the purgatory reaper that owns it, not both.
        """
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        now = self._now()
        head = self._queue.peek_expiration()
        wait_ms = timeout_ms if head is None else min(timeout_ms, head - now)
        if wait_ms > 0:
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiter = waiter
            self._waiter_deadline = now + wait_ms
            handle = loop.call_later(wait_ms / 1000.0, self._on_wait_over, waiter)
            try:
                await waiter
            finally:
                handle.cancel()
                self._waiter = None
        else:
            await asyncio.sleep(0)
        expired, self._expired_in_callback = self._expired_in_callback, False
        return self.advance_clock() or expired

    # ---- the background driver ----------------------------------------------------------

    async def run(self) -> None:
        """Advance the clock for as long as the timer lives (the background driver)."""
        while not self._closed:
            await self.poll(self._max_wait_ms)

    def start(self) -> None:
        """Spawn the background driver on the running loop (idempotent)."""
        if self._closed:
            raise RuntimeError(f"timer {self.name} is shut down")
        if self._driver is None:
            self._driver = asyncio.get_running_loop().create_task(
                self.run(), name=f"timer-{self.name}"
            )

    @property
    def running(self) -> bool:
        return self._driver is not None and not self._driver.done()

    def cancel_all(self) -> int:
        """Cancel every scheduled task (none will run); returns how many there were."""
        cancelled = 0
        buckets = [self._due]
        for level in self._wheel.levels():
            buckets.extend(level.buckets)
        for bucket in buckets:
            for task in bucket:
                task.cancel()
                cancelled += 1
            bucket.expiration_ms = -1
        self._queue.clear()
        return cancelled

    async def shutdown(self) -> None:
        """Stop the driver and cancel every task: nothing is left scheduled."""
        self._closed = True
        driver, self._driver = self._driver, None
        if driver is not None:
            driver.cancel()
            # wait() rather than await: the driver's own cancellation is not ours.
            await asyncio.wait([driver])
        self.cancel_all()

    def __repr__(self) -> str:
        return f"SystemTimer(name={self.name!r}, size={self.size})"
