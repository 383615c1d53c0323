"""A running Scheduler given a new number of worker threads (a dynamic
background.threads): blocking runs under way finish in the old pool, new runs use the new
pool with its size."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

import pytest
from timer_helpers import tick

from tests.polling import until
from timer import MockClock, Scheduler


@pytest.fixture
async def scheduler(clock: MockClock) -> AsyncIterator[Scheduler]:
    scheduler = Scheduler(clock, threads=1, name="resize-scheduler")
    scheduler.start()
    yield scheduler
    await scheduler.shutdown()


async def test_a_grown_pool_runs_blocking_tasks_side_by_side(
    scheduler: Scheduler, clock: MockClock
) -> None:
    release = threading.Event()
    running: set[str] = set()
    lock = threading.Lock()

    def job(name: str) -> None:
        with lock:
            running.add(name)
        release.wait(timeout=10)

    scheduler.schedule_once("first", lambda: job("first"), 0, blocking=True)
    tick(scheduler, clock, 0)
    await until(lambda: running == {"first"})
    # one worker, busy: a second job would wait; two more workers take the next ones
    scheduler.resize(3)
    assert scheduler.threads == 3
    for name in ("second", "third"):
        scheduler.schedule_once(name, lambda n=name: job(n), 0, blocking=True)  # type: ignore[misc]
    tick(scheduler, clock, 0)
    await until(lambda: running == {"first", "second", "third"})
    release.set()
    await until(lambda: not scheduler.scheduled())


async def test_a_shrink_lets_the_run_under_way_finish(
    scheduler: Scheduler, clock: MockClock
) -> None:
    scheduler.resize(2)
    release = threading.Event()
    done: list[str] = []

    def slow() -> None:
        release.wait(timeout=10)
        done.append("slow")

    task = scheduler.schedule_once("slow", slow, 0, blocking=True)
    tick(scheduler, clock, 0)
    await until(lambda: task.run_count == 1)
    scheduler.resize(1)
    scheduler.schedule_once("quick", lambda: done.append("quick"), 0, blocking=True)
    tick(scheduler, clock, 0)
    await until(lambda: done == ["quick"])  # the new pool's one worker was free
    release.set()
    await until(lambda: done == ["quick", "slow"])


async def test_a_pool_needs_one_thread(scheduler: Scheduler) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        scheduler.resize(0)
