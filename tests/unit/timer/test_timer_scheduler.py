"""The Scheduler (KafkaScheduler), on the event loop with a MockClock.

Time only moves when a test advances the MockClock and calls ``advance_clock()``. The
timer's background driver runs too (start() starts it) but can only run what the mock
time makes due, so it never changes an outcome. Blocking tasks finish on a worker
thread, which the tests await by polling with a deadline.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator

import pytest
from timer_helpers import tick

from tests.polling import until
from timer import MockClock, Scheduler, SystemClock


@pytest.fixture
async def scheduler(clock: MockClock) -> AsyncIterator[Scheduler]:
    scheduler = Scheduler(clock, threads=2, name="test-scheduler")
    scheduler.start()
    yield scheduler
    await scheduler.shutdown()


async def test_periodic_task_runs_after_its_delay_then_every_period(
    scheduler: Scheduler, clock: MockClock
) -> None:
    runs: list[int] = []
    scheduler.schedule("flush", lambda: runs.append(clock.monotonic_ms()), 100, period_ms=30)
    tick(scheduler, clock, 99)
    assert runs == []
    tick(scheduler, clock, 1)
    for _ in range(3):
        tick(scheduler, clock, 30)
    assert runs == [10_100, 10_130, 10_160, 10_190]


async def test_a_late_periodic_task_catches_up_once_not_in_a_burst(
    scheduler: Scheduler, clock: MockClock
) -> None:
    runs: list[int] = []
    scheduler.schedule("retention", lambda: runs.append(clock.monotonic_ms()), 0, period_ms=10)
    tick(scheduler, clock, 0)
    tick(scheduler, clock, 45)  # four periods missed (e.g. the loop was blocked)
    tick(scheduler, clock, 0)  # the catch-up run was queued as due now
    tick(scheduler, clock, 10)
    assert runs == [10_000, 10_045, 10_055]


async def test_one_shot_task_runs_once_and_is_forgotten(
    scheduler: Scheduler, clock: MockClock
) -> None:
    runs: list[int] = []
    scheduler.schedule_once("startup", lambda: runs.append(1), delay_ms=5)
    assert scheduler.task("startup") is not None
    tick(scheduler, clock, 5)
    tick(scheduler, clock, 1_000)
    assert runs == [1] and scheduler.task("startup") is None


async def test_cancelled_task_stops(scheduler: Scheduler, clock: MockClock) -> None:
    runs: list[int] = []
    task = scheduler.schedule("isr-expiry", lambda: runs.append(1), 0, period_ms=10)
    tick(scheduler, clock, 0)
    task.cancel()
    tick(scheduler, clock, 100)
    assert runs == [1] and scheduler.task("isr-expiry") is None


async def test_blocking_task_runs_in_the_thread_pool_without_overlapping(
    scheduler: Scheduler, clock: MockClock
) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    release = threading.Event()

    def checkpoint() -> None:
        threads.append(threading.get_ident())
        release.wait(timeout=10)

    task = scheduler.schedule("checkpoint", checkpoint, 10, period_ms=10, blocking=True)
    tick(scheduler, clock, 10)
    await until(lambda: len(threads) == 1)
    tick(scheduler, clock, 50)  # still running: no second run starts alongside it
    assert task.run_count == 1
    release.set()
    await until(lambda: task.scheduled)  # rescheduled once the run finished ...
    assert task.due_ms == 10_070  # ... at the next point of its 10 ms grid
    tick(scheduler, clock, 9)
    assert task.run_count == 1
    tick(scheduler, clock, 1)
    await until(lambda: len(threads) == 2)
    assert loop_thread not in threads


async def test_async_task_is_run_on_the_loop(scheduler: Scheduler, clock: MockClock) -> None:
    runs: list[int] = []

    async def housekeeping() -> None:
        await asyncio.sleep(0)
        runs.append(clock.monotonic_ms())

    scheduler.schedule("async", housekeeping, 1, period_ms=1)
    tick(scheduler, clock, 1)
    await until(lambda: len(runs) == 1)
    task = scheduler.task("async")
    assert task is not None
    await until(lambda: task.scheduled)
    tick(scheduler, clock, 1)
    await until(lambda: len(runs) == 2)


async def test_a_failing_task_is_logged_and_stays_scheduled(
    scheduler: Scheduler, clock: MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    runs: list[int] = []

    def flaky() -> None:
        runs.append(1)
        raise OSError("disk full")

    async def flaky_async() -> None:
        raise OSError("async disk full")

    def flaky_blocking() -> None:
        raise OSError("blocking disk full")

    with caplog.at_level(logging.ERROR, logger="timer.scheduler"):
        scheduler.schedule("flaky", flaky, 0, period_ms=5)
        a = scheduler.schedule("flaky-async", flaky_async, 0, period_ms=5)
        b = scheduler.schedule("flaky-blocking", flaky_blocking, 0, period_ms=5, blocking=True)
        tick(scheduler, clock, 0)
        await until(lambda: a.scheduled and b.scheduled)
        tick(scheduler, clock, 5)
        await until(lambda: a.run_count == 2 and b.run_count == 2)
    assert runs == [1, 1]
    for text in ("disk full", "async disk full", "blocking disk full"):
        assert text in caplog.text


async def test_schedule_needs_a_started_scheduler(clock: MockClock) -> None:
    scheduler = Scheduler(clock)
    with pytest.raises(RuntimeError):
        scheduler.schedule("early", lambda: None, 0)
    scheduler.start()
    with pytest.raises(ValueError):
        scheduler.schedule("bad", lambda: None, -1)
    with pytest.raises(ValueError):
        scheduler.schedule("bad", lambda: None, 0, period_ms=0)
    await scheduler.shutdown()
    with pytest.raises(RuntimeError):
        scheduler.schedule("late", lambda: None, 0)


async def test_shutdown_cancels_pending_tasks_and_waits_for_running_ones(
    clock: MockClock,
) -> None:
    scheduler = Scheduler(clock)
    scheduler.start()
    runs: list[str] = []
    release = threading.Event()
    finished = threading.Event()

    def slow() -> None:
        release.wait(timeout=10)
        finished.set()

    pending = scheduler.schedule("pending", lambda: runs.append("pending"), 1_000, 1_000)
    scheduler.schedule("slow", slow, 0, blocking=True)
    tick(scheduler, clock, 0)
    stopping = asyncio.ensure_future(scheduler.shutdown())
    await asyncio.sleep(0)
    assert not stopping.done()  # waiting for the run in progress
    release.set()
    await asyncio.wait_for(stopping, timeout=10)
    assert finished.is_set() and not scheduler.is_started
    assert pending.cancelled and not pending.scheduled
    tick(scheduler, clock, 10_000)
    assert runs == []


async def test_the_timer_driver_runs_tasks_in_real_time() -> None:
    # The production path: SystemClock and the background driver, no advance_clock().
    scheduler = Scheduler(SystemClock())
    scheduler.start()
    try:
        runs: list[int] = []
        scheduler.schedule("tick", lambda: runs.append(1), 2, period_ms=2)
        await until(lambda: len(runs) >= 3, timeout=10)
    finally:
        await scheduler.shutdown()
