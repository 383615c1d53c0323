"""Log: one partition's ordered segments, its offsets, and what keeps them consistent.

Offsets, as Kafka names them::

    log_start_offset <= recovery_point <= log_end_offset     (high_watermark <= LEO too)

- log start: first readable offset (retention and DeleteRecords move it up);
- recovery point: everything below it is fsynced, so recovery after a crash starts at
  the segment that holds it;
- high watermark: set by the replication layer; retention deletes only below it and
  consumers read only below it;
- log end offset (LEO): the offset the next appended record gets.

Two append paths: :meth:`append` (leader: validate, check producer sequences, assign
offsets by rewriting each batch's base_offset in place, stamp the partition leader
epoch) and :meth:`append_as_follower` (batches keep the leader's offsets and epochs).

Threads: every method runs on one thread (the broker's event loop) except :meth:`flush`,
:meth:`flush_epoch_cache` and :meth:`delete_due_segments`, which the broker runs in
worker threads. They share only the segment list (copied under ``_lock``), the recovery
point (updated under it, and only if no truncation happened meanwhile, which
``_generation`` tells) and the leader-epoch cache (which guards its own entries).

The leader-epoch checkpoint is written lazily (see :mod:`storage.leader_epoch`): a
change is made in memory and its write handed to the background; :meth:`flush` writes
it before it moves the recovery point, and recovery after a crash rebuilds the entries
from the recovery point on from the batches, so no acknowledged epoch is lost.
"""

from __future__ import annotations

import logging
import os
import random
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from protocol.records.batch import BatchHeader, InvalidBatch
from storage import retention
from storage.append import (
    AppendInfo,
    assign_offsets,
    check_follower_offsets,
    check_producers,
    validate_batches,
    writable,
)
from storage.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    PARTITION_METADATA,
    CheckpointError,
    read_partition_metadata,
    write_partition_metadata,
)
from storage.clock import Clock
from storage.config import TIMESTAMP_LOG_APPEND_TIME, LogConfig
from storage.errors import InconsistentTopicIdError, OffsetOutOfRangeError, StorageError
from storage.file_region import FileRegion
from storage.leader_epoch import LeaderEpochCache
from storage.names import TopicPartition
from storage.producer_state import ProducerStateManager
from storage.recovery import clean_directory, recover_segments
from storage.segment import LogSegment

log = logging.getLogger(__name__)

#: ListOffsets special timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3

#: Runs a function off the event loop (e.g. an executor's submit); None runs it inline.
Background = Callable[[Callable[[], None]], object]


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """A ListOffsets answer: the offset and the timestamp found there (-1 if none)."""

    timestamp: int
    offset: int
    leader_epoch: int = -1


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
    ) -> None:
        self.directory = directory
        self.tp = tp
        self._name = str(tp)
        self.config = config
        self.clock = clock
        self.topic_id = topic_id
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._lock = threading.Lock()
        self._generation = 0
        self._background = background
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._max_position_cache: tuple[tuple[int, int, int], int] = ((-1, -1, -1), 0)
        self.log_end_offset = segments[-1].next_offset
        self.log_start_offset = log_start_offset
        self.recovery_point = min(recovery_point, self.log_end_offset)
        self.high_watermark = min(max(high_watermark, log_start_offset), self.log_end_offset)
        self.epoch_cache = LeaderEpochCache.load(os.path.join(directory, LEADER_EPOCH_CHECKPOINT))
        self.producer_state = ProducerStateManager(directory)
        self.last_flush_ms = clock.time_ms()
        self._unflushed_records = 0
        #: The active segment's draw of segment.jitter.ms, in [0, 1): redrawn at each roll
        #: so that segments of many partitions made together do not all roll together.
        self._jitter_fraction = random.random()
        #: Set after a disk error: every later append and read raises StorageError.
        self.failed: str | None = None

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
    ) -> Log:
        """Load (or create) the log in ``directory``. After an unclean shutdown every
        segment from the one holding ``recovery_point`` is validated batch by batch and
        the first invalid batch and everything after it are cut; after a clean shutdown
        nothing is scanned beyond the batches after the active segment's last index
        entry. Missing or corrupt indexes are rebuilt, orphan index files removed."""
        try:
            os.makedirs(directory, exist_ok=True)
            names = os.listdir(directory)
        except OSError as exc:
            raise StorageError(f"opening log {directory}: {exc}") from exc
        stored_id = _read_topic_id(directory)
        if topic_id is not None and stored_id is not None and topic_id != stored_id:
            raise InconsistentTopicIdError(
                f"{directory} belongs to topic id {stored_id}, not {topic_id}"
            )
        now = clock.time_ms()
        bases = clean_directory(directory, names)
        start = log_start_offset if log_start_offset is not None else 0
        if not bases:
            segments = [_new_segment(directory, start, config, now, create=True)]
        else:
            segments = [_new_segment(directory, b, config, now) for b in bases]
        segments = recover_segments(tp, segments, recovery_point, clean_shutdown)
        first_base = segments[0].base_offset
        leo = segments[-1].next_offset
        start = max(first_base, start if log_start_offset is not None else first_base)
        start = min(start, leo)
        if topic_id is not None and stored_id is None:
            write_partition_metadata(os.path.join(directory, PARTITION_METADATA), topic_id)
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
            result._rebuild_epochs()
        result.epoch_cache.truncate_from_end(leo)
        result.epoch_cache.truncate_from_start(start)
        result._rebuild_producer_state()
        result.epoch_cache.flush()
        return result

    def _rebuild_epochs(self) -> None:
        """After a crash: entries from the recovery point on may be missing (written
        lazily) or stale (a truncation not yet written); the batches there carry the
        epoch that wrote them. Below the recovery point the file is right, since
        :meth:`flush` wrote it before moving the recovery point there."""
        starts: list[tuple[int, int]] = []  # where the batches' epoch goes up
        for _, _, h in self.iter_batch_headers(self.recovery_point):
            if h.partition_leader_epoch > (starts[-1][0] if starts else -1):
                starts.append((h.partition_leader_epoch, h.base_offset))

        def rebuild(cache: LeaderEpochCache) -> None:
            cache.truncate_from_end(self.recovery_point)
            for epoch, offset in starts:
                cache.assign(epoch, offset)  # refused unless above the latest epoch

        # On a copy first: the file is rewritten only when the batches disagree with it.
        scratch = LeaderEpochCache(self.epoch_cache.path, self.epoch_cache.entries)
        rebuild(scratch)
        if scratch.entries != self.epoch_cache.entries:
            rebuild(self.epoch_cache)

    def _rebuild_producer_state(self) -> None:
        """Newest snapshot not above the log end, then the batch headers after it."""
        replay_from = self.producer_state.load(self.log_start_offset, self.log_end_offset)
        if replay_from < self.log_end_offset:
            self.producer_state.replay(h for _, _, h in self.iter_batch_headers(replay_from))
        self.producer_state.map_end_offset = self.log_end_offset

    # -- state ---------------------------------------------------------------------------

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    def update_high_watermark(self, offset: int) -> int:
        self.high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)
        return self.high_watermark

    def _check_usable(self) -> None:
        if self.failed is not None:
            raise StorageError(f"log {self.tp} is offline after a disk error: {self.failed}")

    def _segment_for(self, offset: int) -> int:
        """Index of the segment holding ``offset`` (the floor by base offset), or -1."""
        return bisect_right(self._bases, offset) - 1

    # -- appends -------------------------------------------------------------------------

    def append(
        self,
        records: bytes | bytearray | memoryview,
        leader_epoch: int,
        *,
        crc_checked: bool = False,
    ) -> AppendInfo:
        """Append a produce request's batches as leader. Validates every batch (refused
        whole with a :class:`RecordError` subclass, log unchanged), answers a retried
        idempotent batch with its original offsets, assigns offsets from the log end,
        stamps ``leader_epoch`` (and LogAppendTime if the topic uses it).

        ``crc_checked``: the caller verified every batch's CRC-32C just before (the
        broker's produce path does, with the rest of the request's validation), so it
        is not computed a second time; the structural checks run regardless."""
        self._check_usable()
        buf = writable(records)
        batches = validate_batches(
            buf, self.config.max_message_bytes, self._name, True, check_crc=not crc_checked
        )
        log_append_time = -1
        if self.config.message_timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
            log_append_time = self.clock.time_ms()
        # Offsets first (the producer-state check compares them), then sequences.
        assigned = assign_offsets(buf, batches, self.log_end_offset, leader_epoch, log_append_time)
        duplicate = check_producers(assigned, self.producer_state.producers, self._name)
        if duplicate is not None:
            return AppendInfo(
                duplicate.first_offset,
                duplicate.last_offset,
                duplicate.timestamp,
                duplicate.last_offset,
                log_append_time,
                self.log_start_offset,
                duplicate.last_offset - duplicate.first_offset + 1,
                0,
                duplicate=True,
            )
        return self._append_checked(buf, assigned, leader_epoch, log_append_time)

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> AppendInfo:
        """Append batches fetched from the leader, keeping their offsets and epochs.
        The first must start at or after the log end; no sequence checks (the leader
        made them), producer state and the leader-epoch cache follow the batches."""
        self._check_usable()
        buf = writable(records)
        batches = validate_batches(buf, self.config.max_message_bytes, self._name, False)
        check_follower_offsets(batches, self.log_end_offset, self._name)
        return self._append_checked(buf, batches, None, -1)

    def _append_checked(
        self,
        buf: memoryview,
        batches: list[tuple[int, BatchHeader]],
        leader_epoch: int | None,
        log_append_time: int,
    ) -> AppendInfo:
        first, last = batches[0][1], batches[-1][1]
        max_ts, max_ts_offset = -1, first.base_offset
        records = 0
        for _, h in batches:
            records += h.records_count
            if h.max_timestamp > max_ts:
                max_ts, max_ts_offset = h.max_timestamp, h.last_offset
        self._maybe_roll(len(buf), max_ts, first.base_offset, last.last_offset)
        segment = self.active_segment
        try:
            segment.append(buf, batches)
        except StorageError as exc:
            if not _consistent(segment):
                self.failed = str(exc)
            raise
        # Epochs: the leader's own, or for a follower those the batches carry.
        new_epoch = False
        if leader_epoch is not None:
            new_epoch = self.epoch_cache.assign(leader_epoch, first.base_offset)
        else:
            for _, h in batches:
                if h.partition_leader_epoch > self.epoch_cache.latest_epoch:
                    new_epoch |= self.epoch_cache.assign(h.partition_leader_epoch, h.base_offset)
        for _, h in batches:
            self.producer_state.update(h)
        self.log_end_offset = last.next_offset
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
        seg = self.active_segment
        reason = retention.roll_reason(
            segment_size=seg.size,
            base_offset=seg.base_offset,
            incoming_size=size,
            incoming_max_timestamp=max_timestamp,
            incoming_last_offset=last_offset,
            segment_bytes=self.config.segment_bytes,
            segment_ms=self.config.segment_ms
            - retention.roll_jitter_ms(
                self._jitter_fraction, self.config.segment_ms, self.config.segment_jitter_ms
            ),
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
        old = self.active_segment
        if old.size == 0 and old.base_offset == new_base:
            return old
        now = self.clock.time_ms()
        try:
            new = _new_segment(self.directory, new_base, self.config, now, create=True)
        except StorageError as exc:
            self.failed = str(exc)
            raise
        with self._lock:
            if old.size == 0:
                # An empty active segment is replaced rather than kept.
                self._segments.pop()
                self._bases.pop()
                old.delete_files()
            else:
                old.on_become_inactive()
            self._segments.append(new)
            self._bases.append(new_base)
        self._jitter_fraction = random.random()
        if self.log_end_offset < new_base:
            self.log_end_offset = new_base
        self.producer_state.map_end_offset = new_base
        snapshot = self.producer_state.take_snapshot(sync=False)

        def flush_rolled() -> None:
            self.flush(new_base)
            self.producer_state.sync_snapshot(snapshot)

        self._run_in_background(flush_rolled)
        return new

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
    ) -> FileRegion | None:
        """Batches from the one holding ``start_offset``: a region of at most
        ``max_bytes`` (or the first batch whole, with ``min_one_message``), ending
        before ``max_offset`` (the high watermark for consumers). None when there is
        nothing to return; :class:`OffsetOutOfRangeError` outside [log start, LEO]."""
        self._check_usable()
        max_bytes = max(0, max_bytes)
        leo = self.log_end_offset
        if start_offset == leo or (max_offset is not None and start_offset >= max_offset):
            return None
        if start_offset < self.log_start_offset or start_offset > leo:
            raise OffsetOutOfRangeError(
                f"{self.tp}: offset {start_offset} is outside [{self.log_start_offset}, {leo}]"
            )
        segments = self._segments
        i = max(self._segment_for(start_offset), 0)
        while i < len(segments):
            seg = segments[i]
            max_position: int | None = None
            if max_offset is not None and max_offset < leo:
                max_position = self._position_of(max_offset, seg, segments, i)
            result = seg.read(start_offset, max_bytes, max_position, min_one_message)
            if result is not None:
                region = result[0]
                return region if region.length else None
            i += 1
        return None

    def _position_of(
        self, offset: int, seg: LogSegment, segments: list[LogSegment], i: int
    ) -> int | None:
        """Byte position in ``seg`` where ``offset`` starts, None when it lies beyond.
        The answer for the high watermark is remembered: every consumer fetch asks for
        it, and a batch's position changes only when the log is truncated."""
        if i + 1 < len(segments) and segments[i + 1].base_offset <= offset:
            return None
        key = (offset, seg.base_offset, self._generation)
        if self._max_position_cache[0] == key:
            return self._max_position_cache[1]
        found = seg.translate_offset(offset)
        if found is None:
            return seg.size
        self._max_position_cache = (key, found[0])
        return found[0]

    def read_bytes(self, start_offset: int, max_bytes: int, max_offset: int | None = None) -> bytes:
        """Like :meth:`read`, but the bytes (replicas' tests, tools)."""
        region = self.read(start_offset, max_bytes, max_offset)
        return b"" if region is None else region.read()

    def iter_batch_headers(
        self, start_offset: int = 0
    ) -> Iterator[tuple[LogSegment, int, BatchHeader]]:
        """(segment, position, header) of each batch that holds offsets >= start."""
        segments = list(self._segments)
        i = max(self._segment_for(start_offset), 0)
        for seg in segments[i:]:
            found = seg.translate_offset(start_offset)
            if found is None:
                continue
            for pos, header in seg.iter_headers(found[0]):
                yield seg, pos, header

    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """ListOffsets: -2 earliest, -1 latest, -3 the record with the largest timestamp,
        else the first record whose timestamp is >= ``timestamp`` (None if none)."""
        self._check_usable()
        if timestamp == EARLIEST_TIMESTAMP:
            epoch = self.epoch_cache.epoch_for_offset(self.log_start_offset)
            return TimestampOffset(-1, self.log_start_offset, epoch)
        if timestamp == LATEST_TIMESTAMP:
            return TimestampOffset(-1, self.log_end_offset, self.epoch_cache.latest_epoch)
        if timestamp == MAX_TIMESTAMP:
            return self._max_timestamp_offset()
        for seg in list(self._segments):
            if seg.size == 0 or seg.largest_timestamp < timestamp:
                continue
            found = seg.find_offset_by_timestamp(timestamp, self.log_start_offset)
            if found is None:
                continue
            ts, offset = _first_record_at_or_after(
                seg, found[0], found[1], timestamp, self.log_start_offset
            )
            return TimestampOffset(ts, offset, self.epoch_cache.epoch_for_offset(offset))
        return None

    def _max_timestamp_offset(self) -> TimestampOffset | None:
        best: tuple[int, int] | None = None
        for seg in list(self._segments):
            if seg is self.active_segment:
                seg.load_tail()
                ts, off = seg.max_timestamp, seg.offset_of_max_timestamp
            else:
                ts, off = seg.time_index.last_entry()
            if ts >= 0 and (best is None or ts > best[0]):
                best = (ts, off)
        if best is None:
            return None
        return TimestampOffset(best[0], best[1], self.epoch_cache.epoch_for_offset(best[1]))

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
            return False
        if offset <= self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        log.info("%s: truncating from %d to %d", self.tp, self.log_end_offset, offset)
        keep = self._segment_for(offset)
        if self._segments[keep].base_offset == offset:
            keep -= 1
        with self._lock:
            self._generation += 1
            doomed = self._segments[keep + 1 :]
            del self._segments[keep + 1 :], self._bases[keep + 1 :]
        self._schedule_delete(doomed)
        try:
            self._segments[-1].truncate_to(offset)
        except StorageError as exc:
            self.failed = str(exc)
            raise
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
        now = self.clock.time_ms()
        new = None
        if offset not in self._bases:
            new = _new_segment(self.directory, offset, self.config, now, create=True)
        with self._lock:
            self._generation += 1
            doomed = list(self._segments)
            if new is None:
                # A segment already based at ``offset``: empty it in place.
                same = self._segments[self._bases.index(offset)]
                doomed.remove(same)
                same.truncate_to(offset)
                new = same
            self._segments[:] = [new]
            self._bases[:] = [offset]
        self._schedule_delete(doomed)
        self.log_start_offset = offset
        self.epoch_cache.clear()
        self.producer_state.delete_snapshots_after(-1)
        self._after_truncation()

    def _after_truncation(self) -> None:
        self.log_end_offset = self.active_segment.next_offset
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.log_start_offset = min(self.log_start_offset, self.log_end_offset)
        self.epoch_cache.truncate_from_end(self.log_end_offset)
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
        """Retention: segments wholly below the log start offset, then (cleanup.policy
        delete) those past retention.ms, then those beyond retention.bytes; only below
        the high watermark. Returns how many segments went."""
        self._check_usable()
        deleted = self._delete_where(
            lambda stats, nxt: retention.start_offset_breached(nxt, stats, self.log_start_offset)
        )
        if self.config.deletes:
            now = self.clock.time_ms()
            deleted += self._delete_where(
                lambda stats, nxt: retention.time_breached(now, self.config.retention_ms)
            )
            deleted += self._delete_where(
                lambda stats, nxt: retention.size_breached(
                    sum(s.size for s in stats), self.config.retention_bytes
                )
            )
        return deleted

    def _delete_where(
        self,
        make_predicate: Callable[[list[retention.SegmentStats], list[int]], retention.Predicate],
    ) -> int:
        segments = self._segments
        stats = [
            retention.SegmentStats(s.base_offset, s.size, s.largest_timestamp) for s in segments
        ]
        next_offsets = [s.base_offset for s in segments[1:]] + [self.log_end_offset]
        count = retention.deletable_count(
            stats, next_offsets, self.high_watermark, make_predicate(stats, next_offsets)
        )
        if count == 0:
            return 0
        if count == len(segments):
            # Kafka rolls an expired active segment first, so the log keeps a segment.
            self.roll()
        with self._lock:
            doomed = self._segments[:count]
            del self._segments[:count], self._bases[:count]
        for seg in doomed:
            log.info(
                "%s: deleting segment %d (%d bytes) by retention",
                self.tp,
                seg.base_offset,
                seg.size,
            )
        self._schedule_delete(doomed)
        first = self._segments[0].base_offset
        if first > self.log_start_offset:
            self.log_start_offset = first
            self._trim_epochs()
        self.producer_state.delete_snapshots_before(first)
        return count

    def _schedule_delete(self, segments: list[LogSegment]) -> None:
        """Rename now, close and unlink after file.delete.delay.ms (reads in flight)."""
        due = self.clock.time_ms() + self.config.file_delete_delay_ms
        for seg in segments:
            try:
                seg.mark_deleted()
            except StorageError as exc:
                log.warning("%s: %s", self.tp, exc)
            with self._lock:
                self._pending_deletes.append((due, seg))

    def delete_due_segments(self, now_ms: int | None = None) -> int:
        """Close and unlink segments whose deletion delay has passed (a worker thread)."""
        now = self.clock.time_ms() if now_ms is None else now_ms
        with self._lock:
            due = [s for t, s in self._pending_deletes if t <= now]
            self._pending_deletes = [(t, s) for t, s in self._pending_deletes if t > now]
        for seg in due:
            seg.delete_files()
        return len(due)

    # -- flushing and closing ----------------------------------------------------------

    def flush(self, up_to: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery point, ``up_to``) and move
        the recovery point there. Blocking: run it off the event loop."""
        with self._lock:
            generation = self._generation
            end = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
            start = self.recovery_point
            segments = [
                s
                for i, s in enumerate(self._segments)
                if s.base_offset < end
                and (i + 1 == len(self._segments) or self._segments[i + 1].base_offset > start)
            ]
        # Epochs before the recovery point moves: recovery rebuilds only those above it.
        self.flush_epoch_cache()
        if end <= start:
            return
        for seg in segments:
            if not seg.deleted:
                seg.flush()
        with self._lock:
            if generation == self._generation and end > self.recovery_point:
                self.recovery_point = end
            self.last_flush_ms = self.clock.time_ms()

    def flush_epoch_cache(self) -> None:
        """Write the leader-epoch checkpoint if it changed. Blocking: run it off the
        event loop. A failure takes the log offline: appends in an epoch the disk
        cannot record would be lost to OffsetForLeaderEpoch after a restart."""
        try:
            self.epoch_cache.flush()
        except StorageError as exc:
            self.failed = str(exc)
            raise

    def close(self) -> None:
        """Clean close: producer snapshot at the log end, closing time index entries,
        indexes trimmed, descriptors closed. The caller flushes first."""
        if self.failed is None:
            self.epoch_cache.flush()
            self.producer_state.map_end_offset = self.log_end_offset
            self.producer_state.take_snapshot()
        with self._lock:
            segments = list(self._segments)
            pending = [s for _, s in self._pending_deletes]
            self._pending_deletes.clear()
        for seg in segments:
            seg.close()
        for seg in pending:
            seg.delete_files()

    def close_without_snapshot(self) -> None:
        """Release descriptors (a log being deleted)."""
        with self._lock:
            segments = list(self._segments) + [s for _, s in self._pending_deletes]
            self._pending_deletes.clear()
        for seg in segments:
            seg.deleted = True
            seg.close()

    def __repr__(self) -> str:
        return (
            f"Log({self.tp}, start={self.log_start_offset}, end={self.log_end_offset}, "
            f"segments={len(self._segments)})"
        )


# -- loading helpers ---------------------------------------------------------------------


def _new_segment(
    directory: str, base: int, config: LogConfig, now: int, create: bool = False
) -> LogSegment:
    return LogSegment(
        directory,
        base,
        create=create,
        index_interval_bytes=config.index_interval_bytes,
        max_index_size=config.segment_index_bytes,
        created_ms=now,
    )


def _consistent(segment: LogSegment) -> bool:
    """Whether a failed append left the file at the size the segment believes."""
    try:
        return os.fstat(segment.fd).st_size == segment.size
    except OSError:
        return False


def _read_topic_id(directory: str) -> str | None:
    try:
        return read_partition_metadata(os.path.join(directory, PARTITION_METADATA))
    except CheckpointError as exc:
        log.warning("ignoring unreadable partition.metadata: %s", exc)
        return None


def _first_record_at_or_after(
    seg: LogSegment, pos: int, header: BatchHeader, timestamp: int, min_offset: int
) -> tuple[int, int]:
    """The first record of the batch at ``pos`` with timestamp >= ``timestamp`` and
    offset >= ``min_offset``: records are decoded only here, for ListOffsets."""
    from protocol.records.builder import read_batch

    if header.is_log_append_time:
        return header.max_timestamp, max(header.base_offset, min_offset)
    try:
        data = os.pread(seg.fd, header.size, pos)
        _, records = read_batch(data, check_crc=False)
    except (OSError, InvalidBatch) as exc:
        log.warning("cannot read records of batch %d: %s", header.base_offset, exc)
        return header.max_timestamp, max(header.base_offset, min_offset)
    for record in records:
        ts = record.timestamp(header)
        off = record.offset(header)
        if ts >= timestamp and off >= min_offset:
            return ts, off
    return header.max_timestamp, header.last_offset
