"""LogManager: the log directories, every partition's Log, checkpoints and housekeeping.

Startup (Kafka's LogManager.loadLogs): for each directory in ``log.dirs``, note whether
``.kafka_cleanshutdown`` is there, read the recovery-point and log-start-offset
checkpoints (a missing or unreadable one means "recover everything", never a crash),
and open every ``<topic>-<partition>`` directory with
``num.recovery.threads.per.data.dir`` workers; directories of deleted logs are queued for
removal. Once every log is loaded the clean-shutdown marker is removed: from then on a
crash must be recovered from.

Housekeeping: Kafka's five LogManager tasks and the log cleaner's threads
(:mod:`storage.cleaner_manager`), handed to the broker's Scheduler by
:meth:`schedule_tasks` (or listed by :meth:`scheduled_tasks`):

================================== ============================================ ========
kafka-log-retention                retention by time, size and log start offset event loop
kafka-log-flusher                  fsync logs older than flush.ms               thread
kafka-recovery-point-checkpoint    recovery-point-offset-checkpoint             thread
kafka-log-start-offset-checkpoint  log-start-offset-checkpoint                  thread
kafka-delete-logs                  remove deleted logs and segments when due    thread
kafka-log-cleaner-thread-<i>       compaction, log.cleaner.threads of them      thread
================================== ============================================ ========

Retention runs on the event loop because it changes logs' segment lists (renames only;
unlinks are left to kafka-delete-logs); the others only read offsets or fsync.

Shutdown: flush and close every log (producer snapshots, trimmed indexes), write the
checkpoints, then the clean-shutdown marker in each directory.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import NamedTuple

from protocol.values import TopicPartition
from storage.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    PARTITION_METADATA,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    fsync_dir,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from storage.cleaner import OnOwner
from storage.cleaner_manager import LogCleaner
from storage.clock import Clock
from storage.config import LONG_MAX, LogConfig, LogManagerConfig
from storage.errors import InconsistentTopicIdError, StorageError
from storage.group_sync import SyncBatch, sync_all
from storage.log import Log
from storage.log_creation import create_log
from storage.names import (
    DELETE_DIR_SUFFIX,
    delete_dir_name,
    parse_partition_dir,
    partition_dir_name,
)
from storage.scheduling import Scheduler
from storage.topic_configs import TopicConfigs

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
#: Producers silent this long are forgotten (producer.id.expiration.ms).
PRODUCER_ID_EXPIRATION_MS = 86_400_000


class TaskSpec(NamedTuple):
    name: str
    fn: Callable[[], object]
    delay_ms: int
    period_ms: int | None
    blocking: bool


class LogManager:
    """Owns every Log of this broker. cleanup_logs runs on the event loop;
    get_or_create_log and delete_log block on the disk (file creation, fsync) and may
    run in a worker thread, one call at a time (the ReplicaManager serialises them);
    checkpoint, flush and delete tasks may run in worker threads at the same time.
    All of them take ``_lock`` to change or copy the log table."""

    def __init__(
        self,
        config: LogManagerConfig,
        clock: Clock,
        *,
        background: ThreadPoolExecutor | None = None,
        topic_configs: TopicConfigs | None = None,
        on_owner: OnOwner | None = None,
    ) -> None:
        """``on_owner`` runs a cleaner's segment swap on the thread that owns the logs
        (the broker's event loop); None runs it in the cleaner thread (tests)."""
        self.config = config
        self.clock = clock
        self._logs: dict[TopicPartition, Log] = {}
        self._log_dirs = [os.path.abspath(d) for d in config.log_dirs]
        #: the topics' overrides, shared with the broker, which fills it; a change is
        #: applied to the topic's logs at once
        self.topic_configs = topic_configs if topic_configs is not None else TopicConfigs()
        self.topic_configs.listen(self._apply_topic_config)
        self._to_delete: list[tuple[int, str, Log | None]] = []
        self._lock = threading.Lock()
        #: one writer of a checkpoint file at a time (they share its temporary file)
        self._checkpoint_lock = threading.Lock()
        self._own_background = background is None
        self._background = background or ThreadPoolExecutor(1, thread_name_prefix="log-flush")
        #: Directories that failed at load, with the reason (their logs are offline).
        self.offline_dirs: dict[str, str] = {}
        self.had_clean_shutdown: dict[str, bool] = {}
        self.cleaner = LogCleaner(config.cleaner, clock, self.all_logs, on_owner=on_owner)

    # -- loading ---------------------------------------------------------------------------

    @property
    def log_dirs(self) -> list[str]:
        return list(self._log_dirs)

    def load_logs(self) -> None:
        """Open every log of every directory (startup)."""
        pools: list[tuple[str, ThreadPoolExecutor, list[tuple[TopicPartition, Future[Log]]]]] = []
        for d in self._log_dirs:
            try:
                os.makedirs(d, exist_ok=True)
                entries = sorted(os.listdir(d))
            except OSError as exc:
                self.offline_dirs[d] = str(exc)
                log.error("log directory %s is offline: %s", d, exc)
                continue
            clean = os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE))
            self.had_clean_shutdown[d] = clean
            if clean:
                log.info("skipping recovery of the logs in %s: it was shut down cleanly", d)
            else:
                log.info("recovering the logs in %s: no clean shutdown marker", d)
            recovery_points = _read_checkpoint(d, RECOVERY_POINT_CHECKPOINT)
            start_offsets = _read_checkpoint(d, LOG_START_OFFSET_CHECKPOINT)
            high_watermarks = _read_checkpoint(d, REPLICATION_OFFSET_CHECKPOINT)
            pool = ThreadPoolExecutor(
                max(1, self.config.num_recovery_threads_per_data_dir),
                thread_name_prefix=f"log-recovery-{os.path.basename(d)}",
            )
            jobs: list[tuple[TopicPartition, Future[Log]]] = []
            for name in entries:
                path = os.path.join(d, name)
                if name.endswith(DELETE_DIR_SUFFIX) and os.path.isdir(path):
                    self._to_delete.append((0, path, None))
                    continue
                tp = parse_partition_dir(name)
                if tp is None or not os.path.isdir(path):
                    continue
                jobs.append(
                    (
                        tp,
                        pool.submit(
                            Log.open,
                            path,
                            tp,
                            self.config_for(tp.topic),
                            self.clock,
                            recovery_point=recovery_points.get(tp, 0),
                            log_start_offset=start_offsets.get(tp),
                            high_watermark=high_watermarks.get(tp, 0),
                            clean_shutdown=clean,
                            background=self._submit,
                        ),
                    )
                )
            pools.append((d, pool, jobs))
        for d, pool, jobs in pools:
            loaded: list[Log] = []
            try:
                for tp, job in jobs:
                    try:
                        loaded.append(job.result())
                    except (StorageError, OSError, ValueError) as exc:
                        # As Kafka does: a directory whose logs cannot be read goes
                        # offline as a whole; the broker serves the others.
                        self.offline_dirs[d] = f"loading {tp}: {exc}"
                        log.error("log directory %s is offline: cannot load %s: %s", d, tp, exc)
            finally:
                pool.shutdown(wait=True)
            if d in self.offline_dirs:
                for lg in loaded:
                    lg.close_without_snapshot()
                continue
            with self._lock:
                for lg in loaded:
                    if lg.tp in self._logs:
                        raise StorageError(
                            f"{lg.tp} is in both {self._logs[lg.tp].directory} and {lg.directory}"
                        )
                    self._logs[lg.tp] = lg
            marker = os.path.join(d, CLEAN_SHUTDOWN_FILE)
            try:
                if os.path.exists(marker):
                    os.unlink(marker)
                    fsync_dir(d)
            except OSError as exc:
                raise StorageError(f"removing {marker}: {exc}") from exc
        log.info("loaded %d logs", len(self._logs))

    def _submit(self, fn: Callable[[], None]) -> object:
        """Run a log's flush in the background; a failure is logged, not lost."""

        def run() -> None:
            try:
                fn()
            except Exception:
                # The boundary of a background job: nobody waits on its future, so
                # whatever it raised would vanish unless logged here.
                log.exception("background flush failed")

        return self._background.submit(run)

    # -- the log table -----------------------------------------------------------------------

    def config_for(self, topic: str) -> LogConfig:
        overrides = self.topic_configs.overrides(topic)
        return self.config.default.with_overrides(overrides) if overrides else self.config.default

    def update_topic_config(self, topic: str, overrides: Mapping[str, str]) -> None:
        """Per-topic overrides (``/config/topics/<t>``), applied to the topic's logs now."""
        self.topic_configs.set(topic, overrides)

    def update_default_config(self, default: LogConfig) -> None:
        """New broker-wide log defaults (a dynamic broker config): every log's effective
        config is rebuilt with its topic's overrides on top."""
        self.config = dataclasses.replace(self.config, default=default)
        for tp, lg in self.logs_items():
            lg.update_config(self.config_for(tp.topic))

    def _apply_topic_config(self, topic: str) -> None:
        config = self.config_for(topic)
        for tp, lg in self.logs_items():
            if tp.topic == topic:
                lg.update_config(config)

    def get_log(self, tp: TopicPartition) -> Log | None:
        return self._logs.get(tp)

    def all_logs(self) -> list[Log]:
        with self._lock:
            return list(self._logs.values())

    def logs_items(self) -> list[tuple[TopicPartition, Log]]:
        with self._lock:
            return list(self._logs.items())

    def get_or_create_log(
        self,
        tp: TopicPartition,
        topic_id: str | None = None,
        overrides: Mapping[str, str] | None = None,
    ) -> Log:
        """The log of ``tp``, created (in the directory with the fewest logs) if absent.
        The topic name is validated before any path is built from it."""
        existing = self._logs.get(tp)
        if existing is not None:
            if topic_id is not None and existing.topic_id not in (None, topic_id):
                raise InconsistentTopicIdError(
                    f"{tp} exists with topic id {existing.topic_id}, not {topic_id}"
                )
            return existing
        if overrides is not None:
            self.topic_configs.set(tp.topic, overrides)
        created = self._create_log(tp, topic_id, self._log_counts(), sync=True)
        log.info("created log %s in %s", tp, os.path.dirname(created.directory))
        return created

    def get_or_create_logs(
        self, wanted: Sequence[tuple[TopicPartition, str | None]]
    ) -> dict[TopicPartition, StorageError]:
        """:meth:`get_or_create_log` for many partitions (a LeaderAndIsr's), the new
        logs' files made durable together at the end (storage.group_sync) instead of
        two fsyncs a log; returns the partitions that failed. A log whose sync failed is
        taken offline. Blocking, like :meth:`get_or_create_log`."""
        pending: SyncBatch[TopicPartition] = SyncBatch()
        failed = self.open_logs(wanted, pending)
        if pending:
            failed.update(self.take_offline_unsynced(pending, sync_all(*pending.paths())))
        return failed

    def open_logs(
        self,
        wanted: Sequence[tuple[TopicPartition, str | None]],
        pending: SyncBatch[TopicPartition],
    ) -> dict[TopicPartition, StorageError]:
        """:meth:`get_or_create_log` for many partitions, the new logs' files written
        without fsyncs and added to ``pending`` (partition.metadata, the log's directory
        and its parent): the caller syncs them, with whatever else it writes, before it
        counts the logs as made, and passes the failures to
        :meth:`take_offline_unsynced`. Returns the partitions that failed. Blocking."""
        failed: dict[TopicPartition, StorageError] = {}
        counts = self._log_counts()
        created = 0
        for tp, topic_id in wanted:
            try:
                if tp in self._logs:
                    self.get_or_create_log(tp, topic_id)
                    continue
                lg = self._create_log(tp, topic_id, counts, sync=False)
            except StorageError as exc:
                failed[tp] = exc
                continue
            created += 1
            pending.add_file(tp, os.path.join(lg.directory, PARTITION_METADATA))
            pending.add_directory(tp, os.path.dirname(lg.directory))
        if created:
            log.info("created %d logs", created)
        return failed

    def take_offline_unsynced(
        self, pending: SyncBatch[TopicPartition], errors: Mapping[str, OSError]
    ) -> dict[TopicPartition, StorageError]:
        """The logs of ``pending`` whose files or directories could not be synced
        (``errors``: storage.group_sync.sync_all's answer) go offline; returns them with
        the failure."""
        failed: dict[TopicPartition, StorageError] = {}
        for tp, (path, error) in pending.failures(errors).items():
            failed[tp] = StorageError(f"syncing {path}: {error}")
            lg = self._logs.get(tp)
            if lg is not None:
                lg.take_offline(str(failed[tp]))
        return failed

    def _create_log(
        self, tp: TopicPartition, topic_id: str | None, counts: dict[str, int], sync: bool
    ) -> Log:
        """Open a new log in the online directory with the fewest (``counts``: logs per
        directory, updated here): made from nothing (storage.log_creation) unless its
        directory exists already."""
        d = self._next_log_dir(counts)
        directory = os.path.join(d, partition_dir_name(tp))
        config = self.config_for(tp.topic)
        created = create_log(
            directory,
            tp,
            config,
            self.clock,
            topic_id=topic_id,
            background=self._submit,
            sync=sync,
        )
        if created is None:
            created = Log.open(
                directory,
                tp,
                config,
                self.clock,
                clean_shutdown=True,
                topic_id=topic_id,
                background=self._submit,
                sync=sync,
            )
        with self._lock:
            self._logs[tp] = created
        counts[d] = counts.get(d, 0) + 1
        log.debug("created log %s in %s", tp, d)
        return created

    def _log_counts(self) -> dict[str, int]:
        """Logs per log directory (a directory with none is absent)."""
        counts: dict[str, int] = {}
        for lg in self.all_logs():
            parent = os.path.dirname(lg.directory)
            counts[parent] = counts.get(parent, 0) + 1
        return counts

    def _next_log_dir(self, counts: Mapping[str, int]) -> str:
        online = [d for d in self._log_dirs if d not in self.offline_dirs]
        if not online:
            raise StorageError("no log directory is online")
        return min(online, key=lambda d: counts.get(d, 0))

    def delete_log(self, tp: TopicPartition, *, write_checkpoints: bool = True) -> bool:
        """Delete ``tp``'s log: rename its directory to ``<topic>-<p>.<uuid>-delete`` now
        (so a re-created topic starts clean), remove it file.delete.delay.ms later, and
        rewrite the directory's checkpoints without it (or, with ``write_checkpoints``
        False, leave that to one :meth:`write_checkpoints` after a batch of deletions).
        Returns whether it existed. Blocking."""
        with self._lock:
            removed = self._logs.pop(tp, None)
        if removed is None:
            return False
        self.cleaner.forget(tp)
        parent = os.path.dirname(removed.directory)
        target = os.path.join(parent, delete_dir_name(tp, uuid.uuid4().hex))
        try:
            os.rename(removed.directory, target)
            fsync_dir(parent)
        except OSError as exc:
            raise StorageError(f"renaming {removed.directory} for deletion: {exc}") from exc
        removed.directory = target
        due = self.clock.time_ms() + removed.config.file_delete_delay_ms
        with self._lock:
            self._to_delete.append((due, target, removed))
        if write_checkpoints:
            self._write_checkpoints(parent)
        log.info("log %s renamed to %s for deletion", tp, target)
        return True

    # -- the scheduled tasks ------------------------------------------------------------------

    def cleanup_logs(self) -> int:
        """kafka-log-retention: delete expired segments of every log."""
        deleted = 0
        now = self.clock.time_ms()
        for lg in self.all_logs():
            try:
                deleted += lg.delete_old_segments()
                lg.producer_state.remove_expired(now, PRODUCER_ID_EXPIRATION_MS)
            except StorageError as exc:
                log.error("retention of %s failed: %s", lg.tp, exc)
        return deleted

    def flush_dirty_logs(self) -> None:
        """kafka-log-flusher: fsync logs whose last flush is older than their flush.ms."""
        now = self.clock.time_ms()
        for lg in self.all_logs():
            if now - lg.last_flush_ms >= lg.config.flush_ms:
                try:
                    lg.flush()
                except StorageError as exc:
                    log.error("flushing %s failed: %s", lg.tp, exc)

    def checkpoint_recovery_offsets(self) -> None:
        """kafka-recovery-point-checkpoint."""
        for d in self._online_dirs():
            self._write_checkpoint(d, RECOVERY_POINT_CHECKPOINT, lambda lg: lg.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        """kafka-log-start-offset-checkpoint."""
        for d in self._online_dirs():
            self._write_checkpoint(d, LOG_START_OFFSET_CHECKPOINT, lambda lg: lg.log_start_offset)

    def checkpoint_high_watermarks(self) -> None:
        """replication-offset-checkpoint (the broker's highwatermark-checkpoint task)."""
        for d in self._online_dirs():
            self._write_checkpoint(d, REPLICATION_OFFSET_CHECKPOINT, lambda lg: lg.high_watermark)

    def delete_logs(self) -> int:
        """kafka-delete-logs: remove deleted logs and segments whose delay has passed."""
        now = self.clock.time_ms()
        with self._lock:
            due = [(path, lg) for t, path, lg in self._to_delete if t <= now]
            self._to_delete = [e for e in self._to_delete if e[0] > now]
        for path, lg in due:
            if lg is not None:
                lg.close_without_snapshot()
            try:
                shutil.rmtree(path)
                log.info("deleted log directory %s", path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.error("cannot delete %s, will retry: %s", path, exc)
                with self._lock:
                    self._to_delete.append((now, path, lg))
        segments = 0
        for lg in self.all_logs():
            segments += lg.delete_due_segments(now)
        return len(due) + segments

    def scheduled_tasks(self) -> list[TaskSpec]:
        """The housekeeping tasks with their delays and periods."""
        c = self.config
        delay = c.initial_task_delay_ms

        def period(ms: int) -> int | None:
            return None if ms >= LONG_MAX else ms

        return [
            TaskSpec("kafka-log-retention", self.cleanup_logs, delay,
                     period(c.retention_check_interval_ms), False),
            TaskSpec("kafka-log-flusher", self.flush_dirty_logs, delay,
                     period(c.flush_scheduler_interval_ms), True),
            TaskSpec("kafka-recovery-point-checkpoint", self.checkpoint_recovery_offsets, delay,
                     period(c.flush_offset_checkpoint_interval_ms), True),
            TaskSpec("kafka-log-start-offset-checkpoint", self.checkpoint_log_start_offsets,
                     delay, period(c.flush_start_offset_checkpoint_interval_ms), True),
            TaskSpec("kafka-delete-logs", self.delete_logs, delay,
                     period(c.delete_check_interval_ms), True),
            *(
                TaskSpec(f"kafka-log-cleaner-thread-{i}", self.cleaner.run_until_idle, 0,
                         max(1, c.cleaner.backoff_ms), True)
                for i in range(c.cleaner.threads if c.cleaner.enable else 0)
            ),
        ]  # fmt: skip

    def schedule_tasks(self, scheduler: Scheduler) -> None:
        for task in self.scheduled_tasks():
            scheduler.schedule(task.name, task.fn, task.delay_ms, task.period_ms, task.blocking)

    # -- shutdown ---------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Clean shutdown: wait for background flushes, flush and close every log, write
        the checkpoints, then the clean-shutdown marker. Blocking."""
        self.cleaner.stop()
        if self._own_background:
            self._background.shutdown(wait=True)
        failed_dirs: set[str] = set()
        # the files each close writes are synced together at the end: two fsyncs a log
        # (a producer snapshot, its directory) one after another took 10 s for 3,000 logs
        unsynced: dict[str, str] = {}  # file -> the log directory it belongs to
        for lg in self.all_logs():
            try:
                if lg.failed is None:
                    lg.flush()
                for path in lg.close(sync=False):
                    unsynced[path] = os.path.dirname(lg.directory)
            except StorageError as exc:
                log.error("closing %s failed: %s", lg.tp, exc)
                failed_dirs.add(os.path.dirname(lg.directory))
        errors = sync_all(unsynced, {os.path.dirname(f) for f in unsynced})
        for path, err in errors.items():
            log.error("closing: syncing %s failed: %s", path, err)
            failed_dirs.add(unsynced.get(path, os.path.dirname(path)))
        for d in self._online_dirs():
            try:
                self._write_checkpoints(d)
                if d not in failed_dirs and not any(lg.failed for lg in self._logs_in(d)):
                    marker = os.path.join(d, CLEAN_SHUTDOWN_FILE)
                    with open(marker, "wb") as f:
                        os.fsync(f.fileno())
                    fsync_dir(d)
            except (OSError, StorageError) as exc:
                log.error("shutting down log directory %s: %s", d, exc)
        with self._lock:
            self._logs.clear()

    def write_checkpoints(self) -> None:
        """Rewrite the three offset checkpoints of every online directory. Blocking."""
        for d in self._online_dirs():
            self._write_checkpoints(d)

    # -- helpers ------------------------------------------------------------------------------

    def _online_dirs(self) -> list[str]:
        return [d for d in self._log_dirs if d not in self.offline_dirs]

    def _logs_in(self, d: str) -> list[Log]:
        return [lg for lg in self.all_logs() if os.path.dirname(lg.directory) == d]

    def _write_checkpoint(self, d: str, name: str, value: Callable[[Log], int]) -> None:
        try:
            with self._checkpoint_lock:  # read and written together: never an older copy
                offsets = {lg.tp: value(lg) for lg in self._logs_in(d)}
                write_offset_checkpoint(os.path.join(d, name), offsets)
        except StorageError as exc:
            log.error("writing %s in %s failed: %s", name, d, exc)

    def _write_checkpoints(self, d: str) -> None:
        self._write_checkpoint(d, RECOVERY_POINT_CHECKPOINT, lambda lg: lg.recovery_point)
        self._write_checkpoint(d, LOG_START_OFFSET_CHECKPOINT, lambda lg: lg.log_start_offset)
        self._write_checkpoint(d, REPLICATION_OFFSET_CHECKPOINT, lambda lg: lg.high_watermark)


def _read_checkpoint(d: str, name: str) -> dict[TopicPartition, int]:
    path = os.path.join(d, name)
    try:
        return read_offset_checkpoint(path)
    except CheckpointError as exc:
        log.warning("ignoring %s (recovering as if it were missing): %s", path, exc)
        return {}
