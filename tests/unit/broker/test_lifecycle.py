"""broker.lifecycle: start-up runs the steps in order, shutdown stops the ones that
started in reverse, after a complete, a failed or a cancelled start alike; every stop is
bounded and runs even when an earlier one failed; ZooKeeper's stops are skipped while it
is unreachable."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar, cast

import pytest

from broker.lifecycle import Lifecycle, Step
from broker.zk_reachability import ZooKeeperReachability

T = TypeVar("T")


class Recorder:
    """Steps that log their starts and stops in one list."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def step(
        self,
        name: str,
        *,
        fails: bool = False,
        hangs: bool = False,
        stop_fails: bool = False,
        stop_hangs: bool = False,
        bound_s: float | None = 30.0,
        needs_zookeeper: bool = False,
    ) -> Step:
        async def start() -> None:
            self.events.append(f"start {name}")
            if hangs:
                await asyncio.Event().wait()
            if fails:
                raise RuntimeError(f"{name} cannot start")

        async def stop() -> None:
            self.events.append(f"stop {name}")
            if stop_hangs:
                await asyncio.Event().wait()
            if stop_fails:
                raise RuntimeError(f"{name} cannot stop")

        return Step(name, start, stop, bound_s=bound_s, needs_zookeeper=needs_zookeeper)

    def stops(self) -> list[str]:
        return [e.removeprefix("stop ") for e in self.events if e.startswith("stop ")]


def lifecycle(steps: list[Step], reachability: Any = None) -> Lifecycle:
    return Lifecycle(steps, lambda: cast(ZooKeeperReachability | None, reachability))


async def test_shutdown_stops_every_started_step_in_reverse_order() -> None:
    r = Recorder()
    life = lifecycle([r.step("a"), r.step("b"), Step("only a stop", None, None), r.step("c")])
    await life.start()
    assert life.completed
    await life.stop()
    assert r.events == ["start a", "start b", "start c", "stop c", "stop b", "stop a"]
    await life.stop()  # idempotent
    assert r.stops() == ["c", "b", "a"]


async def test_a_failed_start_stops_the_earlier_steps_only() -> None:
    r = Recorder()
    life = lifecycle([r.step("a"), r.step("b"), r.step("c", fails=True), r.step("d")])
    with pytest.raises(RuntimeError, match="c cannot start"):
        await life.start()
    assert not life.completed
    await life.stop()
    # c's own start failed (it cleans up after itself); d never started
    assert r.events == ["start a", "start b", "start c", "stop b", "stop a"]


async def test_a_cancelled_start_stops_what_started() -> None:
    r = Recorder()
    life = lifecycle([r.step("a"), r.step("b", hangs=True), r.step("c")])
    task = asyncio.create_task(life.start())
    while "start b" not in r.events:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await life.stop()
    assert r.stops() == ["a"]


async def test_a_step_placed_for_its_stop_runs_it_where_it_stands() -> None:
    r = Recorder()
    early = r.step("early")
    late_stop = Step("late stop of early", None, early.stop)
    life = lifecycle([early, r.step("b"), late_stop])
    await life.start()
    await life.stop()
    assert r.stops() == ["early", "b", "early"]


async def test_a_failing_or_hanging_stop_does_not_skip_the_later_ones() -> None:
    r = Recorder()
    steps = [
        r.step("logs", bound_s=None),
        r.step("hangs", stop_hangs=True, bound_s=0.01),
        r.step("fails", stop_fails=True),
    ]
    life = lifecycle(steps)
    await life.start()
    await life.stop()
    assert r.stops() == ["fails", "hangs", "logs"]


class Reachability:
    """ZooKeeperReachability's part the lifecycle uses: unreachable, it runs nothing."""

    def __init__(self, reachable: bool) -> None:
        self.reachable = reachable
        self.skipped: list[str] = []

    async def run_while_reachable(
        self, what: str, awaitable: Awaitable[T], timeout_s: float
    ) -> bool:
        if not self.reachable:
            self.skipped.append(what)
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            return False
        await asyncio.wait_for(awaitable, timeout_s)
        return True


@pytest.mark.parametrize("reachable", [True, False])
async def test_zookeeper_stops_are_skipped_while_it_is_unreachable(reachable: bool) -> None:
    r = Recorder()
    zk = Reachability(reachable)
    life = lifecycle([r.step("local"), r.step("deregistration", needs_zookeeper=True)], zk)
    await life.start()
    await life.stop()
    if reachable:
        assert r.stops() == ["deregistration", "local"]
    else:
        assert r.stops() == ["local"] and zk.skipped == ["deregistration"]


async def test_a_lifecycle_starts_once() -> None:
    life = lifecycle([Recorder().step("a")])
    await life.start()
    with pytest.raises(RuntimeError):
        await life.start()
