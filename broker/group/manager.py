"""GroupMetadataManager: ``__consumer_offsets`` behind the ``GroupStore`` seam.

The store half of the group coordinator (Kafka's GroupMetadataManager). It knows which
offsets partition a group lives in (broker.group.partitioner), holds the groups of the
partitions this broker leads, writes their records (broker.group.records) with acks=all,
and rebuilds them from the log when it becomes a partition's leader (broker.group.load).

Partitions of ``__consumer_offsets`` here move through::

    (not ours) --LeaderAndIsr: leader--> loading --log replayed--> owned
        ^                                   |                         |
        +------ follower, or deleted <------+-------------------------+

``coordinator_error`` answers from that: NONE for an owned partition's groups,
COORDINATOR_LOAD_IN_PROGRESS while loading, NOT_COORDINATOR otherwise. A leadership
change reaches the manager through the ReplicaManager's ``on_leadership_change`` (Kafka's
onLeadershipChange) with each partition's leader epoch: a change older than the epoch
already seen for the partition is ignored, so a late request cannot undo a newer one.
Losing a partition drops its groups at once, and the coordinator hears of both moves
through its ``GroupLoadListener`` (its pending joins and syncs then answer
NOT_COORDINATOR; loaded members get a fresh session).

Loading reads the log from its start to its end offset at the moment the load begins,
``offsets.load.buffer.size`` bytes a read (the epochs, the load tasks and the replay are
the machinery the transaction store shares: broker.partition_loads).

Appends (``store_group``, ``store_offsets``, the tombstones) go through
``ReplicaManager.append_records`` with ``offsets.commit.required.acks`` (-1: the ISR)
and ``offsets.commit.timeout.ms``, with internal topics allowed; their errors are mapped
as Kafka maps them (:func:`offset_commit_error`, :func:`group_store_error`). A commit
sits in ``group.pending_offsets`` while its append waits, and enters ``group.offsets``
once acknowledged, unless a commit appended after it already did.

Background work: expiring commits every ``offsets.retention.check.interval.ms``
(broker.group.expiry) and dropping the commits of deleted topics when UpdateMetadata
removes them; both write tombstones, and an Empty group left without commits is removed
(Dead) with a tombstone of its own.

Not safe across threads: everything runs on the broker's event loop (the only thread
work is the decoding of bytes already read).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from broker.admin.topics import OFFSETS_TOPIC
from broker.blocking import RunBlocking, in_thread
from broker.config import BrokerConfig
from broker.delayed.produce import ProduceCallback, ProducePartitionResult
from broker.group import txn_offsets
from broker.group.expiry import expired_offsets, is_removable
from broker.group.load import LoadedGroups, PartitionLoader
from broker.group.model import CommittedOffset, GroupMetadata, GroupState
from broker.group.partitioner import partition_for
from broker.group.records import build_records, group_key, group_value, offset_key, offset_value
from broker.partition import Partition
from broker.partition_loads import LeaderEpochs, PartitionLoads, replay_log, route_leadership
from broker.produce_records import ProducedRecords
from protocol.errors import ErrorCode, error_name
from protocol.records.batch import Compression
from protocol.records.validation import validate_records
from protocol.values import TopicPartition
from timer.clock import Clock

log = logging.getLogger(__name__)

T = TypeVar("T")

#: a leader epoch a StopReplica did not give (always applies)
NO_EPOCH = -1

#: an append whose callback did not name the partition (never expected)
_NO_ANSWER = ProducePartitionResult(ErrorCode.UNKNOWN_SERVER_ERROR)


# -- the error mapping (pure) --------------------------------------------------------------

_UNAVAILABLE = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    }
)
_MOVED = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR})
_TOO_LARGE = frozenset(
    {ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE}
)


def offset_commit_error(append_error: int) -> int:
    """What a client is told when appending its commits answered ``append_error``."""
    if append_error in _UNAVAILABLE:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if append_error in _MOVED:
        return ErrorCode.NOT_COORDINATOR
    if append_error in _TOO_LARGE:
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return append_error


def group_store_error(append_error: int) -> int:
    """What a SyncGroup is told when appending the group's metadata answered
    ``append_error`` (a timeout means the rebalance must start over)."""
    if append_error == ErrorCode.NONE:
        return ErrorCode.NONE
    if append_error in _UNAVAILABLE:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if append_error in _MOVED:
        return ErrorCode.NOT_COORDINATOR
    if append_error == ErrorCode.REQUEST_TIMED_OUT:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.UNKNOWN_SERVER_ERROR


# -- what the manager needs around it ------------------------------------------------------


class Replicas(Protocol):
    """What the manager uses of broker.replica_manager.ReplicaManager."""

    def partition_for(self, tp: TopicPartition) -> Partition | None: ...

    def append_records(
        self,
        entries: Mapping[TopicPartition, ProducedRecords],
        *,
        required_acks: int,
        timeout_ms: int,
        on_done: ProduceCallback,
        internal_topics_allowed: bool = False,
    ) -> None: ...


class GroupLoadListener(Protocol):
    """The coordinator's side of a partition moving: told the groups a load brought in
    and the groups an unload (or a removal of a Dead group) took away."""

    def on_groups_loaded(self, groups: Sequence[GroupMetadata]) -> None: ...

    def on_groups_unloaded(self, groups: Sequence[GroupMetadata]) -> None: ...


@dataclass(frozen=True, slots=True)
class OffsetsConfig:
    """The manager's settings (Kafka's OffsetConfig), read once at startup."""

    num_partitions: int = 50
    required_acks: int = -1
    commit_timeout_ms: int = 5000
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_check_interval_ms: int = 600_000
    load_buffer_size: int = 5 * 1024 * 1024
    metadata_max_bytes: int = 4096
    compression: Compression = Compression.NONE

    @staticmethod
    def from_broker(config: BrokerConfig) -> OffsetsConfig:
        return OffsetsConfig(
            num_partitions=config.get_int("offsets.topic.num.partitions"),
            required_acks=config.get_int("offsets.commit.required.acks"),
            commit_timeout_ms=config.get_int("offsets.commit.timeout.ms"),
            retention_ms=config.get_int("offsets.retention.minutes") * 60_000,
            retention_check_interval_ms=config.get_int("offsets.retention.check.interval.ms"),
            load_buffer_size=config.get_int("offsets.load.buffer.size"),
            metadata_max_bytes=config.get_int("offset.metadata.max.bytes"),
            compression=Compression(config.get_int("offsets.topic.compression.codec")),
        )


class GroupMetadataManager:
    """The GroupStore of one broker (see the module docstring)."""

    def __init__(
        self,
        replicas: Replicas,
        clock: Clock,
        config: OffsetsConfig | None = None,
        *,
        topic_partition_count: Callable[[], int | None] = lambda: None,
        create_offsets_topic: Callable[[], Awaitable[int]] | None = None,
        run_in_thread: RunBlocking = in_thread,
    ) -> None:
        """``topic_partition_count()`` is the partition count of the existing topic
        (the metadata cache's), None before it exists; ``create_offsets_topic`` makes
        the topic (broker.group.offsets_topic)."""
        self._replicas = replicas
        self.clock = clock
        self.config = config or OffsetsConfig()
        self._topic_partition_count = topic_partition_count
        self._create_offsets_topic = create_offsets_topic
        self._run_in_thread = run_in_thread
        self.listener: GroupLoadListener | None = None
        self._groups: dict[str, GroupMetadata] = {}
        #: the offsets partition of each group here, as it was when the group arrived
        self._partition_of: dict[str, int] = {}
        #: log offset of the record each commit in force came from, per (group, tp)
        self._positions: dict[tuple[str, TopicPartition], int] = {}
        self._owned: set[int] = set()
        self._loading = PartitionLoads(OFFSETS_TOPIC, self._read_partition, self._install)
        #: markers written while a partition loads (the load may have read the log
        #: before them): (producer id, commit), applied once its groups are installed
        self._markers_during_load: dict[int, list[tuple[int, bool]]] = {}
        self._epochs = LeaderEpochs(OFFSETS_TOPIC)
        self._background: set[asyncio.Task[object]] = set()
        self._creating: asyncio.Task[int] | None = None
        # counters read by the metrics (the coordinator counts the commits)
        self.offsets_expired = 0
        self.offsets_removed = 0

    # -- locating groups --------------------------------------------------------------------

    def partition_count(self) -> int:
        """The existing topic's partition count; the configured one before it exists."""
        return self._topic_partition_count() or self.config.num_partitions

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.partition_count())

    def coordinator_error(self, group_id: str) -> int:
        return self._loading.coordinator_error(self.partition_for(group_id), self._owned)

    @property
    def owned_partitions(self) -> frozenset[int]:
        return frozenset(self._owned)

    @property
    def loading_partitions(self) -> frozenset[int]:
        return self._loading.partitions

    async def wait_loaded(self, partition: int) -> None:
        """Until the load of ``partition`` under way (if any) ends (tests, tools)."""
        await self._loading.wait(partition)

    # -- the groups -------------------------------------------------------------------------

    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self._groups.get(group_id)

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        existing = self._groups.get(group.group_id)
        if existing is not None:
            return existing
        self._groups[group.group_id] = group
        self._partition_of[group.group_id] = self.partition_for(group.group_id)
        return group

    def groups(self) -> list[GroupMetadata]:
        return list(self._groups.values())

    def _forget(self, group: GroupMetadata) -> None:
        if self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]
            self._partition_of.pop(group.group_id, None)
        for tp in list(group.offsets):
            self._positions.pop((group.group_id, tp), None)

    # -- writing ----------------------------------------------------------------------------

    async def store_group(self, group: GroupMetadata) -> int:
        error = self.coordinator_error(group.group_id)
        if error != ErrorCode.NONE:
            return error
        value = None if group.state is GroupState.DEAD else group_value(group)
        result = await self._append(group.group_id, [(group_key(group.group_id), value)])
        return group_store_error(result.error_code)

    async def store_offsets(
        self, group: GroupMetadata, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> dict[TopicPartition, int]:
        errors: dict[TopicPartition, int] = {}
        valid: dict[TopicPartition, CommittedOffset] = {}
        for tp, committed in offsets.items():
            if len(committed.metadata.encode()) > self.config.metadata_max_bytes:
                errors[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = committed
        if not valid:
            return errors
        error = self.coordinator_error(group.group_id)
        if error != ErrorCode.NONE:
            return {**errors, **dict.fromkeys(valid, error)}
        group_id = group.group_id
        group.pending_offsets.update(valid)
        records = [(offset_key(group_id, tp), offset_value(c)) for tp, c in valid.items()]
        result = await self._append(group_id, records)
        code = offset_commit_error(result.error_code)
        for i, (tp, committed) in enumerate(valid.items()):
            if group.pending_offsets.get(tp) is committed:
                del group.pending_offsets[tp]
            if code == ErrorCode.NONE:
                position = result.base_offset + i
                if position > self._positions.get((group_id, tp), -1):
                    group.offsets[tp] = committed
                    self._positions[group_id, tp] = position
            errors[tp] = code
        return errors

    async def store_txn_offsets(
        self,
        group: GroupMetadata,
        producer: tuple[int, int],
        offsets: Mapping[TopicPartition, CommittedOffset],
    ) -> dict[TopicPartition, int]:
        """TxnOffsetCommit: one transactional batch of ``producer`` (id, epoch), pending
        until its marker (:mod:`broker.group.txn_offsets`)."""
        gid = group.group_id
        if (error := self.coordinator_error(gid)) != ErrorCode.NONE:
            return dict.fromkeys(offsets, error)
        records = [(offset_key(gid, tp), offset_value(c)) for tp, c in offsets.items()]
        result = await self._append(gid, records, producer)
        code = offset_commit_error(result.error_code)
        if code == ErrorCode.NONE:
            txn_offsets.add_pending(group, producer[0], result.base_offset, offsets)
        return dict.fromkeys(offsets, code)

    def complete_txn_offsets(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker was written to ``partition``: end the producer's pending
        commits of the groups there (after the load, if it is loading)."""
        if partition in self._loading:
            self._markers_during_load.setdefault(partition, []).append((producer_id, commit))
            return
        for group in [g for g in self._groups.values() if producer_id in g.txn_offsets]:
            if self._partition_of.get(group.group_id) == partition:
                txn_offsets.complete(group, producer_id, commit, self._positions)

    async def delete_offsets(
        self, group: GroupMetadata, partitions: Iterable[TopicPartition]
    ) -> int:
        gone = [tp for tp in partitions if self._drop_offset(group, tp)]
        if not gone:
            return ErrorCode.NONE
        error = self.coordinator_error(group.group_id)
        if error != ErrorCode.NONE:
            return error
        result = await self._append(
            group.group_id, [(offset_key(group.group_id, tp), None) for tp in gone]
        )
        self.offsets_removed += len(gone)
        return offset_commit_error(result.error_code)

    async def delete_group(self, group: GroupMetadata) -> int:
        error = self.coordinator_error(group.group_id)
        tombstones: list[tuple[bytes, bytes | None]] = [
            (offset_key(group.group_id, tp), None) for tp in group.offsets
        ]
        tombstones.append((group_key(group.group_id), None))
        self._forget(group)
        group.offsets.clear()
        group.pending_offsets.clear()
        group.txn_offsets.clear()
        if error != ErrorCode.NONE:
            return error
        result = await self._append(group.group_id, tombstones)
        return offset_commit_error(result.error_code)

    def _drop_offset(self, group: GroupMetadata, tp: TopicPartition) -> bool:
        group.pending_offsets.pop(tp, None)
        self._positions.pop((group.group_id, tp), None)
        return group.offsets.pop(tp, None) is not None

    async def _append(
        self,
        group_id: str,
        records: Sequence[tuple[bytes, bytes | None]],
        producer: tuple[int, int] | None = None,
    ) -> ProducePartitionResult:
        """Append ``records`` as one batch to the group's partition (transactional, of
        ``producer`` (id, epoch), when given); its result once acknowledged (or failed)."""
        tp = TopicPartition(OFFSETS_TOPIC, self.partition_for(group_id))
        batch = build_records(records, self.clock.time_ms(), self.config.compression, producer)
        future: asyncio.Future[ProducePartitionResult] = asyncio.get_running_loop().create_future()

        def done(results: dict[TopicPartition, ProducePartitionResult]) -> None:
            if not future.done():
                future.set_result(results.get(tp, _NO_ANSWER))

        # The coordinator's own batch, not a Produce request's: the record rules apply
        # (its header is parsed here, once), the request's wire rules do not.
        self._replicas.append_records(
            # (a transactional commit carries no sequence: the coordinator's own write,
            # which the client rules would refuse and the log does not sequence-check)
            {tp: validate_records(batch, from_client=producer is None)},
            required_acks=self.config.required_acks,
            timeout_ms=self.config.commit_timeout_ms,
            on_done=done,
            internal_topics_allowed=True,
        )
        return await future

    # -- leadership -------------------------------------------------------------------------

    def on_leadership_change(
        self, leaders: Mapping[TopicPartition, int], followers: Mapping[TopicPartition, int]
    ) -> None:
        """The ReplicaManager's callback: partitions this broker now leads and those it
        follows or no longer hosts, with their leader epochs (others' topics ignored)."""
        route_leadership(OFFSETS_TOPIC, leaders, followers, self.on_become_leader, self.on_resign)

    def on_become_leader(self, partition: int, epoch: int) -> None:
        """Start loading ``partition`` (unless already owned or loading)."""
        if not self._epochs.accept(partition, epoch):
            return
        if partition in self._owned or partition in self._loading:
            return
        log.info("%s-%d: loading groups and offsets (epoch %d)", OFFSETS_TOPIC, partition, epoch)
        self._loading.start(partition)

    def on_resign(self, partition: int, epoch: int = NO_EPOCH) -> None:
        """Drop ``partition``'s groups (and stop its load)."""
        if not self._epochs.accept(partition, epoch):
            return
        self._loading.stop(partition)
        self._markers_during_load.pop(partition, None)
        was_owned = partition in self._owned
        self._owned.discard(partition)
        if not was_owned:
            return
        gone = [g for g in self._groups.values() if self._partition_of.get(g.group_id) == partition]
        for group in gone:
            self._forget(group)
        log.info("%s-%d: unloaded %d groups", OFFSETS_TOPIC, partition, len(gone))
        if gone and self.listener is not None:
            self.listener.on_groups_unloaded(gone)

    async def _read_partition(self, partition: int) -> tuple[LoadedGroups, int]:
        """The groups of ``partition``'s log, and when the load began (monotonic ms)."""
        started = self.clock.monotonic_ms()
        loader = PartitionLoader()
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        await replay_log(
            self._replicas, tp, loader, self.config.load_buffer_size, self._run_in_thread
        )
        return loader.result(), started

    def _install(self, partition: int, read: tuple[LoadedGroups, int]) -> None:
        loaded, started = read
        self._owned.add(partition)
        for producer_id, commit in self._markers_during_load.pop(partition, ()):
            for group in loaded.groups.values():
                txn_offsets.complete(group, producer_id, commit, loaded.positions)
        installed = []
        for group_id, group in loaded.groups.items():
            if group_id in self._groups:
                log.warning("group %s was already here when its partition loaded", group_id)
                continue
            self._groups[group_id] = group
            self._partition_of[group_id] = partition
            installed.append(group)
        ids = {g.group_id for g in installed}
        for (group_id, tp), position in loaded.positions.items():
            if group_id in ids:
                self._positions[group_id, tp] = position
        log.info(
            "%s-%d: loaded %d groups in %d ms (%d records skipped)",
            OFFSETS_TOPIC,
            partition,
            len(loaded.groups),
            self.clock.monotonic_ms() - started,
            loaded.skipped,
        )
        if installed and self.listener is not None:
            self.listener.on_groups_loaded(installed)

    # -- the offsets topic ------------------------------------------------------------------

    def request_offsets_topic(self) -> None:
        """Create the offsets topic in the background unless a creation is under way
        (FindCoordinator answers COORDINATOR_NOT_AVAILABLE meanwhile)."""
        if self._create_offsets_topic is None:
            return
        if self._creating is not None and not self._creating.done():
            return
        self._creating = self._spawn(self._create_offsets_topic(), "create-offsets-topic")

    @property
    def offsets_topic_creation(self) -> asyncio.Task[int] | None:
        """The creation under way or last made (None before any)."""
        return self._creating

    # -- cleanup: expiry, deleted topics ----------------------------------------------------

    async def expire_offsets(self) -> int:
        """The offsets-expiry task: tombstone the expired commits of every group here
        and remove the Empty groups left without commits; returns the commits expired."""
        now = self.clock.time_ms()
        retention = self.config.retention_ms
        expired = await self._cleanup(lambda g: expired_offsets(g, now, retention))
        self.offsets_expired += expired
        if expired:
            log.info("expired %d committed offsets", expired)
        return expired

    def on_partitions_deleted(self, partitions: Iterable[tuple[str, int]]) -> None:
        """UpdateMetadata removed these partitions (their topic was deleted): drop their
        commits from every group here, in the background."""
        gone = {TopicPartition(t, p) for t, p in partitions if t != OFFSETS_TOPIC}
        if gone and self._groups:
            self._spawn(self.remove_offsets(gone), "remove-deleted-offsets")

    async def remove_offsets(self, partitions: set[TopicPartition]) -> int:
        """Tombstone every group's commits of ``partitions`` (Kafka's
        handleDeletedPartitions); returns how many were removed."""
        removed = await self._cleanup(lambda g: [tp for tp in g.offsets if tp in partitions])
        self.offsets_removed += removed
        return removed

    async def _cleanup(self, select: Callable[[GroupMetadata], list[TopicPartition]]) -> int:
        """Remove the commits ``select`` picks from each group, and the Empty groups left
        without commits, with one batch of tombstones per group."""
        appends = []
        removed = 0
        dead: list[GroupMetadata] = []
        for group in list(self._groups.values()):
            if self.coordinator_error(group.group_id) != ErrorCode.NONE:
                continue
            tps = [tp for tp in select(group) if self._drop_offset(group, tp)]
            tombstones: list[tuple[bytes, bytes | None]] = [
                (offset_key(group.group_id, tp), None) for tp in tps
            ]
            removed += len(tps)
            if is_removable(group):
                group.state = GroupState.DEAD
                self._forget(group)
                dead.append(group)
                tombstones.append((group_key(group.group_id), None))
            if tombstones:
                appends.append(self._append(group.group_id, tombstones))
        if dead and self.listener is not None:
            self.listener.on_groups_unloaded(dead)
        for result in await asyncio.gather(*appends):
            if result.error_code != ErrorCode.NONE:
                log.warning("writing tombstones failed: %s", error_name(result.error_code))
        return removed

    def _spawn(self, coro: Awaitable[T], name: str) -> asyncio.Task[T]:
        task: asyncio.Task[T] = asyncio.ensure_future(coro)
        task.set_name(name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def drain(self) -> None:
        """Until the background writes under way (tombstones, a topic creation) end."""
        while self._background:
            await asyncio.wait(list(self._background))

    async def shutdown(self) -> None:
        """Stop loads and background writes (the broker is stopping)."""
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        await asyncio.gather(self._loading.shutdown(), *tasks, return_exceptions=True)

    # -- what the metrics read ----------------------------------------------------------------

    def committed_offset_count(self) -> int:
        return sum(len(g.offsets) for g in self._groups.values())

    def lags(self) -> dict[tuple[str, str], int]:
        """Per (group, topic), the messages between its commits and the high watermarks
        of the partitions this broker holds a replica of (others are left out: their
        end offsets are not known here)."""
        lags: dict[tuple[str, str], int] = {}
        for group in self._groups.values():
            for tp, committed in group.offsets.items():
                partition = self._replicas.partition_for(tp)
                if partition is None or partition.log is None:
                    continue
                lag = max(0, partition.high_watermark - committed.offset)
                key = (group.group_id, tp.topic)
                lags[key] = lags.get(key, 0) + lag
        return lags
