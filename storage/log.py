"""Log: one partition's offsets, leader epochs and producer state over a LocalLog.

The split follows Kafka's: :class:`storage.local_log.LocalLog` holds the segments and
does the file work (append bytes, roll, read, cut, fsync, delete); this class decides
what the offsets mean and keeps the leader-epoch cache and the producer state in step
with the segments. ListOffsets by timestamp is :mod:`storage.timestamp_search`, the
roll and retention rules :mod:`storage.retention`, the append checks
:mod:`storage.append`, transactions (markers, the last stable offset, read_committed
reads and the aborted index) :mod:`storage.transactions`.

Offsets, as Kafka names them::

    log_start_offset <= recovery_point <= log_end_offset     (high_watermark <= LEO too)

- log start: first readable offset (retention and DeleteRecords move it up);
- recovery point: everything below it is fsynced, so recovery after a crash starts at
  the segment that holds it;
- high watermark: set by the replication layer; retention deletes only below it and
  consumers read only below it;
- log end offset (LEO): the offset the next appended record gets.

Two append paths: :meth:`append` (leader: check producer sequences, assign offsets by
rewriting each batch's base_offset in place, stamp the partition leader epoch) and
:meth:`append_as_follower` (batches keep the leader's offsets and epochs).

Threads: every method runs on one thread (the broker's event loop) except :meth:`flush`,
:meth:`flush_epoch_cache` and :meth:`delete_due_segments`, which the broker runs in
worker threads (:mod:`storage.local_log` says what they share); the leader-epoch cache
guards its own entries.

The leader-epoch checkpoint is written lazily (see :mod:`storage.leader_epoch`): a
change is made in memory and its write handed to the background; :meth:`flush` writes
it before it moves the recovery point, and recovery after a crash rebuilds the entries
from the recovery point on from the batches, so no acknowledged epoch is lost.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable, Iterator

from protocol.records.batch import BatchHeader
from protocol.records.validation import ValidatedRecords
from protocol.values import READ_COMMITTED, READ_UNCOMMITTED, TopicPartition
from storage import retention, timestamp_search, transactions
from storage.append import (
    AppendInfo,
    Records,
    assign_offsets,
    byte_view,
    check_batch_sizes,
    check_follower_offsets,
    check_keys,
    check_producers,
    validated,
    writable,
)
from storage.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    PARTITION_METADATA,
    write_partition_metadata,
)
from storage.clock import Clock
from storage.config import TIMESTAMP_LOG_APPEND_TIME, LogConfig
from storage.errors import InconsistentTopicIdError, OffsetOutOfRangeError, StorageError
from storage.file_region import FileRegion
from storage.leader_epoch import LeaderEpochCache
from storage.local_log import LocalLog, new_segment
from storage.producer_state import ProducerStateManager
from storage.recovery import load_segments, read_topic_id
from storage.segment import LogSegment
from storage.timestamp_search import TimestampOffset
from storage.txn_index import AbortedTransaction

log = logging.getLogger(__name__)

#: Runs a function off the event loop (e.g. an executor's submit); None runs it inline.
Background = Callable[[Callable[[], None]], object]


class Log:
    def __init__(
        self,
        directory: str,
        tp: TopicPartition,
        config: LogConfig,
        clock: Clock,
        segments: list[LogSegment],
        *,
        log_start_offset: int,
        recovery_point: int,
        high_watermark: int,
        topic_id: str | None,
        background: Background | None,
        epoch_cache: LeaderEpochCache | None = None,
    ) -> None:
        """``epoch_cache``: the cache of a log known to have none on disk (a new one,
        storage.log_creation); else the checkpoint in ``directory`` is read."""
        self.directory = directory
        self.tp = tp
        self._name = str(tp)
        self.clock = clock
        self.topic_id = topic_id
        self.local = LocalLog(directory, tp, config, clock, segments, recovery_point=recovery_point)
        self._background = background
        self.log_start_offset = log_start_offset
        leo = self.local.log_end_offset
        self.high_watermark = min(max(high_watermark, log_start_offset), leo)
        if epoch_cache is None:
            epoch_cache = LeaderEpochCache.load(os.path.join(directory, LEADER_EPOCH_CHECKPOINT))
        self.epoch_cache = epoch_cache
        self.producer_state = ProducerStateManager(directory)
        self._unflushed_records = 0
        #: The active segment's draw of segment.jitter.ms, in [0, 1): redrawn at each roll
        #: so that segments of many partitions made together do not all roll together.
        self._jitter_fraction = random.random()
        #: segment.ms less the active segment's jitter: the age at which it rolls, set
        #: with each draw and each config change (every append compares with it)
        self._roll_age_ms = self._rolling_age_ms()

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: str,
        tp: TopicPartition,
        config: LogConfig,
        clock: Clock,
        *,
        recovery_point: int = 0,
        log_start_offset: int | None = None,
        high_watermark: int = 0,
        clean_shutdown: bool = False,
        topic_id: str | None = None,
        background: Background | None = None,
        sync: bool = True,
    ) -> Log:
        """Load (or create) the log in ``directory``. After an unclean shutdown every
        segment from the one holding ``recovery_point`` is validated batch by batch and
        the first invalid batch and everything after it are cut; after a clean shutdown
        nothing is scanned beyond the batches after the active segment's last index
        entry. Missing or corrupt indexes are rebuilt, orphan index files removed.
        ``sync=False``: a partition.metadata written here is not fsynced; the caller
        makes it and the directory durable (LogManager.get_or_create_logs)."""
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"opening log {directory}: {exc}") from exc
        stored_id = read_topic_id(directory)
        if topic_id is not None and stored_id is not None and topic_id != stored_id:
            raise InconsistentTopicIdError(
                f"{directory} belongs to topic id {stored_id}, not {topic_id}"
            )
        start = log_start_offset if log_start_offset is not None else 0

        def open_segment(base: int, create: bool, suffix: str) -> LogSegment:
            return new_segment(directory, base, config, clock.time_ms(), create, suffix)

        segments = load_segments(tp, directory, open_segment, start, recovery_point, clean_shutdown)
        first_base = segments[0].base_offset
        leo = segments[-1].next_offset
        start = max(first_base, start if log_start_offset is not None else first_base)
        start = min(start, leo)
        if topic_id is not None and stored_id is None:
            write_partition_metadata(os.path.join(directory, PARTITION_METADATA), topic_id, sync)
        elif stored_id is not None:
            topic_id = stored_id
        result = cls(
            directory,
            tp,
            config,
            clock,
            segments,
            log_start_offset=start,
            recovery_point=leo if clean_shutdown else recovery_point,
            high_watermark=high_watermark,
            topic_id=topic_id,
            background=background,
        )
        if not clean_shutdown:
            result.epoch_cache.rebuild_from(
                result.recovery_point,
                (
                    (h.partition_leader_epoch, h.base_offset)
                    for _, _, h in result.iter_batch_headers(result.recovery_point)
                ),
            )
        result.epoch_cache.truncate_from_end(leo)
        result.epoch_cache.truncate_from_start(start)
        result._rebuild_producer_state(transactions.first_stale(result.local.segments))
        result.epoch_cache.flush()
        return result

    def _rebuild_producer_state(self, txn_index_from: int | None = None) -> None:
        """Reload the producer state (:func:`storage.transactions.rebuild_producer_state`)."""
        start, hw = self.log_start_offset, self.high_watermark
        state = self.producer_state
        transactions.rebuild_producer_state(state, self.local, start, hw, txn_index_from)

    # -- state ---------------------------------------------------------------------------

    @property
    def config(self) -> LogConfig:
        return self.local.config

    def update_config(self, config: LogConfig) -> None:
        self.local.config = config
        self._roll_age_ms = self._rolling_age_ms()

    @property
    def log_end_offset(self) -> int:
        return self.local.log_end_offset

    @property
    def recovery_point(self) -> int:
        return self.local.recovery_point

    @property
    def last_flush_ms(self) -> int:
        return self.local.last_flush_ms

    @property
    def failed(self) -> str | None:
        """Why the log is offline after a disk error (every later append and read
        raises StorageError), or None."""
        return self.local.failed

    @property
    def segments(self) -> list[LogSegment]:
        return self.local.segments

    @property
    def active_segment(self) -> LogSegment:
        return self.local.active_segment

    @property
    def size_in_bytes(self) -> int:
        return self.local.size_in_bytes

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark to ``offset``, kept within [log start, log end]. (It
        moves on the leader and on every follower once per fetch: compared inline.)"""
        start = self.log_start_offset
        high_watermark = offset if offset > start else start
        leo = self.local.log_end_offset
        if high_watermark > leo:
            high_watermark = leo
        self.high_watermark = high_watermark
        if self.producer_state.unreplicated:
            self.producer_state.on_high_watermark(high_watermark)
        return high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The LSO: read_committed consumers read below it (:mod:`storage.transactions`)."""
        return transactions.last_stable_offset(
            self.producer_state.first_unstable_offset, self.high_watermark, self.log_start_offset
        )

    # -- appends -------------------------------------------------------------------------

    def append(
        self,
        records: Records | ValidatedRecords,
        leader_epoch: int,
        *,
        from_coordinator: bool = False,
    ) -> AppendInfo:
        """Append a produce request's batches as leader: ``records`` validated where they
        arrived (:class:`ValidatedRecords`, the broker's produce path) or bytes checked
        here. Refused whole with a :class:`RecordError` subclass, log unchanged; a retried
        idempotent batch is answered with its original offsets. Assigns offsets from the
        log end, stamps ``leader_epoch`` (and LogAppendTime if the topic uses it).
        ``from_coordinator``: transaction markers (WriteTxnMarkers), checked by
        :func:`storage.transactions.check_markers`."""
        self._check_usable()
        checked = validated(records, self._name, from_client=not from_coordinator)
        config = self.config
        check_batch_sizes(checked.batches, config.max_message_bytes, self._name)
        buf = writable(checked.buffer)
        if config.compacts:
            check_keys(buf, checked.batches, self._name)
        log_append_time = -1
        if config.message_timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
            log_append_time = self.clock.time_ms()
        # Offsets first (the producer-state check compares them), then sequences.
        assigned = assign_offsets(
            buf, checked.batches, self.log_end_offset, leader_epoch, log_append_time
        )
        if from_coordinator:
            transactions.check_markers(buf, assigned, self.producer_state.producers, self._name)
        duplicate = check_producers(assigned, self.producer_state.producers, self._name)
        if duplicate is not None:
            # The original append's answer: its offsets and, under LogAppendTime, the time
            # it was stamped with (its max timestamp), not this retry's.
            return AppendInfo(
                duplicate.first_offset,
                duplicate.last_offset,
                duplicate.timestamp,
                duplicate.last_offset,
                duplicate.timestamp if log_append_time >= 0 else -1,
                self.log_start_offset,
                duplicate.last_offset - duplicate.first_offset + 1,
                0,
                duplicate=True,
            )
        return self._append_checked(buf, assigned, leader_epoch, log_append_time)

    def append_as_follower(self, records: Records | ValidatedRecords) -> AppendInfo:
        """Append batches fetched from the leader, keeping their offsets and epochs.
        The first must start at or after the log end; no sequence checks (the leader
        made them), producer state and the leader-epoch cache follow the batches. The
        bytes are written as they came (no offsets to assign, so no writable copy).
        No max.message.bytes check either, as in Kafka: the leader accepted the batches
        under its own view of the topic config, and a follower that refused them
        would never catch up."""
        self._check_usable()
        checked = validated(records, self._name, from_client=False)
        check_follower_offsets(checked.batches, self.log_end_offset, self._name)
        return self._append_checked(byte_view(checked.buffer), checked.batches, None, -1)

    def _append_checked(
        self,
        buf: memoryview,
        batches: list[tuple[int, BatchHeader]],
        leader_epoch: int | None,
        log_append_time: int,
    ) -> AppendInfo:
        first, last = batches[0][1], batches[-1][1]
        max_ts, max_ts_offset = -1, first.base_offset
        records = attributes = 0
        for _, h in batches:
            records += h.records_count
            attributes |= h.attributes
            if h.max_timestamp > max_ts:
                max_ts, max_ts_offset = h.max_timestamp, h.last_offset
        markers = transactions.markers_in(buf, batches, self._name, attributes)
        self._maybe_roll(len(buf), max_ts, first.base_offset, last.last_offset)
        self.local.append(buf, batches)
        # Epochs: the leader's own, or for a follower those the batches carry.
        new_epoch = False
        if leader_epoch is not None:
            new_epoch = self.epoch_cache.assign(leader_epoch, first.base_offset)
        else:
            for _, h in batches:
                if h.partition_leader_epoch > self.epoch_cache.latest_epoch:
                    new_epoch |= self.epoch_cache.assign(h.partition_leader_epoch, h.base_offset)
        if markers is None:
            for _, h in batches:
                self.producer_state.update(h)
        else:
            transactions.complete(self.producer_state, self.local, batches, markers)
        self._unflushed_records += records
        if self._unflushed_records >= self.config.flush_messages:
            self._unflushed_records = 0
            self._run_in_background(self.flush)
        elif new_epoch:
            self._schedule_epoch_flush()
        return AppendInfo(
            first.base_offset,
            last.last_offset,
            max_ts,
            max_ts_offset,
            log_append_time,
            self.log_start_offset,
            records,
            len(buf),
        )

    # -- rolling -------------------------------------------------------------------------

    def _maybe_roll(
        self, size: int, max_timestamp: int, first_offset: int, last_offset: int
    ) -> None:
        # Runs on every append (a follower's every fetch): the config and the active
        # segment are read once, not through their properties per field, and the
        # jittered segment.ms is the one computed when the jitter was drawn.
        local = self.local
        seg = local.active_segment
        reason = retention.roll_reason(
            segment_size=seg.size,
            base_offset=seg.base_offset,
            incoming_size=size,
            incoming_max_timestamp=max_timestamp,
            incoming_last_offset=last_offset,
            segment_bytes=local.config.segment_bytes,
            segment_ms=self._roll_age_ms,
            index_full=seg.should_roll_for_index(),
            first_batch_timestamp=seg.rolling_base_timestamp(),
            created_ms=seg.created_ms,
            now_ms=self.clock.time_ms(),
        )
        if reason is not None:
            log.debug("%s: rolling segment %d: %s", self.tp, seg.base_offset, reason)
            self.roll(first_offset)

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at the log end (or ``expected_next_offset`` when a
        follower's next batch starts above it); snapshot producer state there and flush
        the old segments in the background."""
        self._check_usable()
        new_base = max(self.log_end_offset, expected_next_offset or 0)
        new = self.local.roll(new_base)
        if new is None:
            return self.active_segment
        self._jitter_fraction = random.random()
        self._roll_age_ms = self._rolling_age_ms()
        self.producer_state.map_end_offset = new_base
        snapshot = self.producer_state.take_snapshot(sync=False)

        def flush_rolled() -> None:
            self.flush(new_base)
            self.producer_state.sync_snapshot(snapshot)

        self._run_in_background(flush_rolled)
        return new

    def _rolling_age_ms(self) -> int:
        """segment.ms less the active segment's share of segment.jitter.ms."""
        config = self.local.config
        jitter = retention.roll_jitter_ms(
            self._jitter_fraction, config.segment_ms, config.segment_jitter_ms
        )
        return config.segment_ms - jitter

    def _schedule_epoch_flush(self) -> None:
        """Write the changed leader-epoch cache in the background; a failure is logged
        (and has taken the log offline), never raised into the change that caused it."""

        def flush_epochs() -> None:
            try:
                self.flush_epoch_cache()
            except StorageError as exc:
                log.error("%s: writing the leader-epoch checkpoint failed: %s", self.tp, exc)

        self._run_in_background(flush_epochs)

    def _run_in_background(self, fn: Callable[[], None]) -> None:
        if self._background is None:
            fn()
        else:
            self._background(fn)

    # -- reads ---------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_message: bool = True,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> FileRegion | None:
        """Batches from the one holding ``start_offset``: a region of at most
        ``max_bytes`` (or the first batch whole, with ``min_one_message``), ending
        before ``max_offset`` (the high watermark for consumers), and before the last
        stable offset with READ_COMMITTED. None when there is nothing to return;
        :class:`OffsetOutOfRangeError` outside [log start, LEO]. (Every fetch that finds
        data runs this: the local log's fields are read directly, not through this
        class's properties.)"""
        if isolation_level == READ_COMMITTED:
            lso = self.last_stable_offset
            if max_offset is None or lso < max_offset:
                max_offset = lso
        local = self.local
        if local.failed is not None:
            local.check_usable()  # raises the log's offline error
        leo = local.log_end_offset
        if start_offset == leo or (max_offset is not None and start_offset >= max_offset):
            return None
        if start_offset < self.log_start_offset or start_offset > leo:
            raise OffsetOutOfRangeError(
                f"{self.tp}: offset {start_offset} is outside [{self.log_start_offset}, {leo}]"
            )
        return local.read(
            start_offset, max_bytes if max_bytes > 0 else 0, max_offset, min_one_message
        )

    def aborted_transactions(self, start: int, read: int | FileRegion) -> list[AbortedTransaction]:
        """The aborted transactions with data in a read_committed read from ``start``,
        ``read`` the region it returned (or an offset it ends before), as a Fetch lists
        them (:mod:`storage.transactions`)."""
        segments, lso = self.local.segments_from(start), self.last_stable_offset
        return transactions.collect_aborted(segments, start, read, lso)

    def read_bytes(self, start_offset: int, max_bytes: int, max_offset: int | None = None) -> bytes:
        """Like :meth:`read`, but the bytes (replicas' tests, tools)."""
        region = self.read(start_offset, max_bytes, max_offset)
        return b"" if region is None else region.read()

    def iter_batch_headers(
        self, start_offset: int = 0
    ) -> Iterator[tuple[LogSegment, int, BatchHeader]]:
        """(segment, position, header) of each batch that holds offsets >= start."""
        return self.local.iter_batch_headers(start_offset)

    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """ListOffsets: -2 earliest, -1 latest, -3 the record with the largest timestamp,
        else the first record whose timestamp is >= ``timestamp`` (None if none)."""
        self._check_usable()
        segments, epochs = self.local.segments, self.epoch_cache
        start, end = self.log_start_offset, self.log_end_offset
        return timestamp_search.list_offset(segments, epochs, start, end, timestamp)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= ``epoch``, its end offset)."""
        return self.epoch_cache.end_offset_for(epoch, self.log_end_offset)

    # -- truncation and retention ----------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch holding offsets >= ``offset`` (a follower diverged). Returns
        whether anything was removed."""
        self._check_usable()
        if offset < 0:
            raise ValueError(f"{self._name}: cannot truncate to a negative offset {offset}")
        if offset >= self.log_end_offset:
            # No record goes, but an epoch may start right at the log end (this broker
            # led that epoch and appended nothing); the leader's log does not have it,
            # and a follower that kept it would ask for the same epoch forever.
            if self.epoch_cache.truncate_from_end(offset):
                self._schedule_epoch_flush()
            return False
        if offset <= self.local.segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        log.info("%s: truncating from %d to %d", self.tp, self.log_end_offset, offset)
        self.local.truncate_to(offset)
        self._after_truncation()
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything and start empty at ``offset``."""
        self._check_usable()
        if offset < 0:
            raise ValueError(f"{self._name}: cannot start at a negative offset {offset}")
        log.info(
            "%s: truncating fully (offsets %d to %d) to start at %d",
            self.tp, self.log_start_offset, self.log_end_offset, offset,
        )  # fmt: skip
        self.local.truncate_fully_and_start_at(offset)
        self.log_start_offset = offset
        self.epoch_cache.clear()
        self.producer_state.delete_snapshots_after(-1)
        self._after_truncation()

    def _after_truncation(self) -> None:
        leo = self.log_end_offset
        self.high_watermark = min(self.high_watermark, leo)
        self.log_start_offset = min(self.log_start_offset, leo)
        self.epoch_cache.truncate_from_end(leo)
        if self.epoch_cache.dirty:
            self._schedule_epoch_flush()
        self._rebuild_producer_state()

    def _trim_epochs(self) -> None:
        """Keep the epoch cache to [log start, log end): the same entries a reload
        would leave (it trims both ends)."""
        changed = self.epoch_cache.truncate_from_start(self.log_start_offset)
        changed |= self.epoch_cache.truncate_from_end(self.log_end_offset)
        if changed:
            self._schedule_epoch_flush()

    def increment_log_start_offset(self, offset: int) -> int:
        """DeleteRecords: move the log start up to ``offset`` (at most the high watermark).
        Whole segments below it go with the next retention run."""
        self._check_usable()
        if offset < 0 or offset > self.high_watermark:
            raise OffsetOutOfRangeError(
                f"{self._name}: cannot delete records before {offset}: outside "
                f"[0, high watermark {self.high_watermark}]"
            )
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self._trim_epochs()
        return self.log_start_offset

    def delete_old_segments(self) -> int:
        """Retention: the passes of :func:`storage.retention.retention_rules`, each only
        below the high watermark. Returns how many segments went."""
        self._check_usable()
        rules = retention.retention_rules(
            log_start_offset=self.log_start_offset,
            deletes=self.config.deletes,
            now_ms=self.clock.time_ms(),
            retention_ms=self.config.retention_ms,
            retention_bytes=self.config.retention_bytes,
        )
        return sum(self._delete_where(rule) for rule in rules)

    def _delete_where(self, rule: retention.Rule) -> int:
        segments = self.local.segments
        stats = [
            retention.SegmentStats(s.base_offset, s.size, s.largest_timestamp) for s in segments
        ]
        next_offsets = [s.base_offset for s in segments[1:]] + [self.log_end_offset]
        count = retention.deletable_count(
            stats, next_offsets, self.high_watermark, rule(stats, next_offsets)
        )
        if count == 0:
            return 0
        if count == len(segments):
            # Kafka rolls an expired active segment first, so the log keeps a segment.
            self.roll()
        self.local.remove_oldest(count)
        first = self.local.segments[0].base_offset
        if first > self.log_start_offset:
            self.log_start_offset = first
            self._trim_epochs()
        self.producer_state.delete_snapshots_before(first)
        return count

    def delete_due_segments(self, now_ms: int | None = None) -> int:
        """Close and unlink segments whose deletion delay has passed (a worker thread)."""
        return self.local.delete_due_segments(now_ms)

    # -- flushing and closing ----------------------------------------------------------

    def flush(self, up_to: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery point, ``up_to``) and move
        the recovery point there, the leader epochs written first (recovery rebuilds
        only those above the recovery point). Blocking: run it off the event loop."""

        def write_epochs() -> None:
            self.flush_epoch_cache()

        self.local.flush(up_to, write_epochs)

    def flush_epoch_cache(self, sync: bool = True) -> bool:
        """Write the leader-epoch checkpoint if it changed; whether it wrote. Blocking:
        run it off the event loop. A failure takes the log offline: appends in an epoch
        the disk cannot record would be lost to OffsetForLeaderEpoch after a restart.
        ``sync=False`` leaves the fsyncs of the file and its directory to the caller
        (storage.group_sync, for many logs at once), who calls :meth:`take_offline`
        if they fail."""
        try:
            return self.epoch_cache.flush(sync)
        except StorageError as exc:
            self.local.failed = str(exc)
            raise

    def take_offline(self, reason: str) -> None:
        """A write for this log failed outside it (a group sync): no more appends or
        reads, as after a disk error of its own."""
        self.local.failed = reason

    def close(self, sync: bool = True) -> list[str]:
        """Clean close: producer snapshot at the log end, closing time index entries,
        indexes trimmed, descriptors closed. The caller flushes first. ``sync=False``
        leaves the fsyncs of the files written here to the caller (a LogManager closing
        thousands of logs syncs them together, storage.group_sync); returns those files."""
        written: list[str] = []
        if self.failed is None:
            if self.epoch_cache.flush(sync):
                written.append(self.epoch_cache.path)
            self.producer_state.map_end_offset = self.log_end_offset
            written.append(
                self.producer_state.snapshot_path(self.producer_state.take_snapshot(sync))
            )
        self.local.close()
        return written

    def close_without_snapshot(self) -> None:
        """Release descriptors (a log being deleted)."""
        self.local.release()

    def _check_usable(self) -> None:
        self.local.check_usable()

    def __repr__(self) -> str:
        return (
            f"Log({self.tp}, start={self.log_start_offset}, end={self.log_end_offset}, "
            f"segments={len(self.local.segments)})"
        )
