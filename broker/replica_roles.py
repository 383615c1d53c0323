"""LeaderAndIsr and StopReplica: the controller's requests that change this broker's roles.

:meth:`ReplicaRoleChanges.become_leader_or_follower` applies each partition state whose
leader epoch is newer than the one known here, making the partition leader or follower
(and creating the Partition and its log the first time); the replica fetchers change in
the same step. :meth:`ReplicaRoleChanges.stop_replicas` stops partitions, deleting them
and their logs when asked. Both are fenced by the controller epoch: a request from an
older controller than one seen answers STALE_CONTROLLER_EPOCH for every partition.

The controller's requests touch the disk harder than appends do -- creating a log fsyncs
its partition.metadata, a new leader epoch is written to the leader-epoch checkpoint,
deleting a log renames its directory and rewrites the directory's checkpoints, each
about a millisecond, times the thousand partitions one request may carry -- so both
methods are coroutines that do the disk work for the whole request in one call to
``run_blocking`` (a worker thread), and only the in-memory changes on the loop. The
response leaves once that work is done, so an answer of NONE still means "on disk", as
in Kafka. The new logs' files and the leader-epoch checkpoints are written without
fsyncs and made durable together, once, before the answer (LogManager.open_logs,
storage.group_sync.SyncBatch): one after another, two fsyncs a file made a LeaderAndIsr
creating 3,000 logs take tens of seconds, and a sync per step synced each new leader's
directory twice. So a new log serves as leader or follower a moment before its files
are durable, as appended records do until a flush; the answer still waits for them.
Each request logs how long its steps took.

LeaderAndIsr and StopReplica hold ``_state_change_lock`` (Kafka's
replicaStateChangeLock) across their awaits, so two of them never interleave, and the
worker thread only ever touches logs that no Partition serves yet (opening) or any more
(deleting), or the epoch cache, which is safe to write from another thread.

After each, ``on_leadership_change`` (Kafka's onLeadershipChange) tells the group
coordinator which partitions this broker now leads and which it no longer does.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from broker.isr import IsrWriter
from broker.partition import Partition, PartitionStateLike, topic_id_text
from broker.replica_isr import IsrUpkeep
from broker.replication import LeaderEndpoint, ReplicaFetcherManager, resolve_leader_endpoint
from protocol.errors import ErrorCode
from protocol.values import EPOCH_DURING_DELETE, NO_LEADER_EPOCH, TopicPartition
from storage import Log, StorageError
from storage.group_sync import SyncBatch, sync_all

log = logging.getLogger(__name__)


class LiveLeaderLike(Protocol):
    """A live leader of a LeaderAndIsr request (the request's struct), read only."""

    @property
    def broker_id(self) -> int: ...
    @property
    def host_name(self) -> str: ...
    @property
    def port(self) -> int: ...


#: Told, after a LeaderAndIsr or StopReplica, which partitions this broker now leads and
#: which it now follows or deleted, each with its leader epoch (-1 when a StopReplica gave
#: none): Kafka's onLeadershipChange, by which the group coordinator loads and unloads its
#: offsets partitions.
LeadershipChange = Callable[[Mapping[TopicPartition, int], Mapping[TopicPartition, int]], None]


class ReplicaRoleChanges(IsrUpkeep):
    """LeaderAndIsr and StopReplica (the partitions they create report ISR changes to
    :class:`~broker.replica_isr.IsrUpkeep`)."""

    _isr_writer: IsrWriter | None
    replica_fetchers: ReplicaFetcherManager | None
    _leader_endpoint: Callable[[int], tuple[str, int] | None]
    _state_change_lock: asyncio.Lock
    controller_id: int
    controller_epoch: int
    on_leadership_change: LeadershipChange | None

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
            started = time.perf_counter()
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
            #: the new logs' files, then the leader-epoch checkpoints: synced together
            pending: SyncBatch[TopicPartition] = SyncBatch()
            if to_open:
                for tp in await self._run_blocking(lambda: self._open_logs(to_open, pending)):
                    errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            opened = time.perf_counter()
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
            roles = time.perf_counter()
            if dirty or pending:
                failed = await self._run_blocking(lambda: self._write_and_sync(dirty, pending))
                for tp in failed:
                    errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            done_at = time.perf_counter()
            log.info(
                "LeaderAndIsr of %d partitions from controller %d: %d new logs in %.3f s, "
                "roles in %.3f s, %d leader-epoch checkpoints written and all synced in "
                "%.3f s",
                len(states),
                controller_id,
                len(to_open),
                opened - started,
                roles - opened,
                len(dirty),
                done_at - roles,
            )
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

    def _open_logs(
        self,
        wanted: list[tuple[TopicPartition, str | None]],
        pending: SyncBatch[TopicPartition],
    ) -> list[TopicPartition]:
        """Open or create each log (a worker thread; the new ones' files left to sync in
        ``pending``); returns the partitions that failed."""
        failed = self.log_manager.open_logs(wanted, pending)
        for tp, exc in failed.items():
            log.error("%s: cannot open the log: %s", tp, exc)
        return list(failed)

    def _write_and_sync(
        self, dirty: list[tuple[TopicPartition, Log]], pending: SyncBatch[TopicPartition]
    ) -> list[TopicPartition]:
        """Write each changed leader-epoch checkpoint (a worker thread), then fsync them
        and the new logs' files, and their directories, in one group
        (storage.group_sync); returns the partitions whose write or sync failed (their
        logs are now offline)."""
        failed = _write_epoch_caches(dirty, pending)
        errors = sync_all(*pending.paths())
        for tp, exc in self.log_manager.take_offline_unsynced(pending, errors).items():
            log.error("%s: %s", tp, exc)
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


def _write_epoch_caches(
    logs: list[tuple[TopicPartition, Log]], pending: SyncBatch[TopicPartition]
) -> list[TopicPartition]:
    """Write each log's changed leader-epoch checkpoint without syncing it, adding the
    file to ``pending``; returns the partitions whose write failed (their logs are now
    offline: Log.flush_epoch_cache)."""
    failed: list[TopicPartition] = []
    for tp, lg in logs:
        try:
            if lg.flush_epoch_cache(sync=False):
                pending.add_file(tp, lg.epoch_cache.path)
        except StorageError as exc:
            log.error("%s: writing the leader-epoch checkpoint failed: %s", tp, exc)
            failed.append(tp)
    return failed
