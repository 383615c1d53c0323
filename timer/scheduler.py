"""Scheduler: named one-shot and periodic background tasks (Kafka's KafkaScheduler).

Storage's housekeeping (retention, flush, recovery-point and log-start-offset
checkpoints, delete-logs) and the broker's periodic checks (ISR expiry, preferred-leader
balance) run here. Each task has a name, an initial delay and, if periodic, a period.

How a task runs, chosen per task:

- a plain callable runs on the event loop; if it returns an awaitable (an ``async def``
  function), that is run as an asyncio task;
- ``blocking=True`` runs the callable in the scheduler's thread pool (``threads``
  workers, Kafka's ``background.threads``), for work that touches the disk.
  ``resize(n)`` gives a running scheduler a new pool of ``n`` workers for the runs that
  start from then on; the old pool finishes the runs it has and then ends.

Timing rules: a periodic task runs on a fixed-rate grid (initial due time plus whole
periods, like scheduleAtFixedRate). The next run is chosen when the previous one
finishes, so runs of one task never overlap; it is the first grid point after that
moment, so periods missed while a run overran (or the loop was blocked) are skipped
rather than run back to back. An exception is logged with the task's name and the task
stays scheduled: one failing housekeeping job must not stop the others or the broker.

Time comes from the injected clock through a SystemTimer, whose background driver is
started by ``start()``. Tests with a MockClock move the clock and call
``advance_clock()``.

Not thread-safe: schedule, cancel and shut down from the event loop's thread.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from timer.clock import Clock
from timer.system_timer import SystemTimer
from timer.timer_task import TimerTask

log = logging.getLogger(__name__)


class ScheduledTask(TimerTask):
    """One named job; ``cancel()`` stops it (a run in progress finishes)."""

    __slots__ = ("_scheduler", "blocking", "due_ms", "fn", "name", "period_ms", "run_count")

    def __init__(
        self,
        scheduler: Scheduler,
        name: str,
        fn: Callable[[], object],
        delay_ms: int,
        period_ms: int | None,
        blocking: bool,
        due_ms: int,
    ) -> None:
        super().__init__(delay_ms)
        self._scheduler = scheduler
        self.name = name
        self.fn = fn
        self.period_ms = period_ms
        self.blocking = blocking
        self.due_ms = due_ms
        self.run_count = 0

    @property
    def periodic(self) -> bool:
        return self.period_ms is not None

    def run(self) -> None:
        self._scheduler._launch(self)

    def __repr__(self) -> str:
        return f"ScheduledTask({self.name!r}, period_ms={self.period_ms})"


class Scheduler:
    """Named periodic and one-shot background tasks, started and stopped as a whole."""

    def __init__(
        self, clock: Clock | None = None, *, threads: int = 10, name: str = "kafka-scheduler"
    ) -> None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        self.name = name
        self._threads = threads
        self._timer = SystemTimer(name, clock=clock)
        self._clock = self._timer.clock
        self._executor: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in_flight: set[asyncio.Future[object]] = set()
        self._tasks: dict[str, ScheduledTask] = {}
        self._started = False

    @property
    def is_started(self) -> bool:
        return self._started

    @property
    def timer(self) -> SystemTimer:
        return self._timer

    def start(self) -> None:
        """Start the thread pool and the timer's driver on the running loop."""
        if self._started:
            raise RuntimeError(f"scheduler {self.name} is already started")
        self._loop = asyncio.get_running_loop()
        self._executor = ThreadPoolExecutor(self._threads, thread_name_prefix=self.name)
        self._timer.start()
        self._started = True

    @property
    def threads(self) -> int:
        """Workers of the pool blocking tasks run in."""
        return self._threads

    def resize(self, threads: int) -> None:
        """``threads`` workers for blocking runs starting from now on (a dynamic
        ``background.threads``); runs under way finish in the old pool."""
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        if threads == self._threads:
            return
        log.info("scheduler %s: %d threads (were %d)", self.name, threads, self._threads)
        self._threads = threads
        if self._executor is not None:
            old, self._executor = (
                self._executor,
                ThreadPoolExecutor(threads, thread_name_prefix=self.name),
            )
            old.shutdown(wait=False)

    def schedule(
        self,
        name: str,
        fn: Callable[[], object],
        delay_ms: int,
        period_ms: int | None = None,
        blocking: bool = False,
    ) -> ScheduledTask:
        """Run ``fn`` after ``delay_ms``, then every ``period_ms`` if given."""
        if not self._started:
            raise RuntimeError(f"scheduler {self.name} is not running")
        if delay_ms < 0:
            raise ValueError(f"task {name!r}: delay_ms must be >= 0, got {delay_ms}")
        if period_ms is not None and period_ms <= 0:
            raise ValueError(f"task {name!r}: period_ms must be > 0, got {period_ms}")
        due = self._clock.monotonic_ms() + delay_ms
        task = ScheduledTask(self, name, fn, delay_ms, period_ms, blocking, due)
        self._tasks[name] = task  # a later task with the same name replaces the entry
        self._timer.add(task)
        log.debug("scheduler %s: scheduled %s in %d ms", self.name, name, delay_ms)
        return task

    def schedule_once(
        self, name: str, fn: Callable[[], object], delay_ms: int = 0, blocking: bool = False
    ) -> ScheduledTask:
        return self.schedule(name, fn, delay_ms, None, blocking)

    def task(self, name: str) -> ScheduledTask | None:
        """The latest task scheduled under ``name`` while it is still scheduled."""
        task = self._tasks.get(name)
        return None if task is None or task.cancelled else task

    def scheduled(self) -> list[ScheduledTask]:
        """Every task still scheduled, by name."""
        return [t for _, t in sorted(self._tasks.items()) if not t.cancelled]

    def advance_clock(self) -> bool:
        """Run what is due now (tests with a MockClock; production uses the driver)."""
        return self._timer.advance_clock()

    # ---- running ------------------------------------------------------------------------

    def _launch(self, task: ScheduledTask) -> None:
        # Called by the timer on the loop when the task is due.
        if not self._started or task.cancelled:
            return
        task.run_count += 1
        if task.blocking:
            assert self._loop is not None and self._executor is not None
            self._track(task, self._loop.run_in_executor(self._executor, task.fn))
            return
        try:
            result = task.fn()
        except Exception:  # task boundary: log, keep the task scheduled
            log.exception("scheduler %s: task %s failed", self.name, task.name)
            self._reschedule(task)
            return
        if inspect.isawaitable(result):
            self._track(task, asyncio.ensure_future(result))
        else:
            self._reschedule(task)

    def _track(self, task: ScheduledTask, future: asyncio.Future[object]) -> None:
        self._in_flight.add(future)

        def done(fut: asyncio.Future[object]) -> None:
            self._in_flight.discard(fut)
            if not fut.cancelled() and fut.exception() is not None:
                log.error(
                    "scheduler %s: task %s failed",
                    self.name,
                    task.name,
                    exc_info=fut.exception(),
                )
            self._reschedule(task)

        future.add_done_callback(done)

    def _reschedule(self, task: ScheduledTask) -> None:
        if task.period_ms is None or task.cancelled or not self._started:
            if self._tasks.get(task.name) is task and task.period_ms is None:
                del self._tasks[task.name]
            return
        now = self._clock.monotonic_ms()
        period = task.period_ms
        # The next point of the task's fixed-rate grid strictly after now: missed
        # periods are skipped, never run in a burst.
        task.due_ms += period * max(1, (now - task.due_ms) // period + 1)
        task.delay_ms = task.due_ms - now
        self._timer.add(task)

    # ---- stopping -----------------------------------------------------------------------

    async def shutdown(self) -> None:
        """Cancel every pending task and wait for runs in progress to finish."""
        if not self._started:
            return
        self._started = False
        await self._timer.shutdown()
        while self._in_flight:
            await asyncio.wait(list(self._in_flight))
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
        self._tasks.clear()
        # A new timer, so the scheduler can be started again (as Kafka's can).
        self._timer = SystemTimer(self.name, clock=self._clock)
