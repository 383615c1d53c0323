"""New log.cleaner.* settings on a running broker: the thread tasks scheduled and
cancelled to the new count (a new backoff reschedules them all), the I/O rate and the
dedupe buffer taken by the next chunk and pass."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from storage.cleaner_manager import LogCleaner, cleaner_thread_name, resize_cleaner_threads
from storage.clock import MockClock
from storage.config import CleanerConfig


class _Task:
    def __init__(self, period_ms: int | None) -> None:
        self.period_ms = period_ms
        self.cancelled = False

    def cancel(self) -> bool:
        self.cancelled = True
        return True


class _Scheduler:
    """Records the tasks by name, as timer.Scheduler keeps them."""

    def __init__(self) -> None:
        self.tasks: dict[str, _Task] = {}

    def schedule(
        self,
        name: str,
        fn: Callable[[], object],
        delay_ms: int,
        period_ms: int | None = None,
        blocking: bool = False,
    ) -> _Task:
        assert blocking and delay_ms == 0
        self.tasks[name] = task = _Task(period_ms)
        return task

    def task(self, name: str) -> _Task | None:
        task = self.tasks.get(name)
        return None if task is None or task.cancelled else task

    def live(self) -> dict[str, int | None]:
        return {n: t.period_ms for n, t in sorted(self.tasks.items()) if not t.cancelled}


def _started(config: CleanerConfig) -> tuple[_Scheduler, LogCleaner]:
    scheduler, cleaner = _Scheduler(), LogCleaner(config, MockClock(), list)
    for i in range(config.threads):  # as LogManager.scheduled_tasks schedules them
        scheduler.schedule(cleaner_thread_name(i), cleaner.run_until_idle, 0, 15_000, True)
    return scheduler, cleaner


def _names(*indexes: int, period: int = 15_000) -> dict[str, int | None]:
    return {cleaner_thread_name(i): period for i in indexes}


def test_more_threads_are_scheduled_and_fewer_cancelled() -> None:
    old = CleanerConfig(threads=1, backoff_ms=15_000)
    scheduler, cleaner = _started(old)
    grown = dataclasses.replace(old, threads=2)
    resize_cleaner_threads(scheduler, cleaner, old, grown)
    assert scheduler.live() == _names(0, 1)
    assert cleaner.thread_count == 2
    shrunk = dataclasses.replace(old, threads=1)
    first = scheduler.tasks[cleaner_thread_name(0)]
    resize_cleaner_threads(scheduler, cleaner, grown, shrunk)
    assert scheduler.live() == _names(0)
    assert scheduler.tasks[cleaner_thread_name(0)] is first  # the one kept runs on
    assert cleaner.thread_count == 1


def test_a_new_backoff_reschedules_every_thread() -> None:
    old = CleanerConfig(threads=2, backoff_ms=15_000)
    scheduler, cleaner = _started(old)
    resize_cleaner_threads(scheduler, cleaner, old, dataclasses.replace(old, backoff_ms=500))
    assert scheduler.live() == _names(0, 1, period=500)


def test_a_disabled_cleaner_runs_no_thread() -> None:
    old = CleanerConfig(threads=2)
    scheduler, cleaner = _started(old)
    resize_cleaner_threads(scheduler, cleaner, old, dataclasses.replace(old, enable=False))
    assert scheduler.live() == {}
    assert cleaner.thread_count == 0


def test_reconfigure_takes_the_new_rate_and_buffer() -> None:
    old = CleanerConfig(threads=1, dedupe_buffer_size=1 << 20)
    cleaner = LogCleaner(old, MockClock(), list)
    first_map = cleaner._offset_map()
    assert cleaner._offset_map() is first_map  # one map per thread, kept between passes
    cleaner.reconfigure(dataclasses.replace(old, io_max_bytes_per_second=1000.0))
    assert cleaner.throttle.rate == 1000.0
    assert cleaner._offset_map() is first_map  # the buffer did not change
    cleaner.reconfigure(dataclasses.replace(old, dedupe_buffer_size=1 << 21))
    assert cleaner.config.dedupe_buffer_size == 1 << 21
    assert cleaner._offset_map() is not first_map
