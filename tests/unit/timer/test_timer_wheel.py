"""The timing wheel, its buckets and SystemTimer, driven by a MockClock (no real time)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from timer_helpers import Recorder

from timer import MockClock, SystemTimer, TimerTask, TimerTaskList
from timer.delay_queue import DelayQueue
from timer.timing_wheel import TimingWheel

# A fixed epoch (a real millisecond timestamp) rounded down to a multiple of 27 = 3**3, so
# that the three levels of a wheelSize-3 wheel start at tick boundaries and the worked
# example below reads simply (bucket "x-1" is the one right after the current one on every
# level).
T0 = 1741654300000 - 1741654300000 % 27


def step(timer: SystemTimer, clock: MockClock, until_ms: int) -> None:
    """Advance the clock one millisecond at a time, advancing the timer at each step."""
    while clock.monotonic_ms() < until_ms:
        clock.advance(1)
        timer.advance_clock()


def names(tasks: Iterable[TimerTask]) -> list[Any]:
    return [t.name for t in tasks if isinstance(t, Recorder)]


def level_of(timer: SystemTimer, task: TimerTask) -> tuple[int, int]:
    """(level, bucket index) of the bucket holding ``task``."""
    for level, wheel in enumerate(timer.wheel.levels()):
        for index, bucket in enumerate(wheel.buckets):
            if task.bucket is bucket:
                return level, index
    raise AssertionError(f"{task!r} is in no bucket")


def test_worked_example_cascades_through_three_levels() -> None:
    clock = MockClock(monotonic_ms=T0)
    timer = SystemTimer(tick_ms=1, wheel_size=3, clock=clock)
    log: list[tuple[Any, int, int]] = []
    delays = {"job1": 1, "job2": 17, "job3": 3, "job4": 5, "job5": 9, "job6": 14}
    jobs = {name: Recorder(name, delay, clock, log) for name, delay in delays.items()}
    for job in jobs.values():
        timer.add(job)

    # T0: three levels; three buckets queued, due in 1, 3 and 9 ms (bucket-0-1, 1-1, 2-1).
    assert [w.tick_ms for w in timer.wheel.levels()] == [1, 3, 9]
    assert timer.queue.expirations() == [T0 + 1, T0 + 3, T0 + 9]
    assert level_of(timer, jobs["job1"]) == (0, (T0 + 1) % 3)
    assert level_of(timer, jobs["job3"])[0] == 1
    assert jobs["job3"].bucket is jobs["job4"].bucket
    assert {jobs[j].bucket for j in ("job2", "job5", "job6")} == {jobs["job2"].bucket}
    assert level_of(timer, jobs["job2"])[0] == 2
    assert timer.size == 6

    # T3: bucket-1-1 expires; job3 runs, job4 (2 ms left) drops to level 0.
    step(timer, clock, T0 + 3)
    assert [name for name, _, _ in log] == ["job1", "job3"]
    assert level_of(timer, jobs["job4"])[0] == 0

    # T9: bucket-2-1 expires; job5 runs, job6 and job2 drop to level 1 (buckets 1-1, 1-2).
    step(timer, clock, T0 + 9)
    assert [name for name, _, _ in log][-1] == "job5"
    assert level_of(timer, jobs["job6"]) == (1, (T0 + 14) // 3 % 3)
    assert level_of(timer, jobs["job2"]) == (1, (T0 + 17) // 3 % 3)

    step(timer, clock, T0 + 20)
    assert [name for name, _, _ in log] == ["job1", "job3", "job4", "job5", "job6", "job2"]
    for _, ran_at, expiration in log:
        assert 0 <= ran_at - expiration < 1  # within one tick of its time
    assert timer.size == 0


def test_tasks_hours_ahead_run_within_a_tick_of_their_deadline() -> None:
    clock = MockClock(monotonic_ms=123_456_789)
    timer = SystemTimer(clock=clock)
    log: list[tuple[Any, int, int]] = []
    hour = 3_600_000
    delays = [3 * hour, 3 * hour + 1, 5 * hour + 17, 1, 2 * hour - 3]
    for i, delay in enumerate(delays):
        timer.add(Recorder(i, delay, clock, log))
    assert len(list(timer.wheel.levels())) >= 6  # 20 ms, 400 ms, 8 s, 160 s, 53 min, 17 h

    # Walk in steps of 997 ms (not a multiple of any tick), advancing at each step.
    end = clock.monotonic_ms() + 6 * hour
    while clock.monotonic_ms() < end:
        clock.advance(997)
        timer.advance_clock()
        for _, ran_at, expiration in log:
            assert expiration <= ran_at < expiration + 997
    assert [name for name, _, _ in log] == [3, 4, 0, 1, 2]


def test_one_jump_of_hours_still_runs_everything_in_deadline_order() -> None:
    clock = MockClock(monotonic_ms=0)
    timer = SystemTimer(clock=clock)
    log: list[tuple[Any, int, int]] = []
    delays = [7_200_000 - 5 * i for i in range(50)] + [60_000 + 13 * i for i in range(50)]
    for i, delay in enumerate(delays):
        timer.add(Recorder(i, delay, clock, log))
    clock.advance(10_000_000)
    assert timer.advance_clock()
    assert [expiration for _, _, expiration in log] == sorted(delays)
    assert timer.size == 0 and timer.next_expiration_ms() is None


def test_many_tasks_share_one_bucket_and_run_in_insertion_order() -> None:
    clock = MockClock(monotonic_ms=5_000)
    timer = SystemTimer(clock=clock)
    log: list[tuple[Any, int, int]] = []
    tasks = [Recorder(i, 7, clock, log) for i in range(10_000)]
    for task in tasks:
        timer.add(task)
    bucket = tasks[0].bucket
    assert bucket is not None and all(t.bucket is bucket for t in tasks)
    assert len(bucket) == 10_000 and bucket.expiration_ms == 5_007
    assert timer.queue.expirations() == [5_007]  # one queue item for 10,000 tasks

    clock.advance(6)
    assert not timer.advance_clock()
    assert log == []
    clock.advance(1)
    assert timer.advance_clock()
    assert [name for name, _, _ in log] == list(range(10_000))
    assert len(bucket) == 0 and bucket.expiration_ms == -1
    assert all(not t.scheduled for t in tasks)


def test_cancel_before_the_bucket_is_flushed_removes_at_once() -> None:
    clock = MockClock()
    timer = SystemTimer(clock=clock)
    log: list[tuple[Any, int, int]] = []
    tasks = [Recorder(i, 30, clock, log) for i in range(100)]
    for task in tasks:
        timer.add(task)
    for task in tasks[::2]:
        task.cancel()
    assert timer.size == 50
    assert all(t.bucket is None and t.next is t.prev for t in tasks[::2])
    clock.advance(30)
    timer.advance_clock()
    assert sorted(name for name, _, _ in log) == list(range(1, 100, 2))


def test_cancel_after_a_cascade_flush_removes_from_the_finer_bucket() -> None:
    clock = MockClock()
    timer = SystemTimer(clock=clock)
    log: list[tuple[Any, int, int]] = []
    task = Recorder("late", 1_000, clock, log)  # level 2 (400 ms ticks) at first
    timer.add(task)
    first = task.bucket
    clock.advance(800)
    timer.advance_clock()  # the level-2 bucket expired and was flushed: task moved down
    assert task.scheduled and task.bucket is not first
    task.cancel()
    assert timer.size == 0
    clock.advance(500)
    timer.advance_clock()
    assert log == []


def test_cancel_after_running_is_harmless_and_a_cancelled_task_cannot_come_back() -> None:
    clock = MockClock()
    timer = SystemTimer(clock=clock)
    log: list[tuple[Any, int, int]] = []
    task = Recorder("once", 2, clock, log)
    timer.add(task)
    clock.advance(2)
    timer.advance_clock()
    task.cancel()  # after its bucket was flushed and it ran
    assert len(log) == 1
    timer.add(task)  # refused: cancelling is permanent
    clock.advance(10)
    timer.advance_clock()
    assert len(log) == 1 and timer.size == 0


def test_a_task_can_cancel_another_in_the_bucket_being_flushed() -> None:
    clock = MockClock()
    timer = SystemTimer(clock=clock)
    log: list[tuple[Any, int, int]] = []
    victim = Recorder("victim", 5, clock, log)

    class Killer(TimerTask):
        def run(self) -> None:
            log.append(("killer", clock.monotonic_ms(), self.expiration_ms))
            victim.cancel()

    timer.add(Killer(5))
    timer.add(victim)
    assert victim.bucket is not None and len(victim.bucket) == 2
    clock.advance(5)
    timer.advance_clock()
    assert [name for name, _, _ in log] == ["killer"]


def test_wheel_add_refuses_expired_and_cancelled_entries() -> None:
    queue = DelayQueue()
    wheel = TimingWheel(tick_ms=10, wheel_size=4, start_ms=1_005, queue=queue)
    assert wheel.current_time == 1_000  # rounded down to a tick
    log: list[tuple[Any, int, int]] = []
    clock = MockClock()
    due = Recorder("due", 0, clock, log)
    due.expiration_ms = 1_009  # inside the current tick: already due
    assert not wheel.add(due) and not due.scheduled
    gone = Recorder("gone", 0, clock, log)
    gone.expiration_ms = 1_030
    gone.cancel()
    assert not wheel.add(gone) and not gone.scheduled
    later = Recorder("later", 0, clock, log)
    later.expiration_ms = 1_010
    assert wheel.add(later) and wheel.overflow is None
    far = Recorder("far", 0, clock, log)
    far.expiration_ms = 1_040  # beyond current_time + interval: overflow wheel on demand
    assert wheel.add(far)
    assert wheel.overflow is not None and wheel.overflow.tick_ms == 40
    assert queue.expirations() == [1_010, 1_040]


def test_coarse_ticks_run_within_one_tick_of_the_deadline() -> None:
    clock = MockClock(monotonic_ms=0)
    timer = SystemTimer(tick_ms=10, wheel_size=8, clock=clock)
    log: list[tuple[Any, int, int]] = []
    for delay in (3, 15, 27, 99, 1_234):
        timer.add(Recorder(delay, delay, clock, log))
    step(timer, clock, 2_000)
    assert [name for name, _, _ in log] == [3, 15, 27, 99, 1_234]
    for _, ran_at, expiration in log:
        assert abs(ran_at - expiration) < 10


def test_a_task_due_on_add_runs_at_the_next_advance_not_inside_add() -> None:
    clock = MockClock()
    timer = SystemTimer(clock=clock)
    log: list[tuple[Any, int, int]] = []
    timer.add(Recorder("now", 0, clock, log))
    timer.add(Recorder("past", -50, clock, log))
    assert log == [] and timer.size == 2
    assert timer.advance_clock()
    assert sorted(name for name, _, _ in log) == ["now", "past"]


def test_a_failing_task_is_logged_and_the_rest_of_its_bucket_still_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = MockClock()
    timer = SystemTimer(clock=clock)
    log: list[tuple[Any, int, int]] = []

    class Boom(TimerTask):
        def run(self) -> None:
            raise RuntimeError("boom")

    timer.add(Recorder("a", 3, clock, log))
    timer.add(Boom(3))
    timer.add(Recorder("b", 3, clock, log))
    clock.advance(3)
    with caplog.at_level(logging.ERROR, logger="timer.system_timer"):
        timer.advance_clock()
    assert [name for name, _, _ in log] == ["a", "b"]
    assert "boom" in caplog.text


def test_a_task_may_add_itself_again_when_it_runs() -> None:
    clock = MockClock()
    timer = SystemTimer(clock=clock)
    runs: list[int] = []

    class Periodic(TimerTask):
        def run(self) -> None:
            runs.append(clock.monotonic_ms())
            if len(runs) < 5:
                timer.add(self)

    timer.add(Periodic(25))
    step(timer, clock, 1_000)
    assert runs == [25, 50, 75, 100, 125]


def test_bucket_list_operations() -> None:
    bucket = TimerTaskList()
    clock = MockClock()
    log: list[tuple[Any, int, int]] = []
    a, b, c = (Recorder(n, 1, clock, log) for n in "abc")
    for task in (a, b, c):
        bucket.add(task)
    assert names(bucket) == ["a", "b", "c"]
    bucket.remove(b)
    assert names(bucket) == ["a", "c"] and len(bucket) == 2
    bucket.remove(b)  # not in the bucket any more: a no-op
    other = TimerTaskList()
    other.add(a)  # moving a task takes it out of its old bucket
    assert names(bucket) == ["c"] and names(other) == ["a"]
    assert bucket.set_expiration(40) and not bucket.set_expiration(40)
    seen: list[str] = []
    bucket.flush(lambda t: seen.extend(names([t])))
    assert seen == ["c"] and len(bucket) == 0 and bucket.expiration_ms == -1


def test_invalid_wheel_parameters_are_refused() -> None:
    with pytest.raises(ValueError):
        TimingWheel(tick_ms=0, wheel_size=20, start_ms=0, queue=DelayQueue())
    with pytest.raises(ValueError):
        TimingWheel(tick_ms=1, wheel_size=1, start_ms=0, queue=DelayQueue())


def test_an_idle_timer_keeps_its_wheel_at_the_current_time() -> None:
    clock = MockClock(monotonic_ms=0)
    timer = SystemTimer(clock=clock)
    clock.advance(86_400_000)  # a day with nothing scheduled; the driver still polls
    assert not timer.advance_clock()
    log: list[tuple[Any, int, int]] = []
    task = Recorder("soon", 5, clock, log)
    timer.add(task)
    assert level_of(timer, task)[0] == 0  # not a climb to a day-wide level
    assert len(list(timer.wheel.levels())) == 1
    clock.advance(5)
    timer.advance_clock()
    assert log == [("soon", 86_400_005, 86_400_005)]


@settings(max_examples=150, deadline=None)
@given(
    tick_ms=st.integers(1, 10),
    wheel_size=st.integers(2, 20),
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.integers(-5, 50_000)),
            st.tuples(st.just("cancel"), st.integers(0, 10**6)),
            st.tuples(st.just("advance"), st.integers(0, 3_000)),
        ),
        max_size=60,
    ),
)
def test_every_task_runs_once_within_a_tick_of_its_deadline_unless_cancelled(
    tick_ms: int, wheel_size: int, steps: list[tuple[str, int]]
) -> None:
    clock = MockClock(monotonic_ms=7_777)
    timer = SystemTimer(tick_ms=tick_ms, wheel_size=wheel_size, clock=clock)
    log: list[tuple[Any, int, int]] = []
    tasks: list[Recorder] = []
    advances: list[int] = []  # clock readings at which advance_clock ran
    added_before: dict[int, int] = {}  # task name -> advances made before it was added
    for kind, value in steps:
        if kind == "add":
            task = Recorder(len(tasks), value, clock, log)
            added_before[task.name] = len(advances)
            tasks.append(task)
            timer.add(task)
        elif kind == "cancel":
            if tasks:
                tasks[value % len(tasks)].cancel()
        else:
            clock.advance(value)
            timer.advance_clock()
            advances.append(clock.monotonic_ms())
    clock.advance(10**6)
    timer.advance_clock()
    advances.append(clock.monotonic_ms())

    ran = [name for name, _, _ in log]
    assert len(ran) == len(set(ran))  # at most once
    for task in tasks:
        if task.cancelled and task.name not in ran:
            continue
        assert task.name in ran  # everything not cancelled in time ran
        (ran_at,) = [at for name, at, _ in log if name == task.name]
        assert ran_at > task.expiration_ms - tick_ms  # never a whole tick early
        # ... and at the first advance after it was added that found its deadline
        # passed, or earlier.
        later = advances[added_before[task.name] :]
        assert ran_at <= min(at for at in later if at >= task.expiration_ms)
    assert timer.size == 0 and timer.next_expiration_ms() is None
