"""ReplicaManager: the partitions this broker hosts, their roles, appends and reads.

The one owner of :class:`~broker.partition.Partition` objects. The controller's requests
change roles (:meth:`become_leader_or_follower`, :meth:`stop_replicas`, both fenced by
the controller epoch); the Kafka API handlers append (:meth:`append_records`), read
(:meth:`fetch_messages`) and look offsets up through it. Appends wake the delayed
operations watched under the partitions they touched: a DelayedFetch may now have its
``min_bytes``, a DelayedProduce its high watermark.

Replication, leader side: a fetch with a replica id >= 0 comes from a follower. After
reading it, the manager records the follower's position in the partition
(``Partition.update_follower_fetch_state``), which may add the follower to the ISR and
move the high watermark; a high watermark that moved completes the acks=all produces and
the consumers' fetches waiting on the partition. The periodic ``isr-expiration`` task
(:meth:`maybe_shrink_isr`, every replica.lag.time.max.ms / 2) drops lagging followers
from the ISR. Each ISR change a leader wrote to ZooKeeper is counted and queued for the
controller's ISR change notification (``broker.isr_zk.IsrChangePropagator``).

DeleteRecords (:meth:`delete_records`) moves a led partition's log start; each follower
fetch carries the follower's log start, and one that moved, or a follower's broker
leaving the live brokers (:meth:`live_brokers_changed`), may complete the
DelayedDeleteRecords waiting for every live replica to follow.

Results come back through callbacks, as in Kafka, because acks=all produces and long-poll
fetches finish later, in a purgatory; the callback runs synchronously when no waiting is
needed, so a handler can tell the two cases apart and answer at once.

Appends run on the event loop: a write is an ``os.write`` into the page cache, and the
log hands flushes (fsync) to LogManager's worker thread. The controller's requests touch
the disk harder -- creating a log fsyncs its partition.metadata, a new leader epoch is
written to the leader-epoch checkpoint, deleting a log renames its directory and
rewrites the directory's checkpoints, each about a millisecond, times the thousand
partitions one request may carry -- so those two methods are coroutines that do the
disk work for the whole request in one call to ``run_blocking`` (a worker thread), and
only the in-memory changes on the loop. The response leaves once that work is done, so
an answer of NONE still means "on disk", as in Kafka.

Not safe across tasks beyond the event loop: every method runs on the loop's thread.
LeaderAndIsr and StopReplica hold ``_state_change_lock`` (Kafka's replicaStateChangeLock)
across their awaits, so two of them never interleave, and the worker thread only ever
touches logs that no Partition serves yet (opening) or any more (deleting), or the
epoch cache, which is safe to write from another thread.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from broker.delayed.delete_records import (
    DelayedDeleteRecords,
    DeleteRecordsCallback,
    DeleteRecordsPartitionResult,
    DeleteRecordsPartitionStatus,
)
from broker.delayed.fetch import (
    DelayedFetch,
    FetchInfos,
    FetchParams,
    FetchPartitionResult,
    FetchResults,
    PartitionFetchInfo,
)
from broker.delayed.produce import (
    DelayedProduce,
    ProduceCallback,
    ProducePartitionResult,
    ProducePartitionStatus,
)
from broker.isr import IsrChange, IsrWriter
from broker.isr_zk import IsrChangePropagator
from broker.metrics import BrokerMetrics
from broker.partition import (
    Partition,
    PartitionError,
    PartitionStateLike,
    topic_id_text,
)
from broker.replication import LeaderEndpoint, ReplicaFetcherManager, resolve_leader_endpoint
from protocol.errors import ErrorCode
from protocol.values import EPOCH_DURING_DELETE, INTERNAL_TOPICS, NO_LEADER_EPOCH, TopicPartition
from storage import Log, LogManager, RecordError, StorageError, TimestampOffset
from timer import DelayedOperationPurgatory
from timer.clock import Clock
from zk.model import INITIAL_CONTROLLER_EPOCH

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The replica ids of consumers, and of debugging tools (which may read from followers).
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2

Records = bytes | bytearray | memoryview | None


class RunBlocking(Protocol):
    """Runs a blocking function off the event loop (``asyncio.to_thread``)."""

    def __call__(self, fn: Callable[[], T], /) -> Awaitable[T]: ...


class LiveLeaderLike(Protocol):
    """A live leader of a LeaderAndIsr request (the request's struct), read only."""

    @property
    def broker_id(self) -> int: ...
    @property
    def host_name(self) -> str: ...
    @property
    def port(self) -> int: ...


async def in_thread(fn: Callable[[], T]) -> T:
    return await asyncio.to_thread(fn)


#: Told, after a LeaderAndIsr or StopReplica, which partitions this broker now leads and
#: which it now follows or deleted, each with its leader epoch (-1 when a StopReplica gave
#: none): Kafka's onLeadershipChange, by which the group coordinator loads and unloads its
#: offsets partitions.
LeadershipChange = Callable[[Mapping[TopicPartition, int], Mapping[TopicPartition, int]], None]


@dataclass(frozen=True, slots=True)
class ReplicaManagerServices:
    """The broker services a ReplicaManager works with, each built once by the assembly.

    ``run_blocking`` runs the controller requests' disk work off the loop;
    ``isr_writer`` writes a leader's ISR changes to ZooKeeper (None: leaders never
    change their ISR) and ``isr_propagator`` queues them for the controller (None: not
    propagated); ``replica_fetchers`` copies the leaders' logs into the followers (None:
    nothing is fetched). DeleteRecords responses wait in ``delete_records_purgatory``."""

    log_manager: LogManager
    produce_purgatory: DelayedOperationPurgatory[DelayedProduce]
    fetch_purgatory: DelayedOperationPurgatory[DelayedFetch]
    delete_records_purgatory: DelayedOperationPurgatory[DelayedDeleteRecords]
    metrics: BrokerMetrics
    clock: Clock
    run_blocking: RunBlocking
    isr_writer: IsrWriter | None
    isr_propagator: IsrChangePropagator | None
    replica_fetchers: ReplicaFetcherManager | None


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What a ReplicaManager reads of the rest of the cluster (the metadata cache and the
    topics' configuration, in a broker). ``min_insync_replicas(topic)``: the topic's
    min.insync.replicas; ``is_known_partition(topic, p)`` tells a partition led elsewhere
    (NOT_LEADER_OR_FOLLOWER) from one that does not exist; ``is_alive_broker(id)``:
    whether a follower's broker is live (DeleteRecords waits for those only);
    ``leader_endpoint(id)``: a leader's inter-broker address, for the fetchers."""

    min_insync_replicas: Callable[[str], int]
    is_known_partition: Callable[[str, int], bool]
    is_alive_broker: Callable[[int], bool]
    leader_endpoint: Callable[[int], tuple[str, int] | None]


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        services: ReplicaManagerServices,
        cluster: ClusterView,
        *,
        replica_lag_time_max_ms: int,
    ) -> None:
        """Broker ``broker_id``'s replicas over ``services``, reading ``cluster``; a
        follower that has not caught up for ``replica_lag_time_max_ms`` leaves the ISR.
        Every argument is required: tests build theirs with the factory under tests/."""
        self.broker_id = broker_id
        self.log_manager = services.log_manager
        self.produce_purgatory = services.produce_purgatory
        self.fetch_purgatory = services.fetch_purgatory
        self.metrics = services.metrics
        self.min_insync_replicas = cluster.min_insync_replicas
        self._is_known_partition = cluster.is_known_partition
        self._run_blocking = services.run_blocking
        self.clock: Clock = services.clock
        self._isr_writer = services.isr_writer
        self.isr_propagator = services.isr_propagator
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.replica_fetchers = services.replica_fetchers
        self._leader_endpoint = cluster.leader_endpoint
        self.delete_records_purgatory: DelayedOperationPurgatory[DelayedDeleteRecords] = (
            services.delete_records_purgatory
        )
        self.is_alive_broker = cluster.is_alive_broker
        self._state_change_lock = asyncio.Lock()
        self._partitions: dict[TopicPartition, Partition] = {}
        self.controller_id = -1
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        #: told of every leadership change; set once by the assembly (the group store,
        #: which is built over this manager: the one back-reference between the two)
        self.on_leadership_change: LeadershipChange | None = None
        metrics = self.metrics
        metrics.under_replicated_partitions.set_function(self.under_replicated_count)
        metrics.under_min_isr_partitions.set_function(self.under_min_isr_count)
        metrics.watch_follower_lags(self.follower_lags)

    # -- the partition table -------------------------------------------------------------

    def get_partition(self, topic: str, partition: int) -> Partition | None:
        return self._partitions.get(TopicPartition(topic, partition))

    def partition_for(self, tp: TopicPartition) -> Partition | None:
        return self._partitions.get(tp)

    def all_partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self._partitions.values() if p.is_leader]

    def under_replicated_count(self) -> int:
        return sum(1 for p in self._partitions.values() if p.is_under_replicated)

    def under_min_isr_count(self) -> int:
        """Led partitions whose ISR is below min.insync.replicas (acks=all is refused)."""
        return sum(
            1
            for p in self._partitions.values()
            if p.is_leader and p.is_under_min_isr(self.min_insync_replicas(p.tp.topic))
        )

    def follower_lags(self) -> dict[int, list[int]]:
        """Per follower broker, its lag (offsets behind the leader's log end) in each
        partition led here."""
        lags: dict[int, list[int]] = {}
        for partition in self._partitions.values():
            for follower, lag in partition.follower_lags().items():
                lags.setdefault(follower, []).append(lag)
        return lags

    def offline_replica_count(self) -> int:
        return sum(1 for p in self._partitions.values() if p.is_offline)

    def _leader_or_error(self, tp: TopicPartition) -> Partition:
        """The partition if hosted here; otherwise why not, as Kafka answers it."""
        partition = self._partitions.get(tp)
        if partition is not None:
            return partition
        if self._is_known_partition is not None and self._is_known_partition(*tp):
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{tp} is not hosted here")
        raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} does not exist")

    # -- controller requests -------------------------------------------------------------

    def is_stale_controller_epoch(self, controller_epoch: int) -> bool:
        """Whether a controller request comes from an older controller than one seen."""
        return controller_epoch < self.controller_epoch

    def _accept_controller(self, controller_id: int, controller_epoch: int) -> None:
        self.controller_id = controller_id
        self.controller_epoch = controller_epoch

    async def become_leader_or_follower(
        self,
        controller_id: int,
        controller_epoch: int,
        partition_states: Iterable[PartitionStateLike],
        topic_ids: Mapping[str, uuid.UUID],
        live_leaders: Sequence[LiveLeaderLike] = (),
    ) -> dict[TopicPartition, int]:
        """LeaderAndIsr: apply each partition state whose leader epoch is newer than
        the one known here. Per partition: NONE, STALE_CONTROLLER_EPOCH (epoch not
        newer, or the whole request from an old controller), UNKNOWN_TOPIC_OR_PARTITION
        (this broker is not a replica), INCONSISTENT_TOPIC_ID, KAFKA_STORAGE_ERROR.

        Three steps: open the missing logs (worker thread), change roles (loop: the
        new leaders' epochs go into their caches in memory), write those caches
        (worker thread). A leader may take appends between the last two steps; the
        log keeps that safe (see storage.log: recovery rebuilds unwritten epochs).

        The replica fetchers change in the same step as the roles (no await between):
        the new leaders leave them first, the new followers join them after, in
        TRUNCATING at their new epoch, fetching from the leader's address (the metadata
        cache's, else the request's ``live_leaders``: ``broker_id``, ``host_name``,
        ``port``)."""
        states = list(partition_states)
        async with self._state_change_lock:
            if self.is_stale_controller_epoch(controller_epoch):
                log.warning(
                    "ignoring LeaderAndIsr from controller %d epoch %d: epoch %d seen",
                    controller_id,
                    controller_epoch,
                    self.controller_epoch,
                )
                return {
                    TopicPartition(s.topic_name, s.partition_index): (
                        ErrorCode.STALE_CONTROLLER_EPOCH
                    )
                    for s in states
                }
            self._accept_controller(controller_id, controller_epoch)
            errors: dict[TopicPartition, int] = {}
            accepted: list[tuple[TopicPartition, PartitionStateLike, uuid.UUID | None]] = []
            for state in states:
                tp = TopicPartition(state.topic_name, state.partition_index)
                topic_id = topic_ids.get(tp.topic)
                errors[tp] = self._check_partition_state(tp, state, topic_id)
                if errors[tp] == ErrorCode.NONE:
                    accepted.append((tp, state, topic_id))
            to_open = [
                (tp, self._known_topic_id(tp, topic_id))
                for tp, _, topic_id in accepted
                if self.log_manager.get_log(tp) is None
            ]
            if to_open:
                for tp in await self._run_blocking(lambda: self._open_logs(to_open)):
                    errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            applied = [(tp, state) for tp, state, _ in accepted if errors[tp] == ErrorCode.NONE]
            self._remove_fetchers(tp for tp, state in applied if state.leader == self.broker_id)
            for tp, state, topic_id in accepted:
                if errors[tp] == ErrorCode.NONE:
                    errors[tp] = self._apply_partition_state(tp, state, topic_id)
            self._add_fetchers(
                [(tp, s) for tp, s in applied if errors[tp] == ErrorCode.NONE],
                {ll.broker_id: (ll.host_name, ll.port) for ll in live_leaders},
            )
            dirty = [
                (tp, lg)
                for tp, error in errors.items()
                if error == ErrorCode.NONE
                and (lg := self.log_manager.get_log(tp)) is not None
                and lg.epoch_cache.dirty
            ]
            if dirty:
                for tp in await self._run_blocking(lambda: _flush_epoch_caches(dirty)):
                    errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            for tp, error in errors.items():
                if error == ErrorCode.NONE:
                    self._complete_delayed(tp)
            if self.on_leadership_change is not None:
                done = [(tp, s) for tp, s in applied if errors[tp] == ErrorCode.NONE]
                self.on_leadership_change(
                    {tp: s.leader_epoch for tp, s in done if s.leader == self.broker_id},
                    {tp: s.leader_epoch for tp, s in done if s.leader != self.broker_id},
                )
            return errors

    def _remove_fetchers(self, tps: Iterable[TopicPartition]) -> None:
        if self.replica_fetchers is not None:
            self.replica_fetchers.remove_partitions(list(tps))

    def _add_fetchers(
        self,
        applied: list[tuple[TopicPartition, PartitionStateLike]],
        live_leaders: Mapping[int, tuple[str, int]],
    ) -> None:
        """Fetch every partition this broker now follows from its leader; one whose
        leader is unknown or not alive stops fetching until the next LeaderAndIsr."""
        if self.replica_fetchers is None:
            return
        wanted: dict[TopicPartition, tuple[Partition, LeaderEndpoint, int]] = {}
        leaderless: list[TopicPartition] = []
        for tp, state in applied:
            if state.leader == self.broker_id:
                continue
            partition = self._partitions.get(tp)
            endpoint = (
                resolve_leader_endpoint(state.leader, live_leaders, self._leader_endpoint)
                if state.leader >= 0
                else None
            )
            if partition is None or endpoint is None:
                log.warning("%s: leader %d is not available; not fetching", tp, state.leader)
                leaderless.append(tp)
            else:
                wanted[tp] = (partition, endpoint, state.leader_epoch)
        self.replica_fetchers.remove_partitions(leaderless)
        self.replica_fetchers.add_partitions(wanted)

    def _check_partition_state(
        self, tp: TopicPartition, state: PartitionStateLike, topic_id: uuid.UUID | None
    ) -> int:
        """Whether ``state`` may be applied (NONE) or the error that refuses it."""
        partition = self._partitions.get(tp)
        current_epoch = partition.leader_epoch if partition is not None else -1
        if state.leader_epoch <= current_epoch:
            log.info(
                "%s: ignoring leader epoch %d, epoch %d is current",
                tp,
                state.leader_epoch,
                current_epoch,
            )
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if self.broker_id not in state.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        wanted_id = topic_id_text(topic_id)
        existing = self.log_manager.get_log(tp)
        existing_id = existing.topic_id if existing is not None else None
        if None not in (wanted_id, existing_id) and existing_id != wanted_id:
            log.error("%s: log has topic id %s, not %s", tp, existing_id, wanted_id)
            return ErrorCode.INCONSISTENT_TOPIC_ID
        return ErrorCode.NONE

    def _known_topic_id(self, tp: TopicPartition, topic_id: uuid.UUID | None) -> str | None:
        """The topic id a new log is created with: the request's, else the one known."""
        if topic_id is None and (partition := self._partitions.get(tp)) is not None:
            topic_id = partition.topic_id
        return topic_id_text(topic_id)

    def _open_logs(self, wanted: list[tuple[TopicPartition, str | None]]) -> list[TopicPartition]:
        """Open or create each log (a worker thread); returns the partitions that failed."""
        failed: list[TopicPartition] = []
        for tp, topic_id in wanted:
            try:
                self.log_manager.get_or_create_log(tp, topic_id)
            except StorageError as exc:
                log.error("%s: cannot open the log: %s", tp, exc)
                failed.append(tp)
        return failed

    def _apply_partition_state(
        self, tp: TopicPartition, state: PartitionStateLike, topic_id: uuid.UUID | None
    ) -> int:
        """Make the partition leader or follower (its log is open: no disk work)."""
        partition = self._partitions.get(tp)
        if partition is None:
            partition = Partition(
                tp,
                self.broker_id,
                self.log_manager,
                clock=self.clock,
                isr_writer=self._isr_writer,
                on_isr_change=self._isr_changed,
            )
        try:
            if state.leader == self.broker_id:
                partition.make_leader(state, topic_id)
            else:
                partition.make_follower(state, topic_id)
        except StorageError as exc:
            log.error("%s: cannot open the log: %s", tp, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR
        self._partitions[tp] = partition
        return ErrorCode.NONE

    async def stop_replicas(
        self,
        controller_epoch: int,
        partitions: Iterable[tuple[str, int, bool]],
        leader_epochs: Mapping[TopicPartition, int] | None = None,
        controller_id: int = -1,
    ) -> dict[TopicPartition, int]:
        """StopReplica: ``(topic, partition, delete)``; delete removes the Partition and
        its log (renamed now, removed after file.delete.delay.ms). A request leader epoch
        (``leader_epochs``, StopReplica v3+) older than the partition's is
        FENCED_LEADER_EPOCH; -1 and -2 (deletion) always stop. The Partitions leave
        the table on the loop, then their logs are deleted in a worker thread."""
        entries = [(TopicPartition(t, p), delete) for t, p, delete in partitions]
        async with self._state_change_lock:
            if self.is_stale_controller_epoch(controller_epoch):
                return dict.fromkeys((tp for tp, _ in entries), ErrorCode.STALE_CONTROLLER_EPOCH)
            self._accept_controller(controller_id, controller_epoch)
            errors: dict[TopicPartition, int] = {}
            to_delete: list[TopicPartition] = []
            for tp, delete in entries:
                partition = self._partitions.get(tp)
                epoch = (leader_epochs or {}).get(tp, NO_LEADER_EPOCH)
                if (
                    partition is not None
                    and epoch not in (NO_LEADER_EPOCH, EPOCH_DURING_DELETE)
                    and epoch < partition.leader_epoch
                ):
                    errors[tp] = ErrorCode.FENCED_LEADER_EPOCH
                    continue
                errors[tp] = ErrorCode.NONE
                self._remove_fetchers([tp])
                if delete:
                    self._partitions.pop(tp, None)
                    to_delete.append(tp)
            if to_delete:
                for tp in await self._run_blocking(lambda: self._delete_logs(to_delete)):
                    errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            # A leader that stopped may have produces and fetches waiting: finish them.
            for tp, error in errors.items():
                if error != ErrorCode.FENCED_LEADER_EPOCH:
                    self._complete_delayed(tp)
            if self.on_leadership_change is not None and to_delete:
                epochs = leader_epochs or {}
                self.on_leadership_change(
                    {},
                    {
                        tp: epochs.get(tp, NO_LEADER_EPOCH)
                        for tp in to_delete
                        if errors[tp] == ErrorCode.NONE
                    },
                )
            return errors

    def _delete_logs(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        """Delete each log (a worker thread), rewriting the checkpoints once at the
        end rather than once a log; returns the partitions that failed."""
        failed: list[TopicPartition] = []
        try:
            for tp in tps:
                try:
                    self.log_manager.delete_log(tp, write_checkpoints=False)
                except StorageError as exc:
                    log.error("%s: deleting the log failed: %s", tp, exc)
                    failed.append(tp)
        finally:
            self.log_manager.write_checkpoints()
        return failed

    def _complete_delayed(self, tp: TopicPartition) -> None:
        self.fetch_purgatory.check_and_complete(tp)
        self.produce_purgatory.check_and_complete(tp)
        self.delete_records_purgatory.check_and_complete(tp)

    async def shutdown(self) -> None:
        """Stop the replica fetchers (before the logs they append to close), then the
        purgatories (waiting operations are dropped with the connections)."""
        if self.replica_fetchers is not None:
            await self.replica_fetchers.shutdown()
        await self.produce_purgatory.shutdown()
        await self.fetch_purgatory.shutdown()
        await self.delete_records_purgatory.shutdown()

    # -- produce ------------------------------------------------------------------------

    def append_records(
        self,
        entries: Mapping[TopicPartition, Records],
        *,
        required_acks: int,
        timeout_ms: int,
        api_version: int,
        on_done: ProduceCallback,
        internal_topics_allowed: bool = False,
    ) -> None:
        """Append each partition's records as leader, then call ``on_done`` with every
        partition's result: at once for acks 0 and 1 (and for acks=all when nothing was
        appended), else from a DelayedProduce once the high watermarks pass the appends
        or ``timeout_ms`` runs out."""
        if required_acks not in (-1, 0, 1):
            on_done({tp: ProducePartitionResult(ErrorCode.INVALID_REQUIRED_ACKS) for tp in entries})
            return
        results: dict[TopicPartition, ProducePartitionResult] = {}
        required: dict[TopicPartition, int] = {}
        unacknowledged = 0  # appends whose high watermark is below their end
        for tp, records in entries.items():
            result, next_offset, high_watermark_moved, acknowledged = self._append_one(
                tp, records, required_acks, api_version, internal_topics_allowed
            )
            results[tp] = result
            if next_offset is not None:
                required[tp] = next_offset
                unacknowledged += not acknowledged
                # New records may answer waiting fetches. Waiting produces and
                # DeleteRecords wait on the high watermark, which an append moves only
                # when the leader is alone in its ISR: checking them after every append
                # would test each waiting produce again for nothing (Kafka checks only
                # the fetches unless the high watermark moved, as here).
                if high_watermark_moved:
                    self._complete_delayed(tp)
                else:
                    self.fetch_purgatory.check_and_complete(tp)
        if required_acks != -1 or not required:
            on_done(results)
            return
        statuses = {
            tp: ProducePartitionStatus(required.get(tp, -1), result, tp in required)
            for tp, result in results.items()
        }
        operation = DelayedProduce(
            timeout_ms, statuses, self._partitions.get, self.min_insync_replicas, on_done
        )
        keys = list(required)
        if unacknowledged == len(required):
            # Every append waits for followers: each partition is led here with its high
            # watermark below the append's end, and nothing run since can move a high
            # watermark (only a follower's fetch does) or change a role. The
            # DelayedProduce's first test would find just that and settle nothing (the
            # usual acks=all produce, which parks without it).
            self.produce_purgatory.watch(operation, keys)
        else:
            self.produce_purgatory.try_complete_else_watch(operation, keys)

    def _append_one(
        self,
        tp: TopicPartition,
        records: Records,
        required_acks: int,
        api_version: int,
        internal_topics_allowed: bool,
    ) -> tuple[ProducePartitionResult, int | None, bool, bool]:
        """One partition's append: its result; when something was appended (or was a
        duplicate), the offset after it; whether the high watermark moved; and whether
        it reached that offset (an acks=all answer for the partition is there)."""
        if tp.topic in INTERNAL_TOPICS and not internal_topics_allowed:
            refused = _failed(ErrorCode.INVALID_TOPIC_EXCEPTION, f"cannot append to {tp.topic}")
            return refused, None, False, False
        try:
            partition = self._leader_or_error(tp)
            high_watermark = partition.high_watermark
            # only acks=all checks the ISR's size: other acks spare the config lookup
            min_isr = self.min_insync_replicas(tp.topic) if required_acks == -1 else 1
            info = partition.append_records_to_leader(
                records,
                api_version=api_version,
                required_acks=required_acks,
                min_insync_replicas=min_isr,
            )
        except PartitionError as exc:
            rejected = exc.error_code in _VALIDATION_ERRORS and records is not None
            self._count_failed_append(tp, len(records) if rejected and records else 0)
            return _failed(exc.error_code, str(exc)), None, False, False
        except RecordError as exc:
            self._count_failed_append(tp, len(records) if records is not None else 0)
            return _failed(exc.error_code, str(exc)), None, False, False
        except StorageError as exc:
            log.error("%s: append failed: %s", tp, exc)
            self._count_failed_append(tp)
            return _failed(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)), None, False, False
        if self.metrics is not None and not info.duplicate:
            self.metrics.topic_bytes_in.labels(topic=tp.topic).inc(info.valid_bytes)
            self.metrics.topic_messages_in.labels(topic=tp.topic).inc(info.records_count)
        result = ProducePartitionResult(
            ErrorCode.NONE, info.first_offset, info.log_append_time, info.log_start_offset
        )
        next_offset = info.last_offset + 1
        after = partition.high_watermark
        return result, next_offset, after != high_watermark, after >= next_offset

    # -- fetch --------------------------------------------------------------------------

    def fetch_messages(
        self,
        params: FetchParams,
        infos: FetchInfos,
        on_done: Callable[[FetchResults], None],
    ) -> None:
        """Read every partition; answer at once when ``max_wait_ms`` is 0, when
        ``min_bytes`` are there, or on any error; otherwise wait in a DelayedFetch."""

        def done(results: FetchResults) -> None:
            self._count_bytes_out(results)
            on_done(results)

        results = self.read_from_local_log(params, infos)
        readable = 0
        for _, r in results:
            if r.error_code:
                done(results)
                return
            if r.records is not None:
                readable += r.records.length
        if params.max_wait_ms <= 0 or not infos or readable >= params.min_bytes:
            done(results)
            return
        operation = DelayedFetch(
            params, infos, self._partitions.get, self._read_on_completion, done
        )
        keys = [tp for tp, _ in infos]
        if readable:
            self.fetch_purgatory.try_complete_else_watch(operation, keys)
        else:
            # Every fetch offset is at the end its fetcher may read to, checked by the
            # read just made: the DelayedFetch's own test would find nothing either
            # (the usual case, a caught-up follower's fetch, parks without repeating it).
            self.fetch_purgatory.watch(operation, keys)

    def _read_on_completion(self, params: FetchParams, infos: FetchInfos) -> FetchResults:
        """A DelayedFetch's answer: a fresh read, without recording the follower's fetch
        again (its position was recorded when the fetch arrived and has not moved; as in
        Kafka, whose DelayedFetch reads without updating the follower's state). This read
        runs for every waiting follower on every append, so it is kept lean."""
        return self.read_from_local_log(params, infos, record_follower_fetch=False)

    def read_from_local_log(
        self, params: FetchParams, infos: FetchInfos, *, record_follower_fetch: bool = True
    ) -> FetchResults:
        """Kafka's readFromLocalLog: partitions in request order share ``max_bytes``;
        until one returns data, a partition may exceed its limits by its first batch
        (so a batch larger than every limit is still delivered). A follower's read
        records its fetch (position, ISR, high watermark) unless
        ``record_follower_fetch`` is false."""
        limit = params.max_bytes
        min_one_message = True
        from_follower = params.is_from_follower
        partitions = self._partitions
        results: FetchResults = []
        for tp, info in infos:
            # (the limits are compared inline: this loop runs for every fetch)
            max_bytes = info.partition_max_bytes
            try:
                partition = partitions.get(tp) or self._leader_or_error(tp)
                read = partition.read(
                    info.fetch_offset,
                    max_bytes if max_bytes < limit else limit,
                    current_leader_epoch=info.current_leader_epoch,
                    up_to_high_watermark=not from_follower,
                    min_one_message=min_one_message,
                )
                high_watermark = read.high_watermark
                last_stable_offset = read.last_stable_offset
                if from_follower:
                    # after the read's role and epoch checks, as Kafka orders them, the
                    # replica must be a follower (recording the fetch checks that first)
                    if record_follower_fetch:
                        self._follower_fetched(
                            partition, params.replica_id, info, read.log_end_offset
                        )
                        # the follower learns a high watermark its fetch may just have moved
                        high_watermark = partition.high_watermark
                        last_stable_offset = partition.last_stable_offset
                    else:
                        partition.check_follower(params.replica_id)
            except PartitionError as exc:
                self._count_failed_read(tp)
                results.append((tp, FetchPartitionResult(exc.error_code)))
                continue
            except StorageError as exc:
                log.error("%s: read failed: %s", tp, exc)
                self._count_failed_read(tp)
                results.append((tp, FetchPartitionResult(ErrorCode.KAFKA_STORAGE_ERROR)))
                continue
            region = read.region
            if region is not None:
                size = region.length
                if size:
                    min_one_message = False
                    limit = limit - size if size < limit else 0
            results.append(
                (
                    tp,
                    FetchPartitionResult(
                        ErrorCode.NONE,
                        high_watermark,
                        last_stable_offset,
                        read.log_start_offset,
                        region,
                    ),
                )
            )
        return results

    def _follower_fetched(
        self,
        partition: Partition,
        replica_id: int,
        info: PartitionFetchInfo,
        leader_end_offset: int,
    ) -> None:
        """Record a follower's successful fetch (Kafka's updateFollowerFetchState): its
        position, then whether it joins the ISR and the high watermark moves. A follower
        reporting a higher log start may complete a waiting DeleteRecords. A replica id
        that is not a follower raises PartitionError before anything is recorded."""
        before = partition.update_follower_fetch_state(
            replica_id,
            fetch_offset=info.fetch_offset,
            follower_log_start_offset=info.log_start_offset,
            leader_end_offset=leader_end_offset,
            now_ms=self.clock.monotonic_ms(),
        )
        partition.maybe_expand_isr(replica_id)
        if partition.maybe_increment_high_watermark():
            self._complete_delayed(partition.tp)
        elif before.log_start_offset != info.log_start_offset:
            self.delete_records_purgatory.check_and_complete(partition.tp)

    # -- the ISR ------------------------------------------------------------------------

    def maybe_shrink_isr(self) -> None:
        """The isr-expiration task: every led partition drops the followers that lagged
        more than replica.lag.time.max.ms from its ISR (the writes finish later)."""
        now_ms = self.clock.monotonic_ms()
        for partition in self._partitions.values():
            partition.maybe_shrink_isr(now_ms, self.replica_lag_time_max_ms)

    def _isr_changed(self, partition: Partition, change: IsrChange) -> None:
        """A leader wrote a new ISR to ZooKeeper: count it, queue it for the controller,
        and wake what waits on the partition (the high watermark may have moved, or the
        ISR fallen below min.insync.replicas)."""
        if self.metrics is not None:
            counter = (
                self.metrics.isr_expands if change is IsrChange.EXPAND else self.metrics.isr_shrinks
            )
            counter.inc()
        if self.isr_propagator is not None:
            self.isr_propagator.record(partition.tp)
        self._complete_delayed(partition.tp)

    # failed appends and reads, per topic (Kafka's FailedProduceRequestsPerSec,
    # FailedFetchRequestsPerSec and, for records refused by validation, BytesRejectedPerSec)

    def _count_failed_append(self, tp: TopicPartition, rejected_bytes: int = 0) -> None:
        if self.metrics is not None:
            self.metrics.failed_produce_requests.labels(topic=tp.topic).inc()
            if rejected_bytes:
                self.metrics.topic_bytes_rejected.labels(topic=tp.topic).inc(rejected_bytes)

    def _count_failed_read(self, tp: TopicPartition) -> None:
        if self.metrics is not None:
            self.metrics.failed_fetch_requests.labels(topic=tp.topic).inc()

    def _count_bytes_out(self, results: FetchResults) -> None:
        if self.metrics is None:
            return
        for tp, result in results:
            if result.records is not None:
                self.metrics.topic_bytes_out.labels(topic=tp.topic).inc(result.records.length)

    # -- DeleteRecords ------------------------------------------------------------------

    async def delete_records(
        self,
        offsets: Mapping[TopicPartition, int],
        *,
        timeout_ms: int,
        on_done: DeleteRecordsCallback,
    ) -> None:
        """DeleteRecords (Kafka's deleteRecords): move each partition's log start as
        leader (``broker.delete_records`` has the rules), write the log-start-offset
        checkpoint (a worker thread) so that a restart keeps the new starts, then call
        ``on_done`` with every partition's result: at once when every low watermark is
        there already (or nothing moved), else from a DelayedDeleteRecords once the live
        followers followed, or at ``timeout_ms``."""
        results: dict[TopicPartition, DeleteRecordsPartitionResult] = {}
        required: dict[TopicPartition, int] = {}
        for tp, offset in offsets.items():
            try:
                partition = self._leader_or_error(tp)
                required[tp] = partition.delete_records_on_leader(offset)
                lw = partition.low_watermark(self.is_alive_broker)
            except PartitionError as exc:
                results[tp] = DeleteRecordsPartitionResult(exc.error_code)
                continue
            except StorageError as exc:
                log.error("%s: deleting records failed: %s", tp, exc)
                results[tp] = DeleteRecordsPartitionResult(ErrorCode.KAFKA_STORAGE_ERROR)
                continue
            results[tp] = DeleteRecordsPartitionResult(ErrorCode.NONE, lw)
            log.info("%s: log start offset moved to %d by DeleteRecords", tp, required[tp])
        if required:
            await self._run_blocking(self.log_manager.checkpoint_log_start_offsets)
        if all(results[tp].low_watermark >= offset for tp, offset in required.items()):
            on_done(results)
            return
        statuses = {
            tp: DeleteRecordsPartitionStatus(required.get(tp, -1), result, tp in required)
            for tp, result in results.items()
        }
        operation = DelayedDeleteRecords(
            timeout_ms, statuses, self.partition_for, self.is_alive_broker, on_done
        )
        self.delete_records_purgatory.try_complete_else_watch(operation, list(required))

    def live_brokers_changed(self) -> None:
        """The metadata cache's live brokers changed: a follower on a broker that died no
        longer holds back the low watermark of the DeleteRecords waiting on its leader."""
        if self.delete_records_purgatory.num_delayed:
            for partition in self.leader_partitions():
                self.delete_records_purgatory.check_and_complete(partition.tp)

    # -- offsets ------------------------------------------------------------------------

    def fetch_offset_for_timestamp(
        self,
        tp: TopicPartition,
        timestamp: int,
        *,
        current_leader_epoch: int = NO_LEADER_EPOCH,
        isolation_level: int = 0,
        replica_id: int = CONSUMER_REPLICA_ID,
    ) -> TimestampOffset | None:
        """ListOffsets for one partition; raises PartitionError (or StorageError).
        Consumers (replica id -1) are limited by their isolation level; others see to
        the log end, and only the debugging id (-2) may ask a follower."""
        partition = self._leader_or_error(tp)
        return partition.fetch_offset_for_timestamp(
            timestamp,
            current_leader_epoch=current_leader_epoch,
            isolation_level=isolation_level if replica_id == CONSUMER_REPLICA_ID else None,
            require_leader=replica_id != DEBUGGING_REPLICA_ID,
        )

    def last_offset_for_leader_epoch(
        self, tp: TopicPartition, leader_epoch: int, *, current_leader_epoch: int, replica_id: int
    ) -> tuple[int, int]:
        """OffsetForLeaderEpoch for one partition: (epoch, end offset). The debugging
        replica id (-2) may ask a follower; everyone else asks the leader."""
        partition = self._leader_or_error(tp)
        return partition.end_offset_for_epoch(
            leader_epoch,
            current_leader_epoch=current_leader_epoch,
            require_leader=replica_id != DEBUGGING_REPLICA_ID,
        )


#: append errors that refuse the records themselves (Kafka counts their bytes as rejected)
_VALIDATION_ERRORS = frozenset(
    {
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.INVALID_RECORD,
        ErrorCode.INVALID_TIMESTAMP,
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
    }
)


def _failed(error_code: int, message: str) -> ProducePartitionResult:
    return ProducePartitionResult(error_code, error_message=message)


def _flush_epoch_caches(logs: list[tuple[TopicPartition, Log]]) -> list[TopicPartition]:
    """Write each log's changed leader-epoch checkpoint (a worker thread); returns the
    partitions whose write failed (their logs are now offline)."""
    failed: list[TopicPartition] = []
    for tp, lg in logs:
        try:
            lg.flush_epoch_cache()
        except StorageError as exc:
            log.error("%s: writing the leader-epoch checkpoint failed: %s", tp, exc)
            failed.append(tp)
    return failed
