"""Timer benchmark: the purgatory's usual load on three timer implementations, one run.

    .venv/bin/python tests/bench/bench_timer.py           # 1,000,000 timeouts (~1-2 min)
    .venv/bin/python tests/bench/bench_timer.py --quick   # 100,000 timeouts

The load (what a produce or fetch purgatory sees): N timeouts of 2 s are scheduled in a
stream, in batches of BATCH with the event loop running between batches. 99% of them
complete early: each is cancelled LIFETIME (N/20) schedulings after it was added. The
other 1% (every 100th) are left to expire. Implementations, each as it would be used:

- wheel:      timer.SystemTimer (tick 1 ms, 20 buckets); the operation *is* the task;
              cancel is TimerTask.cancel(); its background driver task expires them.
- call_later: asyncio's loop.call_later(2.0, cb, op) and TimerHandle.cancel().
- heapq:      a heap of [deadline, seq, op] lists, cancel sets op to None (lazy
              deletion), a reaper task pops due entries, dead ones included.

Every implementation creates one payload object per timeout (a slotted object with an
id; for the wheel that object is the timer task itself) and keeps the same harness
structures (a deque of handles awaiting cancellation, a dict of the expiring 1%'s
deadlines), so memory differences are the timers' own.

Figures:
- add/s, cancel/s: operations divided by the CPU time (time.thread_time: the event
  loop's thread) spent inside the add and cancel loops. CPU rather than wall time
  because the machine is shared: wall time would also count other processes' turns.
- expiry/s: a separate burst of N/10 timeouts sharing one deadline 1 s ahead; timeouts
  divided by the CPU time from the last add to the last expiry (the loop idles until
  the deadline, so this is the expiry work, the wheel's cascades included).
- reaper s: CPU time the wheel's driver and heapq's reaper spent in the main run
  (call_later's equivalent runs inside the loop and cannot be timed separately); for
  heapq it is mostly popping the cancelled entries lazy deletion left behind.
- peak MiB: tracemalloc peak during the main run, above what was allocated before it, in
  a second run of the same load with tracemalloc on (it slows allocation, so the
  throughput figures come from the first run, without it). That run stops after the
  last add and cancel: from then on memory only shrinks.
- late p50/p99: expiry lateness of the 1%, callback time minus deadline, in ms. The
  wheel's deadline is its integer-millisecond expiration.
- loop p99: the event loop's own delay at those moments: for each expiring timeout, a
  plain loop timer (call_at) is set for the same deadline; its lateness, p99.
- beyond: per timeout, its lateness minus that loop timer's, p99: what the
  implementation adds to the loop's delay.
- run s: wall time of the main run, first add to last expiry (includes the 2 s tail).

Hard targets checked at the end: the wheel's peak memory is below both baselines; its
expiry is within two ticks of the deadline plus the event loop's delay ("beyond" p99 of
at most 2 ms). Throughput is printed beside heapq and call_later.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import statistics
import sys
import time
import tracemalloc
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from timer import SystemClock, SystemTimer, TimerTask

TIMEOUT_MS = 2_000
TIMEOUT_S = TIMEOUT_MS / 1000.0
EXPIRE_EVERY = 100  # 1% of the timeouts expire
BATCH = 200
TICK_MS = 1
BURST_DELAY_MS = 1_000

now_s = time.monotonic
# Throughput is measured in this thread's CPU time, not wall time: on a shared, loaded
# machine, wall time also counts the moments other processes had the CPU.
cpu = time.thread_time


class Stats:
    """What one implementation's callbacks and loops record."""

    def __init__(self) -> None:
        self.deadlines_ms: dict[int, float] = {}
        self.lateness_ms: list[float] = []
        self.late_by_id: dict[int, float] = {}
        # Lateness of a plain loop timer (call_at) set for the same deadline as each
        # expiring timeout: the event loop's own delay at that moment.
        self.loop_late_by_id: dict[int, float] = {}
        self.expired = 0
        # Timeouts meant to be cancelled that expired first: the run fell more than 2 s
        # behind (a stall: GC, a loaded machine). Counted and printed, not an error.
        self.missed = 0
        self.reaper_s = 0.0
        # The expiry burst resolves ``done`` when ``target`` timeouts have expired.
        self.target = -1
        self.done: asyncio.Future[None] | None = None

    def expire(self, op_id: int) -> None:
        deadline = self.deadlines_ms.get(op_id)
        if deadline is None:
            self.missed += 1
            return
        late = now_s() * 1000.0 - deadline
        self.lateness_ms.append(late)
        self.late_by_id[op_id] = late
        self.expired += 1
        if self.expired == self.target and self.done is not None:
            self.done.set_result(None)


class Op:
    """The baselines' payload: what a purgatory operation carries, here only an id."""

    __slots__ = ("id",)

    def __init__(self, op_id: int) -> None:
        self.id = op_id


class WheelOp(TimerTask):
    """The wheel's payload: the same id, on an object that is itself the timer task."""

    __slots__ = ("id", "stats")

    def __init__(self, op_id: int, delay_ms: int, stats: Stats) -> None:
        TimerTask.__init__(self, delay_ms)  # cheaper than super(), as DelayedOperation does
        self.id = op_id
        self.stats = stats

    def run(self) -> None:
        self.stats.expire(self.id)


class Impl:
    name = ""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats
        # Handles of the 1% left to expire, so stop() can cancel them (same for all).
        self.expiring: list[Any] = []

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def add_batch(self, start: int, stop: int, window: deque[Any]) -> None: ...

    def cancel_batch(self, window: deque[Any], count: int) -> None: ...

    def add_at(self, op_id: int, deadline_s: float) -> None:
        """Schedule a timeout at an absolute monotonic time (the expiry burst)."""


class Wheel(Impl):
    name = "wheel"

    async def start(self) -> None:
        self.clock = SystemClock()
        self.timer = SystemTimer("bench", tick_ms=TICK_MS, wheel_size=20, clock=self.clock)
        advance = self.timer.advance_clock
        stats = self.stats

        def timed_advance() -> bool:
            t0 = cpu()
            try:
                return advance()
            finally:
                stats.reaper_s += cpu() - t0

        self.timer.advance_clock = timed_advance  # type: ignore[method-assign]
        self.timer.start()

    async def stop(self) -> None:
        await self.timer.shutdown()
        self.expiring.clear()

    def add_batch(self, start: int, stop: int, window: deque[Any]) -> None:
        add = self.timer.add
        stats = self.stats
        deadlines = stats.deadlines_ms
        append = window.append
        for j in range(start, stop):
            op = WheelOp(j, TIMEOUT_MS, stats)
            add(op)
            if j % EXPIRE_EVERY:
                append(op)
            else:
                deadlines[j] = op.expiration_ms
                self.expiring.append(op)

    def cancel_batch(self, window: deque[Any], count: int) -> None:
        popleft = window.popleft
        for _ in range(count):
            popleft().cancel()

    def add_at(self, op_id: int, deadline_s: float) -> None:
        deadline_ms = int(deadline_s * 1000)
        op = WheelOp(op_id, deadline_ms - self.clock.monotonic_ms(), self.stats)
        self.timer.add(op)
        self.stats.deadlines_ms[op_id] = op.expiration_ms


def _expire_call_later(stats: Stats, op: Op) -> None:
    stats.expire(op.id)


class CallLater(Impl):
    name = "call_later"

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()

    async def stop(self) -> None:
        for handle in self.expiring:
            handle.cancel()
        self.expiring.clear()

    def add_batch(self, start: int, stop: int, window: deque[Any]) -> None:
        call_later = self.loop.call_later
        stats = self.stats
        deadlines = stats.deadlines_ms
        append = window.append
        for j in range(start, stop):
            handle = call_later(TIMEOUT_S, _expire_call_later, stats, Op(j))
            if j % EXPIRE_EVERY:
                append(handle)
            else:
                deadlines[j] = handle.when() * 1000.0
                self.expiring.append(handle)

    def cancel_batch(self, window: deque[Any], count: int) -> None:
        popleft = window.popleft
        for _ in range(count):
            popleft().cancel()

    def add_at(self, op_id: int, deadline_s: float) -> None:
        self.loop.call_at(deadline_s, _expire_call_later, self.stats, Op(op_id))
        self.stats.deadlines_ms[op_id] = deadline_s * 1000.0


class Heapq(Impl):
    """heapq with lazy deletion and a reaper task woken like the wheel's driver."""

    name = "heapq"

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.heap: list[list[Any]] = []
        self.waiter: asyncio.Future[None] | None = None
        self.waiter_deadline = 0.0
        self.reaper = self.loop.create_task(self._reap())

    async def stop(self) -> None:
        self.reaper.cancel()
        await asyncio.wait([self.reaper])
        self.heap.clear()
        self.expiring.clear()

    def _wake_if_earlier(self, deadline: float) -> None:
        waiter = self.waiter
        if waiter is not None and deadline < self.waiter_deadline and not waiter.done():
            waiter.set_result(None)

    async def _reap(self) -> None:
        heap = self.heap
        stats = self.stats
        pop = heapq.heappop
        while True:
            t0 = cpu()
            while heap and heap[0][2] is None:  # lazy deletion: dead heads go now
                pop(heap)
            stats.reaper_s += cpu() - t0
            wait = 0.2 if not heap else min(0.2, heap[0][0] - now_s())
            if wait > 0:
                self.waiter = self.loop.create_future()
                self.waiter_deadline = now_s() + wait
                handle = self.loop.call_later(wait, _set_done, self.waiter)
                try:
                    await self.waiter
                finally:
                    handle.cancel()
                    self.waiter = None
            else:
                await asyncio.sleep(0)
            t0 = cpu()
            now = now_s()
            while heap and heap[0][0] <= now:
                op = pop(heap)[2]
                if op is not None:
                    stats.expire(op.id)
            stats.reaper_s += cpu() - t0

    def add_batch(self, start: int, stop: int, window: deque[Any]) -> None:
        heap = self.heap
        push = heapq.heappush
        deadlines = self.stats.deadlines_ms
        append = window.append
        for j in range(start, stop):
            deadline = now_s() + TIMEOUT_S
            entry: list[Any] = [deadline, j, Op(j)]
            push(heap, entry)
            if heap[0] is entry:
                self._wake_if_earlier(deadline)
            if j % EXPIRE_EVERY:
                append(entry)
            else:
                deadlines[j] = deadline * 1000.0
                self.expiring.append(entry)

    def cancel_batch(self, window: deque[Any], count: int) -> None:
        popleft = window.popleft
        for _ in range(count):
            popleft()[2] = None

    def add_at(self, op_id: int, deadline_s: float) -> None:
        entry: list[Any] = [deadline_s, op_id, Op(op_id)]
        heapq.heappush(self.heap, entry)
        if self.heap[0] is entry:
            self._wake_if_earlier(deadline_s)
        self.stats.deadlines_ms[op_id] = deadline_s * 1000.0


def _set_done(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


IMPLS: list[Callable[[Stats], Impl]] = [Wheel, CallLater, Heapq]


def p99(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def wait_for(condition: Callable[[], bool], timeout_s: float) -> None:
    deadline = now_s() + timeout_s
    while not condition():
        if now_s() > deadline:
            raise RuntimeError("benchmark stalled: expirations did not arrive")
        await asyncio.sleep(0.005)


async def main_run(make: Callable[[Stats], Impl], n: int, trace: bool) -> dict[str, float]:
    """The usual load; returns figures (memory only when ``trace``)."""
    stats = Stats()
    impl = make(stats)
    await impl.start()
    lifetime = n // 20
    window: deque[Any] = deque()
    gc.collect()
    if trace:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
    loop = asyncio.get_running_loop()
    deadlines = stats.deadlines_ms
    loop_late = stats.loop_late_by_id

    def loop_timer(op_id: int) -> None:
        loop_late[op_id] = now_s() * 1000.0 - deadlines[op_id]

    add_s = cancel_s = 0.0
    cancelled = 0
    t_start = time.perf_counter()
    for start in range(0, n, BATCH):
        t0 = cpu()
        impl.add_batch(start, min(start + BATCH, n), window)
        t1 = cpu()
        excess = len(window) - lifetime
        if excess > 0:
            impl.cancel_batch(window, excess)
            cancelled += excess
        t2 = cpu()
        add_s += t1 - t0
        cancel_s += t2 - t1
        if not trace:
            first = -(-start // EXPIRE_EVERY) * EXPIRE_EVERY
            for j in range(first, min(start + BATCH, n), EXPIRE_EVERY):
                loop.call_at(deadlines[j] / 1000.0, loop_timer, j)
        await asyncio.sleep(0)  # let the loop run timers between batches
    # Complete the rest early too, then wait for the 1% to expire.
    t1 = cpu()
    left = len(window)
    impl.cancel_batch(window, left)
    cancel_s += cpu() - t1
    cancelled += left
    figures: dict[str, float] = {}
    if trace:
        # Nothing is added from here on, so the peak has been reached: skip the tail.
        figures["peak_mib"] = (tracemalloc.get_traced_memory()[1] - base) / 2**20
        tracemalloc.stop()
        await impl.stop()
        return figures
    expected = len(range(0, n, EXPIRE_EVERY))
    await wait_for(lambda: stats.expired >= expected, TIMEOUT_S + 30)
    run_s = time.perf_counter() - t_start
    await wait_for(lambda: len(loop_late) >= len(stats.late_by_id), 30)
    lat = sorted(stats.lateness_ms)
    loop_lat = sorted(loop_late.values())
    beyond = sorted(late - loop_late[j] for j, late in stats.late_by_id.items())
    figures.update(
        loop_p99=p99(loop_lat),
        beyond_p99=p99(beyond),
        add_per_s=n / add_s,
        cancel_per_s=cancelled / cancel_s,
        late_p50=statistics.median(lat),
        late_p99=p99(lat),
        run_s=run_s,
        reaper_s=stats.reaper_s,
        missed=stats.missed,
    )
    await impl.stop()
    return figures


async def expiry_burst(make: Callable[[Stats], Impl], count: int) -> float:
    """Timeouts per second when ``count`` of them share one deadline."""
    stats = Stats()
    impl = make(stats)
    await impl.start()
    gc.collect()
    deadline = now_s() + BURST_DELAY_MS / 1000.0
    for i in range(count):
        impl.add_at(i, deadline)
    stats.target = count
    stats.done = asyncio.get_running_loop().create_future()
    # CPU from here to the last expiry: the loop sleeps until the timers are due, so
    # this is the expiry work (for the wheel, its cascades to level 0 included).
    t0 = cpu()
    await asyncio.wait_for(stats.done, BURST_DELAY_MS / 1000.0 + 30)
    expiry_cpu_s = cpu() - t0
    await impl.stop()
    return count / expiry_cpu_s


async def bench(n: int) -> int:
    print(f"timer benchmark: {n:,} timeouts of {TIMEOUT_MS} ms, {100 // EXPIRE_EVERY}% expire,")
    print(
        f"cancel lag {n // 20:,} schedulings, batches of {BATCH}; expiry burst {n // 10:,}; "
        f"loop {type(asyncio.get_running_loop()).__module__}; Python {sys.version.split()[0]}"
    )
    results: dict[str, dict[str, float]] = {}
    for make in IMPLS:
        name = make.__name__
        t0 = time.perf_counter()
        figures = await main_run(make, n, trace=False)
        t1 = time.perf_counter()
        figures.update(await main_run(make, n, trace=True))
        t2 = time.perf_counter()
        figures["expiry_per_s"] = await expiry_burst(make, n // 10)
        t3 = time.perf_counter()
        results[name] = figures
        print(
            f"  {name}: load {t1 - t0:.1f} s, load with tracemalloc {t2 - t1:.1f} s, "
            f"burst {t3 - t2:.1f} s",
            file=sys.stderr,
        )
    header = (
        f"{'impl':<11}{'add/s':>11}{'cancel/s':>11}{'expiry/s':>11}{'peak MiB':>10}"
        f"{'late p50':>9}{'late p99':>9}{'loop p99':>9}{'beyond':>8}{'run s':>7}"
        f"{'reaper s':>9}"
    )
    print(header)
    print("-" * len(header))
    for name, f in results.items():
        label = {"Wheel": "wheel", "CallLater": "call_later", "Heapq": "heapq"}[name]
        print(
            f"{label:<11}{f['add_per_s']:>11,.0f}{f['cancel_per_s']:>11,.0f}"
            f"{f['expiry_per_s']:>11,.0f}{f['peak_mib']:>10.1f}{f['late_p50']:>9.2f}"
            f"{f['late_p99']:>9.2f}{f['loop_p99']:>9.2f}{f['beyond_p99']:>8.2f}"
            f"{f['run_s']:>7.2f}"
            + (f"{f['reaper_s']:>9.2f}" if name != "CallLater" else f"{'-':>9}")
        )
    missed = {name: int(f["missed"]) for name, f in results.items() if f["missed"]}
    if missed:
        print(f"timeouts that expired before their cancellation (run fell behind): {missed}")
    wheel, loop_, heap = results["Wheel"], results["CallLater"], results["Heapq"]
    print()
    for key, label in (
        ("add_per_s", "add"),
        ("cancel_per_s", "cancel"),
        ("expiry_per_s", "expiry"),
    ):
        print(
            f"wheel {label:<7} {wheel[key] / heap[key]:5.2f}x heapq, "
            f"{wheel[key] / loop_[key]:5.2f}x call_later"
        )
    mem_ok = wheel["peak_mib"] < min(loop_["peak_mib"], heap["peak_mib"])
    late_ok = wheel["beyond_p99"] <= 2 * TICK_MS
    print(
        f"target memory:   wheel {wheel['peak_mib']:.1f} MiB < call_later "
        f"{loop_['peak_mib']:.1f} and heapq {heap['peak_mib']:.1f}: "
        f"{'PASS' if mem_ok else 'FAIL'}"
    )
    print(
        f"target lateness: wheel expiry minus the loop's own delay at that deadline, p99 "
        f"{wheel['beyond_p99']:.2f} ms <= 2 ticks ({2 * TICK_MS} ms): "
        f"{'PASS' if late_ok else 'FAIL'}"
    )
    return 0 if mem_ok and late_ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100,000 timeouts")
    parser.add_argument("-n", type=int, default=None, help="number of timeouts")
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop")
    args = parser.parse_args()
    n = args.n or (100_000 if args.quick else 1_000_000)
    if args.uvloop:
        import uvloop

        return uvloop.run(bench(n))
    return asyncio.run(bench(n))


if __name__ == "__main__":
    sys.exit(main())
