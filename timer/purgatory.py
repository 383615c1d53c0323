"""DelayedOperationPurgatory: where delayed operations wait, watched by key, under a timer.

An operation is watched under one or more keys (a topic partition, a topic name, a
group). When something changes for a key, ``check_and_complete(key)`` tries every
operation watched under it; operations that complete leave the key's list. Each waiting
operation is also a task in the purgatory's SystemTimer, which completes it at its
timeout.

Watcher lists and completed operations: an operation watched under several keys, or
completed by force or by its timeout, stays in the lists of keys nobody checks. Those
entries are garbage. Kafka's answer, kept here: ``estimated_total`` counts operations
as they are watched; ``num_delayed`` (the timer's size) counts those still pending. Once
the difference exceeds ``purge_interval`` the reaper sweeps every list, drops completed
operations and empty keys, and resets the estimate to ``num_delayed``. Memory held by
completed operations is thus bounded by about ``purge_interval`` operations plus what
completes between two reaper passes.

The expiration reaper is a background task on the event loop: it waits on the timer
(``SystemTimer.poll``, at most ``reaper_wait_ms``), which runs expired operations, then
checks whether to purge. Tests with a MockClock call ``advance_clock()`` instead.

Metrics hooks for the broker (per purgatory, labelled with ``name``): ``purgatory_size``
(Kafka's PurgatorySize, operations in watcher lists, completed-but-unpurged included)
and ``num_delayed`` (Kafka's NumDelayedOperations).

Not thread-safe: call on the event loop's thread only (see delayed_operation for why no
locks are needed and how re-entrance is handled).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

from timer.clock import Clock
from timer.delayed_operation import DelayedOperation
from timer.system_timer import SystemTimer

log = logging.getLogger(__name__)

T = TypeVar("T", bound=DelayedOperation)


class DelayedOperationPurgatory(Generic[T]):
    """Delayed operations of one kind, watched by key, expired by a SystemTimer.

    ``timer`` defaults to a SystemTimer of its own on ``clock`` (SystemClock if None);
    ``reaper_enabled=False`` leaves expiry to explicit ``advance_clock()`` calls, and
    ``timer_enabled=False`` makes operations wait for their condition only.
    """

    def __init__(
        self,
        name: str,
        *,
        timer: SystemTimer | None = None,
        clock: Clock | None = None,
        broker_id: int = 0,
        purge_interval: int = 1000,
        reaper_enabled: bool = True,
        timer_enabled: bool = True,
        reaper_wait_ms: int = 200,
    ) -> None:
        self.name = name
        self.broker_id = broker_id
        self._timer = timer if timer is not None else SystemTimer(name, clock=clock)
        self._purge_interval = purge_interval
        self._reaper_enabled = reaper_enabled
        self._timer_enabled = timer_enabled
        self._reaper_wait_ms = reaper_wait_ms
        # key -> operations watched under it, oldest first. A key with no operations is
        # removed, so the dict's size is bounded by the keys with waiting operations.
        self._watchers: dict[Hashable, list[T]] = {}
        self._estimated_total = 0
        self._reaper: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def timer(self) -> SystemTimer:
        return self._timer

    # ---- metrics hooks ------------------------------------------------------------------

    @property
    def num_delayed(self) -> int:
        """Operations waiting in the timer (Kafka's NumDelayedOperations gauge)."""
        return self._timer.size

    @property
    def watched(self) -> int:
        """Entries in all watcher lists, completed-but-unpurged included (O(keys))."""
        return sum(len(ops) for ops in self._watchers.values())

    @property
    def purgatory_size(self) -> int:
        """Kafka's PurgatorySize gauge: the number of watched entries."""
        return self.watched

    @property
    def num_watch_keys(self) -> int:
        return len(self._watchers)

    @property
    def estimated_total(self) -> int:
        return self._estimated_total

    # ---- waiting and completing ---------------------------------------------------------

    def try_complete_else_watch(self, operation: T, watch_keys: Sequence[Hashable]) -> bool:
        """Complete ``operation`` now if it can; otherwise watch it and start its timeout.

        Returns True only if this call completed it. Watching runs no callbacks, so an
        operation is watched under all of its keys or none. Raises ValueError for an
        empty key list and RuntimeError after shutdown.

        One try, not Kafka's two: Kafka tries again after watching because another
        thread may have changed the condition between its first try and the watch.
        Here the try, the watch and the timer's add run back to back on the loop's one
        thread, and neither watching nor adding runs anything (a task already due waits
        for the next advance), so a second try could only repeat the first one's
        answer, for every operation that waits.
        """
        self._check_watchable(watch_keys)
        if operation.safe_try_complete():
            return True
        if not operation.is_completed:  # re-entrance may have completed it all the same
            self._add_watchers(operation, watch_keys)
            if self._timer_enabled:
                self._timer.add(operation)
        return False

    def watch(self, operation: T, watch_keys: Sequence[Hashable]) -> None:
        """Watch ``operation`` and start its timeout without trying it first.

        For a caller that has just found, with nothing run since, that the operation
        cannot complete (a fetch whose read found nothing): try_complete_else_watch's
        try would only repeat that finding. Watching runs no callbacks, so nothing
        can change in between on the loop's one thread. Same errors as
        try_complete_else_watch.
        """
        self._check_watchable(watch_keys)
        self._add_watchers(operation, watch_keys)
        if self._timer_enabled:
            self._timer.add(operation)

    def _check_watchable(self, watch_keys: Sequence[Hashable]) -> None:
        if not watch_keys:
            raise ValueError("an operation must be watched under at least one key")
        if self._closed:
            raise RuntimeError(f"purgatory {self.name} is shut down")

    def _add_watchers(self, operation: T, watch_keys: Sequence[Hashable]) -> None:
        # Kafka re-checks completion before each key because another thread may complete
        # the operation meanwhile; here nothing runs between the keys.
        watchers = self._watchers
        for key in watch_keys:
            ops = watchers.get(key)
            if ops is None:
                watchers[key] = [operation]
            else:
                ops.append(operation)
        self._estimated_total += 1

    def check_and_complete(self, key: Hashable) -> int:
        """Try every operation watched under ``key``; return how many this completed.

        The key's list is detached before the walk, so completions that re-enter the
        purgatory (watching new operations under this key, or checking it again) work on
        a fresh list and never on the one being walked; survivors are put back in front
        of anything watched meanwhile. If a callback raises, the operations not yet
        tried stay watched and the exception propagates to the caller.
        """
        ops = self._watchers.pop(key, None)
        if ops is None:
            return 0
        kept: list[T] = []
        completed = 0
        i, n = 0, len(ops)
        try:
            while i < n:
                op = ops[i]
                # safe_try_complete passes over an operation completed elsewhere
                if op.safe_try_complete():
                    completed += 1
                elif not op.is_completed:
                    kept.append(op)
                i += 1
        finally:
            if i < n:  # a callback raised: keep the rest watched
                kept.extend(op for op in ops[i:] if not op.is_completed)
            if kept:
                self._rewatch(key, kept)
        return completed

    def _rewatch(self, key: Hashable, kept: list[T]) -> None:
        newer = self._watchers.get(key)
        if newer is not None:
            kept.extend(newer)
        self._watchers[key] = kept

    def cancel_for_key(self, key: Hashable) -> list[T]:
        """Stop watching ``key``: its pending operations leave the timer, uncompleted."""
        ops = self._watchers.pop(key, None) or []
        pending = [op for op in ops if not op.is_completed]
        for op in pending:
            op.cancel()
        return pending

    def complete_all(self) -> int:
        """Force-complete every pending operation now; return how many completed cleanly
        (a callback that raises is logged and the rest are still completed).

        For a broker going away: each waiting request is answered with what it has
        (a long-polling fetch with the data there is, for example) instead of holding
        its connection until its own timeout.
        """
        watchers, self._watchers = self._watchers, {}
        completed = 0
        for ops in watchers.values():
            for op in ops:
                try:
                    if op.force_complete():
                        completed += 1
                except Exception:  # one failing callback must not leave the rest waiting
                    log.exception("purgatory %s: completing %r failed", self.name, op)
        return completed

    # ---- the expiration reaper ----------------------------------------------------------

    def advance_clock(self) -> bool:
        """One reaper pass without waiting: expire what is due, then purge if needed."""
        expired = self._timer.advance_clock()
        self.maybe_purge()
        return expired

    def maybe_purge(self) -> int:
        """Purge completed operations from watcher lists once the estimate says so.

        Runs after every reaper pass (each timer bucket that comes due wakes one, empty
        or not), so the timer's size, a walk over every bucket, is asked only once the
        estimate alone could exceed the interval."""
        if self._estimated_total <= self._purge_interval:
            return 0
        delayed = self.num_delayed
        if self._estimated_total - delayed <= self._purge_interval:
            return 0
        # Reset first: operations completed from here on count towards the next purge.
        self._estimated_total = delayed
        return self.purge_completed()

    def purge_completed(self) -> int:
        """Drop completed operations and emptied keys from every watcher list."""
        purged = 0
        watchers = self._watchers
        for key in list(watchers):
            ops = watchers[key]
            live = [op for op in ops if not op.is_completed]
            purged += len(ops) - len(live)
            if live:
                watchers[key] = live
            else:
                del watchers[key]
        log.debug("purgatory %s: purged %d completed operations", self.name, purged)
        return purged

    async def _reap(self) -> None:
        while True:
            await self._timer.poll(self._reaper_wait_ms)
            self.maybe_purge()

    def start(self) -> None:
        """Start the expiration reaper on the running loop (if enabled; idempotent)."""
        if self._closed:
            raise RuntimeError(f"purgatory {self.name} is shut down")
        if self._reaper_enabled and self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(
                self._reap(), name=f"ExpirationReaper-{self.broker_id}-{self.name}"
            )

    async def shutdown(self) -> None:
        """Stop the reaper, cancel every timeout and forget every watcher.

        Pending operations are neither completed nor expired (the broker is going away);
        nothing is left scheduled on the timer or the loop afterwards.
        """
        self._closed = True
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.cancel()
            await asyncio.wait([reaper])
        await self._timer.shutdown()
        self._watchers.clear()
        self._estimated_total = 0

    def __repr__(self) -> str:
        return (
            f"DelayedOperationPurgatory(name={self.name!r}, watched={self.watched}, "
            f"delayed={self.num_delayed})"
        )
