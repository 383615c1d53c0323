"""The controller's events and its single-consumer event queue.

Everything that changes controller state arrives here as an event: ZooKeeper watches
and session changes (enqueued from kazoo's thread with ``put_threadsafe``), requests
from the broker (controlled shutdown, leader elections), the brokers' answers to the
controller's own requests (posted by the channel manager's callbacks), and the
controller's own start and stop. One task
takes events in order and awaits the handler for each, so handlers never interleave and
the ControllerContext needs no locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from kazoo.exceptions import KazooException

from protocol.messages import LeaderAndIsrResponse, StopReplicaResponse
from protocol.values import TopicPartition

log = logging.getLogger(__name__)


class ControllerEvent:
    """Base class of every event."""

    #: safe to run again after a transient ZooKeeper error (the handler re-reads its input)
    retriable = False

    def discard(self) -> None:
        """Called instead of the handler when the manager shuts down with it queued."""


@dataclass
class Startup(ControllerEvent):
    """Run the first election."""

    retriable = True


@dataclass
class ControllerChange(ControllerEvent):
    """/controller was created, changed or deleted."""

    retriable = True


@dataclass
class Reelect(ControllerEvent):
    """Resign if needed and elect again (after /controller vanished)."""

    retriable = True


@dataclass
class BrokerChange(ControllerEvent):
    """/brokers/ids children changed."""

    retriable = True


@dataclass
class TopicChange(ControllerEvent):
    """/brokers/topics children changed."""

    retriable = True


@dataclass
class PartitionModifications(ControllerEvent):
    """A topic's assignment znode changed (partitions added)."""

    retriable = True

    topic: str


@dataclass
class IsrChangeNotification(ControllerEvent):
    """Leaders wrote /isr_change_notification entries."""

    retriable = True


@dataclass
class AutoPreferredLeaderElection(ControllerEvent):
    """The periodic leader-imbalance check is due."""

    retriable = True


@dataclass
class PreferredReplicaElection(ControllerEvent):
    """/admin/preferred_replica_election was written (an operator asked)."""

    retriable = True


@dataclass
class SessionState(ControllerEvent):
    """Kazoo reported a connection state: CONNECTED, SUSPENDED or LOST."""

    state: str


@dataclass
class NewSession(ControllerEvent):
    """Connected again after LOST: register the broker again and re-elect."""

    retriable = True


@dataclass
class Reconnected(ControllerEvent):
    """Connected again within the same session: kazoo dropped its watches; re-arm them."""

    retriable = True


@dataclass
class ControlledShutdown(ControllerEvent):
    """A broker asks to shut down cleanly; the result goes to ``reply``."""

    broker_id: int
    broker_epoch: int
    reply: asyncio.Future[object] = field(repr=False)

    def discard(self) -> None:
        if not self.reply.done():
            self.reply.set_result(None)  # the controller is going away: no answer


@dataclass
class ElectLeaders(ControllerEvent):
    """An ElectLeaders request: elect ``partitions`` (None: all) by ``election_type``
    (controller.elect_leaders.ElectionType); the outcomes go to ``reply`` (None when
    this broker is not the controller)."""

    partitions: list[TopicPartition] | None
    election_type: int
    reply: asyncio.Future[object] = field(repr=False)

    def discard(self) -> None:
        if not self.reply.done():
            self.reply.set_result(None)


@dataclass
class LeaderAndIsrResponseReceived(ControllerEvent):
    """A broker answered a LeaderAndIsr request; ``response`` None: the broker was removed
    (it died, or this controller resigned) before it answered."""

    broker_id: int
    response: LeaderAndIsrResponse | None


@dataclass
class StopReplicaResponseReceived(ControllerEvent):
    """A broker answered a StopReplica request (None: it was removed before answering);
    ``deleted``: the partitions that request asked it to delete."""

    broker_id: int
    response: StopReplicaResponse | None
    deleted: frozenset[TopicPartition] = frozenset()


@dataclass
class TopicDeletion(ControllerEvent):
    """/admin/delete_topics children changed: topics queued for deletion."""

    retriable = True


@dataclass
class ZkPartitionReassignment(ControllerEvent):
    """/admin/reassign_partitions was created, changed or deleted (controller.reassigner)."""

    retriable = True


@dataclass
class PartitionReassignmentIsrChange(ControllerEvent):
    """The state znode of a partition being reassigned changed: maybe its ISR now holds
    every target replica."""

    retriable = True

    tp: TopicPartition


@dataclass
class AlterPartitionReassignments(ControllerEvent):
    """The AlterPartitionReassignments API: partition -> target replicas (None cancels);
    the per-partition outcome goes to ``reply`` (None: not the controller)."""

    targets: dict[TopicPartition, tuple[int, ...] | None]
    reply: asyncio.Future[object] = field(repr=False)

    def discard(self) -> None:
        if not self.reply.done():
            self.reply.set_result(None)


@dataclass
class ListPartitionReassignments(ControllerEvent):
    """The ListPartitionReassignments API: the ongoing reassignments among ``partitions``
    (None: all) go to ``reply`` (None: not the controller)."""

    partitions: list[TopicPartition] | None
    reply: asyncio.Future[object] = field(repr=False)

    def discard(self) -> None:
        if not self.reply.done():
            self.reply.set_result(None)


@dataclass
class Stop(ControllerEvent):
    """Sentinel: the consumer task ends after it."""


#: told of each handled event: its type name, seconds queued, seconds handling it
EventObserver = Callable[[str, float, float], None]


class ControllerEventManager:
    """One asyncio queue, one consumer task. Not thread safe except ``put_threadsafe``.

    The time each event arrived (``clock``: monotonic seconds) is kept beside the queue,
    in the same order, so an ``observer`` (the broker's metrics) learns how long it waited
    and how long it took.
    """

    def __init__(
        self,
        handler: Callable[[ControllerEvent], Awaitable[None]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._handler = handler
        self._clock = clock
        self.observer: EventObserver | None = None
        self._queue: asyncio.Queue[ControllerEvent] = asyncio.Queue()
        self._arrivals: deque[float] = deque()  # one per queued event, oldest first
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: delay before an event that hit a transient ZooKeeper error runs again
        self.retry_delay_s = 1.0
        self.processed = 0

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._run(), name="controller-events")

    def put(self, event: ControllerEvent) -> None:
        self._arrivals.append(self._clock())
        self._queue.put_nowait(event)

    def put_threadsafe(self, event: ControllerEvent) -> None:
        """From kazoo's threads: hand the event to the loop; drop it if the loop is gone."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # loop closed between the check and the call
            loop.call_soon_threadsafe(self.put, event)

    def queue_size(self) -> int:
        return self._queue.qsize()

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            queued_at = self._arrivals.popleft() if self._arrivals else self._clock()
            if isinstance(event, Stop):
                return
            started = self._clock()
            try:
                await self._handler(event)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # the loop boundary: one failed event must not stop the controller
                if event.retriable and isinstance(exc, KazooException):
                    log.warning("controller event %r failed (%s); retrying", event, exc)
                    self._retry_later(event)
                else:
                    log.exception("controller event %r failed", event)
            self.processed += 1
            if self.observer is not None:
                self.observer(type(event).__name__, started - queued_at, self._clock() - started)

    def _retry_later(self, event: ControllerEvent) -> None:
        asyncio.get_running_loop().call_later(self.retry_delay_s, self._requeue, event)

    def _requeue(self, event: ControllerEvent) -> None:
        if self._task is not None:  # not after shutdown
            self.put(event)

    async def shutdown(self, timeout_s: float = 30.0) -> None:
        """Discard queued events, let the one in progress finish (or cancel it after
        ``timeout_s``), and end the consumer task."""
        while not self._queue.empty():
            self._queue.get_nowait().discard()
        self._arrivals.clear()
        task, self._task = self._task, None
        if task is None:
            return
        self.put(Stop())
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout_s)
        except TimeoutError:
            log.warning("controller event in progress did not finish in %ss", timeout_s)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
