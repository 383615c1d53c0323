"""LocalLog: a partition's segments on disk, and nothing about what the offsets mean.

It keeps the ordered segments (the last one active), the log end offset and the
recovery point, and does what touches files: append bytes to the active segment, roll
to a new one, read regions, cut the tail (truncation) or the head (retention), fsync,
and delete segments after a delay. Producer state, leader epochs, the log start offset
and the high watermark are :class:`storage.log.Log`'s, which is the only caller.

Threads: every method runs on one thread (the broker's event loop) except :meth:`flush`
and :meth:`delete_due_segments`, which run in worker threads. They share only the
segment list (copied under ``_lock``) and the recovery point (moved under it, and only
if no truncation happened meanwhile, which ``_generation`` tells).
"""

from __future__ import annotations

import logging
import os
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterator

from protocol.records.batch import BatchHeader
from protocol.values import TopicPartition
from storage.clock import Clock
from storage.config import LogConfig
from storage.errors import StorageError
from storage.file_region import FileRegion
from storage.segment import LogSegment

log = logging.getLogger(__name__)


class LocalLog:
    def __init__(
        self,
        directory: str,
        tp: TopicPartition,
        config: LogConfig,
        clock: Clock,
        segments: list[LogSegment],
        *,
        recovery_point: int,
    ) -> None:
        self.directory = directory
        self.tp = tp
        self.config = config
        self.clock = clock
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._lock = threading.Lock()
        self._generation = 0
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._max_position_cache: tuple[tuple[int, int, int], int] = ((-1, -1, -1), 0)
        self.log_end_offset = segments[-1].next_offset
        self.recovery_point = min(recovery_point, self.log_end_offset)
        self.last_flush_ms = clock.time_ms()
        #: Set after a disk error: every later append and read raises StorageError.
        self.failed: str | None = None

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

    def check_usable(self) -> None:
        if self.failed is not None:
            raise StorageError(f"log {self.tp} is offline after a disk error: {self.failed}")

    def segment_for(self, offset: int) -> int:
        """Index of the segment holding ``offset`` (the floor by base offset), or -1."""
        return bisect_right(self._bases, offset) - 1

    def segments_from(self, offset: int) -> list[LogSegment]:
        """The segment holding ``offset`` (the first when below it) and those after."""
        return self._segments[max(self.segment_for(offset), 0) :]

    def new_segment(self, base: int, create: bool = False, file_suffix: str = "") -> LogSegment:
        return new_segment(
            self.directory, base, self.config, self.clock.time_ms(), create, file_suffix
        )

    # -- appends and rolling ---------------------------------------------------------------

    def append(self, buf: memoryview, batches: list[tuple[int, BatchHeader]]) -> None:
        """Write checked, offset-assigned batches to the active segment and move the log
        end past them. A disk error that left the file inconsistent takes the log
        offline."""
        segment = self.active_segment
        try:
            segment.append(buf, batches)
        except StorageError as exc:
            if not _consistent(segment):
                self.failed = str(exc)
            raise
        self.log_end_offset = batches[-1][1].next_offset

    def roll(self, new_base: int) -> LogSegment | None:
        """Make a new active segment based at ``new_base`` (an empty active segment is
        replaced rather than kept). None when the active segment already is that."""
        old = self.active_segment
        if old.size == 0 and old.base_offset == new_base:
            return None
        try:
            new = self.new_segment(new_base, create=True)
        except StorageError as exc:
            self.failed = str(exc)
            raise
        with self._lock:
            if old.size == 0:
                self._segments.pop()
                self._bases.pop()
                old.delete_files()
            else:
                old.on_become_inactive()
            self._segments.append(new)
            self._bases.append(new_base)
        if self.log_end_offset < new_base:
            self.log_end_offset = new_base
        return new

    # -- reads ---------------------------------------------------------------------------

    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None, min_one_message: bool
    ) -> FileRegion | None:
        """The region from the batch holding ``start_offset`` (checked to be in range by
        the caller), ending before ``max_offset``; None when there is nothing. (Most
        reads are of the active segment: that is tried before the search by base.)"""
        leo = self.log_end_offset
        segments = self._segments
        count = len(segments)
        i = count - 1
        if start_offset < segments[i].base_offset:
            i = max(self.segment_for(start_offset), 0)
        while i < count:
            seg = segments[i]
            max_position: int | None = None
            if max_offset is not None and max_offset < leo:
                max_position = self._position_of(max_offset, seg, segments, i)
            region = seg.read(
                start_offset,
                max_bytes,
                max_position,
                min_one_message,
                max_offset if max_position is not None else None,
            )
            if region is not None:
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

    def iter_batch_headers(
        self, start_offset: int = 0
    ) -> Iterator[tuple[LogSegment, int, BatchHeader]]:
        """(segment, position, header) of each batch that holds offsets >= start."""
        segments = list(self._segments)
        i = max(self.segment_for(start_offset), 0)
        for seg in segments[i:]:
            found = seg.translate_offset(start_offset)
            if found is None:
                continue
            for pos, header in seg.iter_headers(found[0]):
                yield seg, pos, header

    # -- truncation and deletion -------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Cut every batch holding offsets >= ``offset``, which lies above the first
        segment's base and below the log end."""
        keep = self.segment_for(offset)
        if self._segments[keep].base_offset == offset:
            keep -= 1
        with self._lock:
            self._generation += 1
            doomed = self._segments[keep + 1 :]
            del self._segments[keep + 1 :], self._bases[keep + 1 :]
        self.schedule_delete(doomed)
        try:
            self._segments[-1].truncate_to(offset)
        except StorageError as exc:
            self.failed = str(exc)
            raise
        self._after_truncation()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and start empty at ``offset``."""
        new = None
        if offset not in self._bases:
            new = self.new_segment(offset, create=True)
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
        self.schedule_delete(doomed)
        self._after_truncation()

    def _after_truncation(self) -> None:
        self.log_end_offset = self.active_segment.next_offset
        self.recovery_point = min(self.recovery_point, self.log_end_offset)

    def remove_oldest(self, count: int) -> list[LogSegment]:
        """Take the ``count`` oldest segments out of the log (retention), scheduled for
        deletion; the log keeps at least its active segment (the caller rolls first)."""
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
        self.schedule_delete(doomed)
        return doomed

    def replace_segments(self, old: list[LogSegment], new: LogSegment) -> bool:
        """The log cleaner's swap: ``new`` (complete, fsynced, named ``.swap``) takes the
        place of the consecutive segments ``old``, which are renamed ``.deleted`` before
        ``new`` gets the plain names (recovery of a ``.swap`` relies on that order).
        False, and nothing changed, when ``old`` is no longer in the log as it was
        (truncated, or taken by retention, while the cleaner worked)."""
        with self._lock:
            try:
                i = self._segments.index(old[0])
            except ValueError:
                return False
            if self._segments[i : i + len(old)] != old or i + len(old) == len(self._segments):
                return False
            # positions below changed: the cached high watermark position goes with them
            self._generation += 1
            self._segments[i : i + len(old)] = [new]
            self._bases[i : i + len(old)] = [new.base_offset]
        self.schedule_delete(old)
        try:
            new.change_file_suffix("")
        except StorageError as exc:
            self.failed = str(exc)
            raise
        return True

    def schedule_delete(self, segments: list[LogSegment]) -> None:
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

    def flush(self, up_to: int | None, before_moving: Callable[[], None]) -> None:
        """fsync every segment holding offsets in [recovery point, ``up_to``) and move
        the recovery point there. ``before_moving`` runs once the range is fixed and
        before any fsync (the log writes its leader epochs there: recovery rebuilds
        only those above the recovery point). Blocking: run it off the event loop."""
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
        before_moving()
        if end <= start:
            return
        for seg in segments:
            if not seg.deleted:
                seg.flush()
        with self._lock:
            if generation == self._generation and end > self.recovery_point:
                self.recovery_point = end
            self.last_flush_ms = self.clock.time_ms()

    def close(self) -> None:
        """Close every segment's descriptors and finish pending deletions now."""
        with self._lock:
            segments = list(self._segments)
            pending = [s for _, s in self._pending_deletes]
            self._pending_deletes.clear()
        for seg in segments:
            seg.close()
        for seg in pending:
            seg.delete_files()

    def release(self) -> None:
        """Release every descriptor without finishing anything (a log being deleted)."""
        with self._lock:
            segments = list(self._segments) + [s for _, s in self._pending_deletes]
            self._pending_deletes.clear()
        for seg in segments:
            seg.deleted = True
            seg.close()


def new_segment(
    directory: str,
    base: int,
    config: LogConfig,
    now: int,
    create: bool = False,
    file_suffix: str = "",
) -> LogSegment:
    return LogSegment(
        directory,
        base,
        create=create,
        file_suffix=file_suffix,
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
