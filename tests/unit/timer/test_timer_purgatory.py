"""DelayedOperation and DelayedOperationPurgatory, with a MockClock (no real time)."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import Callable, Hashable
from pathlib import Path

import pytest

import timer
from tests.polling import until
from timer import DelayedOperation, DelayedOperationPurgatory, MockClock, SystemTimer


class Op(DelayedOperation):
    """Completes when ``ready`` is set; counts its callbacks."""

    __slots__ = ("completions", "expirations", "hook", "ready")

    def __init__(self, delay_ms: int = 1_000) -> None:
        DelayedOperation.__init__(self, delay_ms)  # not super(): a million are made below
        self.ready = False
        self.completions = 0
        self.expirations = 0
        self.hook: Callable[[], object] | None = None

    def try_complete(self) -> bool:
        return self.force_complete() if self.ready else False

    def on_complete(self) -> None:
        self.completions += 1
        if self.hook is not None:
            self.hook()

    def on_expiration(self) -> None:
        self.expirations += 1


def make(clock: MockClock, **kwargs: object) -> DelayedOperationPurgatory[Op]:
    return DelayedOperationPurgatory("test", clock=clock, **kwargs)  # type: ignore[arg-type]


def test_an_operation_that_can_complete_at_once_is_never_watched() -> None:
    purgatory = make(MockClock())
    op = Op()
    op.ready = True
    assert purgatory.try_complete_else_watch(op, ["k"])
    assert op.completions == 1 and op.is_completed
    assert purgatory.watched == 0 and purgatory.num_delayed == 0


def test_completed_by_check_and_complete_never_expires_and_completes_once() -> None:
    clock = MockClock()
    purgatory = make(clock)
    op = Op(delay_ms=500)
    assert not purgatory.try_complete_else_watch(op, ["a", "b"])
    assert purgatory.watched == 2 and purgatory.num_delayed == 1
    assert purgatory.check_and_complete("a") == 0  # not ready yet: stays watched
    op.ready = True
    assert purgatory.check_and_complete("a") == 1
    assert purgatory.check_and_complete("b") == 0  # already completed: just dropped
    assert purgatory.check_and_complete("a") == 0
    assert purgatory.num_delayed == 0 and purgatory.watched == 0
    clock.advance(10_000)
    purgatory.advance_clock()
    assert op.completions == 1 and op.expirations == 0


def test_watch_skips_the_tries_but_waits_like_try_complete_else_watch() -> None:
    clock = MockClock()
    purgatory = make(clock)
    op = Op(delay_ms=300)
    op.ready = True  # a try would complete it: watch must not make one
    purgatory.watch(op, ["a", "b"])
    assert op.completions == 0 and not op.is_completed
    assert purgatory.watched == 2 and purgatory.num_delayed == 1
    assert purgatory.check_and_complete("b") == 1
    assert purgatory.num_delayed == 0
    late = Op(delay_ms=300)
    purgatory.watch(late, ["a"])
    clock.advance(300)
    assert purgatory.advance_clock()
    assert (late.completions, late.expirations) == (1, 1)


def test_watch_refuses_no_keys_and_a_shut_purgatory() -> None:
    purgatory = make(MockClock())
    with pytest.raises(ValueError):
        purgatory.watch(Op(), [])
    asyncio.run(purgatory.shutdown())
    with pytest.raises(RuntimeError):
        purgatory.watch(Op(), ["k"])


def test_an_operation_that_times_out_completes_once_and_expires_once() -> None:
    clock = MockClock()
    purgatory = make(clock)
    op = Op(delay_ms=300)
    purgatory.try_complete_else_watch(op, ["k"])
    clock.advance(299)
    purgatory.advance_clock()
    assert op.completions == 0
    clock.advance(1)
    assert purgatory.advance_clock()
    assert (op.completions, op.expirations) == (1, 1)
    op.ready = True
    assert purgatory.check_and_complete("k") == 0
    assert not op.force_complete()
    assert (op.completions, op.expirations) == (1, 1)


def test_force_complete_racing_with_expiry_runs_once() -> None:
    clock = MockClock()
    timer = SystemTimer("race", clock=clock)
    purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("race", timer=timer)
    first, second = Op(delay_ms=50), Op(delay_ms=50)
    # `first` expires in the same bucket flush as `second` and force-completes it from its
    # on_complete, just before the timer reaches `second`.
    first.hook = second.force_complete
    purgatory.try_complete_else_watch(first, ["k"])
    purgatory.try_complete_else_watch(second, ["k"])
    assert first.bucket is second.bucket
    clock.advance(50)
    purgatory.advance_clock()
    assert (first.completions, first.expirations) == (1, 1)
    assert (second.completions, second.expirations) == (1, 0)

    # The other order: the timer got there first; a late force_complete loses.
    third = Op(delay_ms=10)
    purgatory.try_complete_else_watch(third, ["k"])
    clock.advance(10)
    purgatory.advance_clock()
    assert not third.force_complete()
    # And a timer run after a force_complete (as if already popped) does nothing.
    fourth = Op(delay_ms=10)
    purgatory.try_complete_else_watch(fourth, ["k"])
    assert fourth.force_complete()
    fourth.run()
    assert (third.completions, third.expirations) == (1, 1)
    assert (fourth.completions, fourth.expirations) == (1, 0)


class CountedOp(Op):
    """An Op that counts its tries."""

    __slots__ = ("tries",)

    def __init__(self, delay_ms: int = 1_000) -> None:
        Op.__init__(self, delay_ms)
        self.tries = 0

    def try_complete(self) -> bool:
        self.tries += 1
        return Op.try_complete(self)


def test_try_complete_else_watch_tries_once_before_watching() -> None:
    purgatory = make(MockClock())
    op = CountedOp()
    assert not purgatory.try_complete_else_watch(op, ["k"])
    assert op.tries == 1 and purgatory.watched == 1 and purgatory.num_delayed == 1
    op.ready = True
    assert purgatory.check_and_complete("k") == 1
    assert op.tries == 2 and op.completions == 1


def test_completion_that_reenters_the_purgatory_loses_nothing() -> None:
    clock = MockClock()
    purgatory = make(clock)
    ops = [Op() for _ in range(3)]
    late = Op()
    for op in ops:
        purgatory.try_complete_else_watch(op, ["k"])

    def reenter() -> None:
        # A completion that watches a new operation under the key being checked, and
        # checks that key again, while the outer check is still walking it.
        purgatory.try_complete_else_watch(late, ["k"])
        assert purgatory.check_and_complete("k") == 0

    ops[0].ready = True
    ops[0].hook = reenter
    assert purgatory.check_and_complete("k") == 1
    assert purgatory.watched == 3  # ops[1], ops[2] and late
    for op in (*ops[1:], late):
        op.ready = True
    assert purgatory.check_and_complete("k") == 3
    assert purgatory.watched == 0 and purgatory.num_delayed == 0


def test_a_raising_try_complete_keeps_the_rest_watched() -> None:
    purgatory = make(MockClock())

    class Bad(Op):
        __slots__ = ("armed",)

        def __init__(self) -> None:
            super().__init__()
            self.armed = False

        def try_complete(self) -> bool:
            if self.armed:
                raise RuntimeError("bad condition")
            return False

    good_before, bad, good_after = Op(), Bad(), Op()
    for op in (good_before, bad, good_after):
        purgatory.try_complete_else_watch(op, ["k"])
    bad.armed = True
    good_before.ready = good_after.ready = True
    with pytest.raises(RuntimeError):
        purgatory.check_and_complete("k")
    assert good_before.is_completed and not good_after.is_completed
    assert purgatory.watched == 2  # bad and good_after are still watched
    bad.armed = False
    assert purgatory.check_and_complete("k") == 1
    assert good_after.completions == 1 and purgatory.watched == 1


def test_cancel_for_key_takes_pending_operations_off_the_timer() -> None:
    clock = MockClock()
    purgatory = make(clock)
    ops = [Op() for _ in range(4)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["gone"])
    ops[0].ready = True
    purgatory.check_and_complete("gone")
    assert purgatory.cancel_for_key("gone") == ops[1:]
    assert purgatory.num_delayed == 0 and purgatory.watched == 0
    clock.advance(5_000)
    purgatory.advance_clock()
    assert all(op.expirations == 0 for op in ops)


def test_complete_all_answers_every_pending_operation_once_and_forgets_them() -> None:
    clock = MockClock()
    purgatory = make(clock)
    shared, alone, failing = Op(delay_ms=500), Op(delay_ms=500), Op(delay_ms=500)
    failing.hook = lambda: 1 / 0
    purgatory.try_complete_else_watch(shared, ["a", "b"])
    purgatory.try_complete_else_watch(failing, ["a"])
    purgatory.try_complete_else_watch(alone, ["c"])
    assert purgatory.complete_all() == 2  # the raising callback is logged, not counted
    assert [op.completions for op in (shared, alone, failing)] == [1, 1, 1]
    assert purgatory.watched == 0 and purgatory.num_delayed == 0
    clock.advance(1_000)
    purgatory.advance_clock()
    assert [op.expirations for op in (shared, alone, failing)] == [0, 0, 0]


def test_empty_watch_keys_are_refused() -> None:
    with pytest.raises(ValueError):
        make(MockClock()).try_complete_else_watch(Op(), [])


def test_purge_happens_once_completed_watchers_exceed_the_interval() -> None:
    clock = MockClock()
    purgatory = make(clock, purge_interval=10)
    ops = [Op() for _ in range(11)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["checked", "never-checked"])
    for op in ops:
        op.ready = True
    assert purgatory.check_and_complete("checked") == 11
    # The completed operations still sit under the key nobody checks ...
    assert purgatory.watched == 11 and purgatory.estimated_total == 11
    purgatory.advance_clock()  # 11 - 0 > 10: purge
    assert purgatory.watched == 0 and purgatory.num_watch_keys == 0
    assert purgatory.estimated_total == 0


#: where the blocks a purgatory run allocates come from: the timer package and this test
_TRACED_FILES = (
    tracemalloc.Filter(True, str(Path(timer.__file__).parent / "*")),
    tracemalloc.Filter(True, __file__),
)


def traced_here() -> int:
    """Bytes of live blocks allocated by the timer package or this test."""
    snapshot = tracemalloc.take_snapshot().filter_traces(_TRACED_FILES)
    return sum(stat.size for stat in snapshot.statistics("filename"))


def test_a_million_operations_completed_early_leave_bounded_lists_and_memory() -> None:
    """1,000,000 operations, each completed by a check soon after it starts waiting.

    Each is watched under its partition's key and under a shared key that nobody checks,
    so only the purge can clear the shared list. Runs in about 3 s here; the structures
    are checked after every batch (one reaper pass per batch, as if the reaper woke once
    per millisecond), and memory is checked by the count of live GC-tracked objects
    (every operation is one) and, over the last 50,000 operations, by tracemalloc (which
    would make the whole run several times slower): the blocks allocated by the timer
    package and by this test, after each batch -- not the process's total, which counts
    whatever other threads a long test session left running allocate meanwhile.
    """
    clock = MockClock()
    purge_interval = 1_000
    purgatory = make(clock, purge_interval=purge_interval)
    keys: list[Hashable] = [("topic", p) for p in range(64)]
    total, batch = 1_000_000, 1_000
    max_watched = 0
    completed = 0
    object_counts: list[int] = []
    traced_from = total - 50_000
    traced: list[int] = []
    # With the cyclic collector off, only reference counting frees memory: the run also
    # shows that finished operations leave no reference cycles behind (and it runs
    # faster in a test process full of long-lived objects).
    gc.collect()
    gc.disable()
    try:
        for start in range(0, total, batch):
            if start == traced_from:
                tracemalloc.start()
                traced_base = traced_here()
            for i in range(batch):
                op = Op(delay_ms=30_000)
                purgatory.try_complete_else_watch(op, (keys[i % 64], "shared"))
                op.ready = True
            for key in keys:
                completed += purgatory.check_and_complete(key)
            clock.advance(1)
            purgatory.advance_clock()
            assert purgatory.num_delayed == 0
            assert purgatory.num_watch_keys <= 1
            max_watched = max(max_watched, purgatory.watched)
            if start % 100_000 == 0:
                object_counts.append(len(gc.get_objects()))
            if start >= traced_from:
                traced.append(traced_here())
        traced_now, traced_peak = traced[-1], max(traced)
    finally:
        tracemalloc.stop()
        gc.enable()
    assert completed == total
    assert max_watched <= 2 * purge_interval
    assert max(object_counts) - min(object_counts) < 10_000  # vs 1,000,000 if leaked
    assert traced_now - traced_base < 200_000  # bytes
    assert traced_peak - traced_base < 2_000_000


async def test_the_reaper_expires_operations_on_the_event_loop() -> None:
    clock = MockClock()
    purgatory = make(clock)
    purgatory.start()
    try:
        op = Op(delay_ms=0)  # due at once: the reaper is woken, no real time passes
        assert not purgatory.try_complete_else_watch(op, ["k"])
        assert op.expirations == 0  # never run inside try_complete_else_watch
        await until(lambda: op.expirations == 1)
        assert op.completions == 1
    finally:
        await purgatory.shutdown()


async def test_shutdown_cancels_everything_and_leaves_nothing_scheduled() -> None:
    clock = MockClock()
    purgatory = make(clock)
    purgatory.start()
    ops = [Op(delay_ms=d) for d in (5, 500, 50_000, 5_000_000)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [i, "all"])
    assert purgatory.num_delayed == 4
    await purgatory.shutdown()
    assert purgatory.num_delayed == 0 and purgatory.watched == 0
    assert purgatory.timer.next_expiration_ms() is None
    assert not purgatory.timer.running
    assert all(not op.scheduled for op in ops)
    clock.advance(10_000_000)
    purgatory.advance_clock()
    assert all(op.completions == 0 for op in ops)
    with pytest.raises(RuntimeError):
        purgatory.try_complete_else_watch(Op(), ["k"])
    assert [t for t in asyncio.all_tasks() if "ExpirationReaper" in t.get_name()] == []
