"""Loading the partitions of a coordinator's internal topic as this broker comes to lead
them: the machinery the group store (``__consumer_offsets``) and the transaction store
(``__transaction_state``) share.

Both coordinators keep their state in a compacted internal topic and serve the keys of
the partitions this broker leads. Both follow the same leadership rules (Kafka's
GroupMetadataManager and TransactionStateManager, which share them too):

- the ReplicaManager reports each partition this broker now leads or no longer leads
  with its leader epoch (:func:`route_leadership` keeps the topic's own);
- a change older than the newest epoch seen for its partition is ignored, so that a late
  LeaderAndIsr or StopReplica cannot undo a newer one; a StopReplica without an epoch
  always applies; a deletion (EPOCH_DURING_DELETE) forgets the epoch, since a topic
  created again starts over (:class:`LeaderEpochs`);
- becoming leader starts a load, one task per partition (:class:`PartitionLoads`):
  replaying the log from its start to its end offset at the moment the load began
  (:func:`replay_log`), reading ``load_buffer_size`` bytes at a time on the event loop
  (the log's segment list is the loop's) and decoding each chunk in a worker thread, so
  that a large partition does not stall the loop. Only a load that is still the
  partition's current one when it ends is installed: losing the leadership cancels it,
  and a load that ended while it was being replaced is dropped. A damaged or vanished log
  ends the load without installing anything (the partition is then neither loading nor
  owned: its keys answer NOT_COORDINATOR).

What a store replays into (its records' format) and what it installs are its own: the
``Replayer`` it hands to :func:`replay_log` and the ``install`` it gives
:class:`PartitionLoads`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Container, Mapping
from typing import Generic, Protocol, TypeVar

from broker.blocking import RunBlocking
from broker.partition import Partition
from protocol.errors import ErrorCode
from protocol.values import EPOCH_DURING_DELETE, TopicPartition
from storage import StorageError
from storage.errors import OffsetOutOfRangeError

log = logging.getLogger(__name__)

T = TypeVar("T")

Buffer = bytes | bytearray | memoryview


class Replayer(Protocol):
    """A store's decoder of its topic's batches: ``next_offset`` is the first offset it
    has not taken yet; ``add_batches`` takes the whole batches of a chunk read from there
    (skipping what lies before ``next_offset``) and moves ``next_offset`` past them."""

    next_offset: int

    def add_batches(self, data: Buffer) -> int: ...


class HostedPartitions(Protocol):
    """What the replay reads through (broker.replica_manager.ReplicaManager)."""

    def partition_for(self, tp: TopicPartition) -> Partition | None: ...


async def replay_log(
    replicas: HostedPartitions,
    tp: TopicPartition,
    replayer: Replayer,
    load_buffer_size: int,
    run_in_thread: RunBlocking,
) -> None:
    """Feed ``replayer`` ``tp``'s log from its start to its end as the replay began.
    StorageError when the log is not here or holds no whole batch where one must start."""
    partition = replicas.partition_for(tp)
    lg = partition.log if partition is not None else None
    if lg is None:
        raise StorageError(f"{tp} has no log here")
    replayer.next_offset = lg.log_start_offset
    end = lg.log_end_offset
    while replayer.next_offset < end:
        try:
            data = lg.read_bytes(replayer.next_offset, load_buffer_size, end)
        except OffsetOutOfRangeError:
            # the log start moved past us (records deleted): go on from there
            if lg.log_start_offset <= replayer.next_offset:
                raise
            replayer.next_offset = lg.log_start_offset
            continue
        if not data:
            break
        before = replayer.next_offset
        await run_in_thread(lambda data=data: replayer.add_batches(data))  # type: ignore[misc]
        if replayer.next_offset <= before:
            # a read returns at least its first whole batch: no progress is damage
            raise StorageError(f"{tp}: no whole batch at offset {before}")


def route_leadership(
    topic: str,
    leaders: Mapping[TopicPartition, int],
    followers: Mapping[TopicPartition, int],
    become_leader: Callable[[int, int], None],
    resign: Callable[[int, int], None],
) -> None:
    """The ReplicaManager's report of leadership changes, each (partition, leader epoch)
    of ``topic`` handed on (others' topics ignored): leaders first, then the others."""
    for tp, epoch in leaders.items():
        if tp.topic == topic:
            become_leader(tp.partition, epoch)
    for tp, epoch in followers.items():
        if tp.topic == topic:
            resign(tp.partition, epoch)


class LeaderEpochs:
    """The newest leader epoch seen per partition of ``topic`` (Kafka's
    epochForPartitionId)."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self._epochs: dict[int, int] = {}

    def get(self, partition: int) -> int:
        """The newest epoch seen for ``partition``, -1 before any."""
        return self._epochs.get(partition, -1)

    def accept(self, partition: int, epoch: int) -> bool:
        """Record ``epoch`` for ``partition`` unless an older one; whether the change it
        came with applies."""
        current = self._epochs.get(partition)
        if epoch == EPOCH_DURING_DELETE:  # the topic is deleted: a new one starts over
            self._epochs.pop(partition, None)
            return True
        if epoch < 0:  # a StopReplica without an epoch
            return True
        if current is not None and epoch < current:
            log.info("%s-%d: ignoring leader epoch %d, %d is newer", self.topic, partition,
                     epoch, current)  # fmt: skip
            return False
        self._epochs[partition] = epoch
        return True


class PartitionLoads(Generic[T]):
    """The loads under way of ``topic``'s partitions, one task each: ``load(partition)``
    reads the partition's state, ``install(partition, state)`` takes it in once the load
    ended and is still the partition's current one."""

    def __init__(
        self,
        topic: str,
        load: Callable[[int], Awaitable[T]],
        install: Callable[[int, T], None],
    ) -> None:
        self.topic = topic
        self._load = load
        self._install = install
        self._tasks: dict[int, asyncio.Task[None]] = {}

    def __contains__(self, partition: int) -> bool:
        return partition in self._tasks

    @property
    def partitions(self) -> frozenset[int]:
        return frozenset(self._tasks)

    def coordinator_error(self, partition: int, owned: Container[int]) -> int:
        """What a request for a key of ``partition`` is answered before the store's own
        checks: NONE when the partition is ``owned`` (loaded), COORDINATOR_LOAD_IN_PROGRESS
        while it loads, NOT_COORDINATOR otherwise."""
        if partition in owned:
            return ErrorCode.NONE
        if partition in self._tasks:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NOT_COORDINATOR

    def start(self, partition: int) -> None:
        """Start loading ``partition`` (the caller checked none is under way)."""
        self._tasks[partition] = asyncio.get_running_loop().create_task(
            self._run(partition), name=f"load-{self.topic}-{partition}"
        )

    def stop(self, partition: int) -> None:
        """Cancel the load of ``partition``, if one is under way."""
        task = self._tasks.pop(partition, None)
        if task is not None:
            task.cancel()

    async def wait(self, partition: int) -> None:
        """Until the load of ``partition`` under way (if any) ends (tests, tools)."""
        task = self._tasks.get(partition)
        if task is not None:
            await asyncio.wait([task])

    async def shutdown(self) -> None:
        """Cancel every load under way and wait for them to end."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    async def _run(self, partition: int) -> None:
        tp = TopicPartition(self.topic, partition)
        try:
            state = await self._load(partition)
        except asyncio.CancelledError:
            log.info("%s: load stopped (leadership moved)", tp)
            raise
        except (StorageError, ValueError) as exc:  # a damaged or removed log: not ours
            log.error("%s: loading failed: %s", tp, exc)
            if self._tasks.get(partition) is asyncio.current_task():
                del self._tasks[partition]
            return
        if self._tasks.get(partition) is not asyncio.current_task():
            return  # resigned while the last chunk was decoded
        del self._tasks[partition]
        self._install(partition, state)
