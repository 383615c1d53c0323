"""A broker's start-up and shutdown as one ordered list of steps.

Each :class:`Step` has a name, a ``start``, an optional ``stop``, the bound of its stop
and whether the stop needs ZooKeeper. :class:`Lifecycle` starts the steps in their
order and records each one whose ``start`` returned; shutdown stops exactly those, in
the reverse order. So a start that failed or was cancelled half-way is undone as far
as it got: the step that failed is not stopped (its ``start`` cleans up after itself),
nor is any step after it.

Every stop is bounded (``bound_s``; None for the one that must finish: flushing the
logs) and runs even when an earlier stop failed or hung, which is logged: a broker
that is stopping must still leave its logs clean. A stop that ``needs_zookeeper`` is
skipped, or given up, while ZooKeeper is unreachable (broker.zk_reachability), rather
than waiting out its bound against a ZooKeeper that is gone.

A step whose stop must come earlier or later than the reverse of its start would put
it is split in two: the start in one step, the stop in a step placed where the stop
belongs (``broker.assembly`` lists the cases and why).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from broker.zk_reachability import ZooKeeperReachability

log = logging.getLogger(__name__)

#: a stop's bound unless its step says otherwise
STOP_BOUND_S = 30.0


@dataclass(frozen=True, slots=True)
class Step:
    """One start-up step and its undoing. ``start`` None: the step only places its
    ``stop`` in the shutdown order; ``stop`` None: nothing to undo."""

    name: str
    start: Callable[[], Awaitable[None]] | None
    stop: Callable[[], Awaitable[object]] | None = None
    bound_s: float | None = STOP_BOUND_S
    needs_zookeeper: bool = False


class Lifecycle:
    """Runs ``steps`` forward at start-up and the started ones backward at shutdown.
    ``reachability()`` is the ZooKeeper watch once connected (None before)."""

    def __init__(
        self,
        steps: Sequence[Step],
        reachability: Callable[[], ZooKeeperReachability | None],
    ) -> None:
        self.steps = tuple(steps)
        self._reachability = reachability
        #: the steps whose start returned, in order
        self.started: list[Step] = []
        self._stopped = False

    @property
    def completed(self) -> bool:
        """Whether every step started."""
        return len(self.started) == len(self.steps)

    async def start(self) -> None:
        """Start every step in order; the first failure (or cancellation) propagates,
        the steps started until then stay recorded for :meth:`stop`."""
        if self.started or self._stopped:
            raise RuntimeError("a lifecycle starts once")
        for step in self.steps:
            if step.start is not None:
                log.debug("startup: %s", step.name)
                await step.start()
            self.started.append(step)

    async def stop(self) -> None:
        """Stop every started step, last started first (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        while self.started:
            step = self.started.pop()
            if step.stop is not None:
                await self._stop(step, step.stop)

    async def _stop(self, step: Step, stop: Callable[[], Awaitable[object]]) -> None:
        log.info("shutdown: %s", step.name)
        reachability = self._reachability() if step.needs_zookeeper else None
        try:
            if reachability is not None and step.bound_s is not None:
                await reachability.run_while_reachable(step.name, stop(), step.bound_s)
            else:
                await asyncio.wait_for(stop(), step.bound_s)
        except TimeoutError:
            bound = step.bound_s
            log.error("shutdown step %r did not finish in %.0fs; moving on", step.name, bound)
        except Exception:  # shutdown boundary: a failing step must not skip the later ones
            log.exception("shutdown step %r failed", step.name)
