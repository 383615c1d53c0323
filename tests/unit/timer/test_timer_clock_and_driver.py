"""Clocks, and SystemTimer's background driver on the event loop."""

from __future__ import annotations

from typing import Any

import pytest
from timer_helpers import Recorder

from tests.polling import until
from timer import Clock, MockClock, SystemClock, SystemTimer


def test_mock_clock_moves_only_forward_and_only_when_told() -> None:
    clock = MockClock(monotonic_ms=5, time_ms=1_000)
    assert (clock.monotonic_ms(), clock.time_ms()) == (5, 1_000)
    clock.advance(7)
    assert (clock.monotonic_ms(), clock.time_ms()) == (12, 1_007)
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_both_clocks_satisfy_the_protocol() -> None:
    assert isinstance(SystemClock(), Clock) and isinstance(MockClock(), Clock)
    clock = SystemClock()
    first = clock.monotonic_ms()
    assert clock.monotonic_ms() >= first
    assert clock.time_ms() > 1_600_000_000_000


async def test_driver_is_woken_when_an_earlier_bucket_is_queued() -> None:
    # The driver sleeps up to max_wait_ms (an hour here) when nothing is scheduled; a
    # task due now must wake it at once, without any time passing on the mock clock.
    clock = MockClock()
    timer = SystemTimer(clock=clock, max_wait_ms=3_600_000)
    timer.start()
    try:
        log: list[tuple[Any, int, int]] = []
        await until(lambda: timer._waiter is not None)  # the driver is asleep
        timer.add(Recorder("now", 0, clock, log))
        await until(lambda: len(log) == 1)
        # A task 30 mock-ms ahead: the driver sleeps (real) 30 ms, then finds it due
        # because the test has moved the mock clock meanwhile.
        timer.add(Recorder("soon", 30, clock, log))
        clock.advance(30)
        await until(lambda: len(log) == 2)
        assert [name for name, _, _ in log] == ["now", "soon"]
    finally:
        await timer.shutdown()
    assert not timer.running


async def test_driver_with_the_system_clock_runs_tasks_near_their_deadline() -> None:
    clock = SystemClock()
    timer = SystemTimer(clock=clock)
    timer.start()
    try:
        log: list[tuple[Any, int, int]] = []
        for delay in (1, 5, 3):
            timer.add(Recorder(delay, delay, clock, log))
        await until(lambda: len(log) == 3, timeout=10)
        assert [name for name, _, _ in log] == [1, 3, 5]
        assert all(ran_at >= expiration for _, ran_at, expiration in log)  # never early
    finally:
        await timer.shutdown()


async def test_shutdown_cancels_every_task() -> None:
    clock = MockClock()
    timer = SystemTimer(clock=clock)
    timer.start()
    log: list[tuple[Any, int, int]] = []
    tasks = [Recorder(i, delay, clock, log) for i, delay in enumerate((0, 10, 10_000, 10**8))]
    for task in tasks:
        timer.add(task)
    await timer.shutdown()
    assert timer.size == 0 and timer.next_expiration_ms() is None
    assert all(task.cancelled and not task.scheduled for task in tasks)
    timer.add(Recorder("late", 0, clock, log))  # ignored after shutdown
    clock.advance(10**9)
    timer.advance_clock()
    assert log == [] and timer.size == 0
