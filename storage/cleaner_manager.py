"""LogCleaner: which compacted log to clean next, the cleaner threads, the checkpoint.

Kafka's LogCleaner and LogCleanerManager. ``log.cleaner.threads`` scheduled tasks
(``kafka-log-cleaner-thread-<i>``, blocking, so they run in the scheduler's worker
threads and the event loop never waits on a pass) each clean logs one pass at a time
until none needs cleaning, then wait ``log.cleaner.backoff.ms``.

Choosing a log (:func:`cleanable_section`, :func:`choose`), for every log whose
cleanup.policy contains ``compact``:

- its dirty section starts at the cleaner checkpoint (``cleaner-offset-checkpoint`` in
  the log's directory, offsets in Kafka's checkpoint format), or at the log start when
  the checkpoint is missing or outside the log (a truncation);
- it ends at the first uncleanable offset: the active segment's base, the high
  watermark, or the base of the first dirty segment holding a record younger than
  min.compaction.lag.ms, whichever is lowest;
- dirty ratio = dirty bytes / (clean bytes + dirty bytes), counting the segments below
  the first uncleanable offset;
- the log qualifies when the ratio exceeds min.cleanable.dirty.ratio, or when its
  oldest dirty record is older than max.compaction.lag.ms (forced), and among those the
  forced logs come first and then the dirtiest.

A running broker takes new ``log.cleaner.*`` settings (a dynamic broker config) with
:meth:`LogCleaner.reconfigure` and :func:`resize_cleaner_threads`: the I/O rate at the
next chunk, the dedupe buffer at each thread's next pass, the thread count and backoff by
scheduling the missing thread tasks and cancelling the ones let go (a pass under way
finishes; cancelling only stops the task's next runs).

A pass that fails marks the log uncleanable: logged, counted, and never picked again
until the broker restarts (as Kafka does), so a corrupt log is not retried in a loop.
``compact,delete`` logs are compacted here and lose old segments to the retention task.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from protocol.values import TopicPartition
from storage.checkpoint import CheckpointError, read_offset_checkpoint, write_offset_checkpoint
from storage.cleaner import CleanerStats, OnOwner, clean_log
from storage.clock import Clock
from storage.config import LONG_MAX, CleanerConfig
from storage.errors import StorageError
from storage.log import Log
from storage.offset_map import OffsetMap
from storage.scheduling import TaskScheduler

log = logging.getLogger(__name__)

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"


def cleaner_thread_name(index: int) -> str:
    """The scheduler task name of cleaner thread ``index`` (Kafka's thread name)."""
    return f"kafka-log-cleaner-thread-{index}"


def cleaner_thread_count(config: CleanerConfig) -> int:
    """How many cleaner threads a configuration runs (none with the cleaner off)."""
    return config.threads if config.enable else 0


def resize_cleaner_threads(
    scheduler: TaskScheduler, cleaner: LogCleaner, old: CleanerConfig, new: CleanerConfig
) -> None:
    """Bring the scheduled cleaner threads from ``old``'s to ``new``'s: the ones past the
    new count cancelled, the missing ones scheduled; a new backoff reschedules them all."""
    before, after = cleaner_thread_count(old), cleaner_thread_count(new)
    first_replaced = 0 if old.backoff_ms != new.backoff_ms else after
    for index in range(first_replaced, before):
        task = scheduler.task(cleaner_thread_name(index))
        if task is not None:
            task.cancel()
    for index in range(min(first_replaced, before), after):
        scheduler.schedule(
            cleaner_thread_name(index), cleaner.run_until_idle, 0, max(1, new.backoff_ms), True
        )
    cleaner.thread_count = after
    if before != after:
        log.info("log cleaner: %d threads (were %d)", after, before)


@dataclass(frozen=True, slots=True)
class Section:
    """A log's dirty section and what it weighs."""

    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    forced: bool

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


def cleanable_section(
    segments: Sequence[tuple[int, int, int]],
    *,
    log_start_offset: int,
    log_end_offset: int,
    checkpoint: int | None,
    high_watermark: int,
    now_ms: int,
    min_lag_ms: int,
    max_lag_ms: int,
) -> Section:
    """The dirty section of a log whose ``segments`` are (base, size, largest
    timestamp), the last one active (see the module docstring)."""
    first_dirty = checkpoint if checkpoint is not None else log_start_offset
    if not log_start_offset <= first_dirty <= log_end_offset:
        first_dirty = log_start_offset
    uncleanable = min(segments[-1][0], high_watermark)
    nexts = [s[0] for s in segments[1:]] + [log_end_offset]
    clean = dirty = 0
    oldest_dirty: int | None = None
    for (base, size, largest_ts), nxt in zip(segments[:-1], nexts):
        if base >= uncleanable:
            break
        if nxt <= first_dirty:
            clean += size
            continue
        if now_ms - largest_ts < min_lag_ms:
            uncleanable = max(min(uncleanable, base), first_dirty)
            break
        dirty += size
        oldest_dirty = largest_ts if oldest_dirty is None else min(oldest_dirty, largest_ts)
    forced = (
        oldest_dirty is not None and max_lag_ms < LONG_MAX and now_ms - oldest_dirty > max_lag_ms
    )
    return Section(first_dirty, max(uncleanable, first_dirty), clean, dirty, forced)


def choose(
    sections: Sequence[tuple[TopicPartition, Section, float]],
) -> TopicPartition | None:
    """The partition to clean next among (partition, section, min.cleanable.dirty.ratio):
    forced ones first, then the dirtiest over its ratio; None when none qualifies."""
    eligible = [
        (s.forced, s.dirty_ratio, tp)
        for tp, s, min_ratio in sections
        if s.dirty_bytes > 0 and (s.forced or s.dirty_ratio > min_ratio)
    ]
    if not eligible:
        return None
    return max(eligible, key=lambda e: (e[0], e[1]))[2]


class Throttler:
    """Keeps the cleaners' I/O under ``rate`` bytes per second by sleeping (Kafka's
    Throttler): after each chunk, if the bytes since the last check came faster than
    the rate allows, sleep the difference."""

    def __init__(
        self,
        rate: float,
        monotonic_s: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.rate = rate
        self._monotonic = monotonic_s
        self._sleep = sleep
        self._lock = threading.Lock()
        self._start = monotonic_s()
        self._bytes = 0

    def set_rate(self, rate: float) -> None:
        """A new rate, counted from a fresh window."""
        with self._lock:
            self.rate = rate
            self._start, self._bytes = self._monotonic(), 0

    def __call__(self, nbytes: int) -> None:
        if self.rate >= sys.float_info.max:  # the default: unlimited
            return
        with self._lock:
            self._bytes += nbytes
            elapsed = self._monotonic() - self._start
            due = self._bytes / self.rate
            if due <= elapsed:
                if elapsed > 1.0:  # a fresh window keeps the rate local in time
                    self._start, self._bytes = self._monotonic(), 0
                return
            wait = due - elapsed
        self._sleep(wait)


@dataclass(slots=True)
class CleanerMetrics:
    """Totals since startup, read by the broker's metrics at scrape time."""

    passes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    last_pass_end_ms: int | None = None


class LogCleaner:
    """The cleaner threads' shared state. ``logs`` lists the broker's logs; ``on_owner``
    runs each swap on the thread that owns the logs (the event loop)."""

    def __init__(
        self,
        config: CleanerConfig,
        clock: Clock,
        logs: Callable[[], list[Log]],
        *,
        on_owner: OnOwner | None = None,
        throttler: Throttler | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self._logs = logs
        self.on_owner: OnOwner = on_owner or _inline
        self.throttle = throttler or Throttler(config.io_max_bytes_per_second)
        self._lock = threading.Lock()
        self._in_progress: set[TopicPartition] = set()
        self.uncleanable: dict[TopicPartition, str] = {}
        self._checkpoints: dict[str, dict[TopicPartition, int]] = {}
        self.metrics = CleanerMetrics()
        self._started_ms = clock.time_ms()
        self._stopping = threading.Event()
        self._maps = threading.local()
        #: cleaner thread tasks scheduled now (resize_cleaner_threads keeps it)
        self.thread_count = cleaner_thread_count(config)

    def reconfigure(self, config: CleanerConfig) -> None:
        """New ``log.cleaner.*`` settings on a running broker: the I/O rate applies to the
        next chunk read or written, the dedupe buffer to each thread's next pass (a
        fresh offset map); the threads themselves are :func:`resize_cleaner_threads`'."""
        old, self.config = self.config, config
        if config.io_max_bytes_per_second != old.io_max_bytes_per_second:
            self.throttle.set_rate(config.io_max_bytes_per_second)
        if (config.dedupe_buffer_size, config.threads) != (old.dedupe_buffer_size, old.threads):
            self._maps = threading.local()

    # -- the checkpoint ------------------------------------------------------------------

    def checkpoint(self, lg: Log) -> int | None:
        """How far ``lg`` was cleaned (its first dirty offset), None if never."""
        d = os.path.dirname(lg.directory)
        with self._lock:
            if d not in self._checkpoints:
                self._checkpoints[d] = _read(os.path.join(d, CLEANER_CHECKPOINT))
            return self._checkpoints[d].get(lg.tp)

    def _update_checkpoint(self, lg: Log, offset: int) -> None:
        d = os.path.dirname(lg.directory)
        with self._lock:
            entries = self._checkpoints.setdefault(d, {})
            entries[lg.tp] = offset
            live = {x.tp for x in self._logs()}
            snapshot = {tp: o for tp, o in entries.items() if tp in live}
        write_offset_checkpoint(os.path.join(d, CLEANER_CHECKPOINT), snapshot)

    def forget(self, tp: TopicPartition) -> None:
        """A deleted log: its checkpoint entry and uncleanable mark go (a topic
        re-created under the name starts dirty from offset 0). The file drops the entry
        at its next write."""
        with self._lock:
            for entries in self._checkpoints.values():
                entries.pop(tp, None)
            self.uncleanable.pop(tp, None)

    # -- choosing ------------------------------------------------------------------------

    def section(self, lg: Log, now_ms: int) -> Section:
        segments = [(s.base_offset, s.size, s.largest_timestamp) for s in lg.segments]
        return cleanable_section(
            segments,
            log_start_offset=lg.log_start_offset,
            log_end_offset=lg.log_end_offset,
            checkpoint=self.checkpoint(lg),
            high_watermark=lg.last_stable_offset,  # no open transaction is cleaned
            now_ms=now_ms,
            min_lag_ms=lg.config.min_compaction_lag_ms,
            max_lag_ms=lg.config.max_compaction_lag_ms,
        )

    def compacted_logs(self) -> list[Log]:
        return [lg for lg in self._logs() if lg.config.compacts and lg.failed is None]

    def dirty_ratios(self) -> dict[TopicPartition, float]:
        now = self.clock.time_ms()
        return {lg.tp: self.section(lg, now).dirty_ratio for lg in self.compacted_logs()}

    def _grab(self, now_ms: int) -> tuple[Log, Section] | None:
        logs = {lg.tp: lg for lg in self.compacted_logs()}
        with self._lock:
            skip = set(self._in_progress) | set(self.uncleanable)
        sections = {tp: self.section(lg, now_ms) for tp, lg in logs.items() if tp not in skip}
        with self._lock:
            candidates = [
                (tp, s, logs[tp].config.min_cleanable_dirty_ratio)
                for tp, s in sections.items()
                if tp not in self._in_progress
            ]
            tp = choose(candidates)
            if tp is None:
                return None
            self._in_progress.add(tp)
        return logs[tp], sections[tp]

    # -- the threads ---------------------------------------------------------------------

    def clean_next(self) -> bool:
        """One pass over the log that most needs it; False when none does."""
        now = self.clock.time_ms()
        grabbed = self._grab(now)
        if grabbed is None:
            return False
        lg, section = grabbed
        try:
            result = clean_log(
                lg,
                first_dirty=section.first_dirty,
                first_uncleanable=section.first_uncleanable,
                offset_map=self._offset_map(),
                now_ms=now,
                throttle=self.throttle,
                on_owner=self.on_owner,
                stopping=self._stopping.is_set,
            )
            if result.complete:
                self._update_checkpoint(lg, result.end_offset)
            self._account(result.stats)
            log.info(
                "%s: cleaned offsets %d to %d (dirty ratio %.2f): %d bytes read, %d written",
                lg.tp, section.first_dirty, result.end_offset, section.dirty_ratio,
                result.stats.bytes_read, result.stats.bytes_written,
            )  # fmt: skip
        except (StorageError, OSError, ValueError) as exc:
            log.error("%s: marked uncleanable after a failed pass: %s", lg.tp, exc)
            with self._lock:
                self.uncleanable[lg.tp] = str(exc)
        finally:
            with self._lock:
                self._in_progress.discard(lg.tp)
        return True

    def run_until_idle(self) -> None:
        """A cleaner thread's turn: clean until no log needs it (or shutdown)."""
        while not self._stopping.is_set() and self.clean_next():
            pass

    def stop(self) -> None:
        """Let no new pass start (broker shutdown); a pass under way finishes."""
        self._stopping.set()

    def _offset_map(self) -> OffsetMap:
        found: OffsetMap | None = getattr(self._maps, "map", None)
        if found is None:
            per_thread = self.config.dedupe_buffer_size // max(1, self.config.threads)
            found = self._maps.map = OffsetMap(per_thread)
        return found

    def _account(self, stats: CleanerStats) -> None:
        with self._lock:
            m = self.metrics
            m.passes += 1
            m.bytes_read += stats.bytes_read
            m.bytes_written += stats.bytes_written
            m.last_pass_end_ms = self.clock.time_ms()

    def time_since_last_clean_ms(self) -> int:
        """Since the last pass ended (or startup, before the first)."""
        last = self.metrics.last_pass_end_ms
        return self.clock.time_ms() - (self._started_ms if last is None else last)


def _inline(fn: Callable[[], bool]) -> bool:
    return fn()


def _read(path: str) -> dict[TopicPartition, int]:
    try:
        return read_offset_checkpoint(path)
    except CheckpointError as exc:
        log.warning("ignoring %s (cleaning from the log start): %s", path, exc)
        return {}
