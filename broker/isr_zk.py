"""A leader's ISR changes in ZooKeeper (ZooKeeper mode): the write, then the notification.

1. :class:`ZkIsrWriter` writes the new ISR to /brokers/topics/<t>/partitions/<p>/state,
   keeping the leader, leader epoch and controller epoch, conditionally on the zkVersion
   the leader holds (``ZkFacade.update_leader_and_isr``); its outcome comes back to the
   Partition on the event loop.

2. The controller does not watch thousands of state znodes; it watches
   /isr_change_notification. :class:`IsrChangePropagator` (Kafka's isr-change-propagation
   task) collects the partitions whose ISR this broker changed and writes them in one
   sequential ``isr_change_`` znode, which the controller reads to refresh its cache and
   send UpdateMetadata to every broker (so Metadata shows the new ISR), then deletes.
   Changes are batched: the task runs every ``check_interval_ms`` and writes when the last
   change is more than ``blackout_ms`` old (a burst of shrinks, as when a broker dies,
   ends in one notification) or the last write more than ``max_delay_ms`` ago (a steady
   trickle is not held back forever). A write that fails keeps the partitions queued.

Kafka 3.x brokers send AlterPartition to the controller instead (KIP-497), which also
lets the controller refuse a change; minikafka keeps the ZooKeeper-mode path on
purpose, since its controller is ZooKeeper-based and already watches the notifications.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass

from broker.isr import IsrWriteOutcome, IsrWriteResult
from protocol.values import TopicPartition
from timer.clock import Clock
from zk.errors import StateConflictError
from zk.facade import ZkFacade
from zk.model import LeaderAndIsr

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PropagationTimes:
    """Kafka's constants (ReplicaManager.IsrChangePropagation*); tests pass shorter ones."""

    check_interval_ms: int = 2_500
    blackout_ms: int = 5_000
    max_delay_ms: int = 60_000


def should_propagate(
    now_ms: int, last_change_ms: int, last_propagation_ms: int, times: PropagationTimes
) -> bool:
    """Whether queued changes are written now (see the module doc)."""
    return (
        now_ms - last_change_ms > times.blackout_ms
        or now_ms - last_propagation_ms > times.max_delay_ms
    )


class IsrChangePropagator:
    """Queues partitions whose ISR changed and writes them as one notification.
    Event-loop bound: ``record`` from the loop, ``maybe_propagate`` as a loop task."""

    def __init__(
        self,
        clock: Clock,
        propagate: Callable[[list[TopicPartition]], Awaitable[object]],
        times: PropagationTimes | None = None,
    ) -> None:
        """``propagate`` writes one notification (off the loop)."""
        self._clock = clock
        self._propagate = propagate
        self.times = times or PropagationTimes()
        self._pending: set[TopicPartition] = set()
        now = clock.monotonic_ms()
        self._last_change_ms = now
        self._last_propagation_ms = now

    @property
    def pending(self) -> Collection[TopicPartition]:
        return frozenset(self._pending)

    def record(self, tp: TopicPartition) -> None:
        self._pending.add(tp)
        self._last_change_ms = self._clock.monotonic_ms()

    async def maybe_propagate(self) -> bool:
        """The periodic task: write the queued changes if due. True when written."""
        now = self._clock.monotonic_ms()
        if not self._pending or not should_propagate(
            now, self._last_change_ms, self._last_propagation_ms, self.times
        ):
            return False
        batch = sorted(self._pending)
        self._pending.clear()
        try:
            await self._propagate(batch)
        except Exception as exc:  # ZooKeeper unreachable: keep them for the next run
            log.warning("could not write the ISR change notification: %s", exc)
            self._pending.update(batch)
            return False
        self._last_propagation_ms = now
        log.debug("ISR change notification for %d partitions", len(batch))
        return True


class ZkIsrWriter:
    """The broker's IsrWriter: each write a task of its own, bounded by ``timeout_s``
    (a ZooKeeper that does not answer fails the write; the leader tries again later)."""

    def __init__(self, zk: ZkFacade, timeout_s: float = 10.0) -> None:
        self._zk = zk
        self._timeout_s = timeout_s
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(
        self,
        tp: TopicPartition,
        state: LeaderAndIsr,
        controller_epoch: int,
        on_done: Callable[[IsrWriteResult], None],
    ) -> None:
        task = asyncio.get_running_loop().create_task(
            self._write(tp, state, controller_epoch, on_done), name=f"isr-write-{tp}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(
        self,
        tp: TopicPartition,
        state: LeaderAndIsr,
        controller_epoch: int,
        on_done: Callable[[IsrWriteResult], None],
    ) -> None:
        try:
            written = await asyncio.wait_for(
                self._zk.update_leader_and_isr(tp, state, controller_epoch),
                self._timeout_s,
            )
        except StateConflictError:
            result = IsrWriteResult(IsrWriteOutcome.CONFLICT)
        except Exception as exc:  # kazoo's connection errors and timeouts: retried later
            log.warning("%s: writing the ISR %s failed: %r", tp, list(state.isr), exc)
            result = IsrWriteResult(IsrWriteOutcome.FAILED)
        else:
            result = IsrWriteResult(IsrWriteOutcome.WRITTEN, written.zk_version)
        on_done(result)

    async def shutdown(self) -> None:
        """Abandon the writes in flight (the partitions are no longer served)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
