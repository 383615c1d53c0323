"""Loading a log directory: leftovers, orphan indexes, and recovery after a crash.

After an unclean shutdown the .log files are the truth and everything else is a cache:
every segment from the one holding the recovery point is validated batch by batch
(magic 2, length bounds, CRC-32C, offsets increasing and within the segment) and cut at
the first invalid batch -- a torn write, a zero-filled tail from a lost metadata update,
appended garbage, a flipped bit -- with its indexes rebuilt from the valid batches;
segments after a cut are deleted. Segments below the recovery point were fsynced: only
their indexes are checked, and rebuilt (which re-validates the segment) when they are
missing or malformed. Every cut is logged with the segment, byte position, last good
offset and reason.

The log cleaner's files (:mod:`storage.cleaner`) are settled first
(:func:`finish_swaps`): a ``.cleaned`` segment was never complete and is removed, the
old segments staying; a ``.swap`` segment was complete and fsynced, so the swap is
finished: the live segments its offsets cover go and it takes the plain names. A crash
at any step of a swap thus leaves the old segments or the new one, never a mix.
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_right
from collections.abc import Callable

from protocol.values import TopicPartition
from storage.checkpoint import PARTITION_METADATA, CheckpointError, read_partition_metadata
from storage.errors import StorageError
from storage.names import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TEMP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    offset_file_name,
    parse_offset_file_name,
)
from storage.segment import LogSegment, RecoveryResult

log = logging.getLogger(__name__)


def finish_swaps(
    tp: TopicPartition,
    directory: str,
    names: list[str],
    open_swap: Callable[[int], LogSegment],
) -> bool:
    """Settle the cleaner's leftovers in ``names`` (see the module docstring); True when
    a file was removed or renamed. ``open_swap(base)`` opens the ``.swap`` segment."""
    swap_bases = {
        b for n in names if (b := parse_offset_file_name(n, LOG_SUFFIX + SWAP_SUFFIX)) is not None
    }
    live = sorted(b for n in names if (b := parse_offset_file_name(n, LOG_SUFFIX)) is not None)
    changed = False
    for name in names:
        stem = name.removesuffix(SWAP_SUFFIX)
        unfinished = name.endswith(CLEANED_SUFFIX)
        orphan = stem != name and not any(
            parse_offset_file_name(stem, kind) in swap_bases
            for kind in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
        )
        if unfinished or orphan:
            _unlink(os.path.join(directory, name))
            changed = True
    for base in sorted(swap_bases):
        seg = open_swap(base)
        try:
            end = max(seg.recover().next_offset, base + 1)
            for old in live:
                if base <= old < end:
                    log.info("%s: finishing a cleaner swap: segment %d replaces %d", tp, base, old)
                    remove_segment_files(directory, old)
            seg.change_file_suffix("")
        finally:
            seg.close()
        changed = True
    return changed


def remove_segment_files(directory: str, base: int, suffix: str = "") -> None:
    """Remove the .log, .index, .timeindex and .txnindex of segment ``base`` named with
    ``suffix``, those that exist."""
    for kind in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        _unlink(os.path.join(directory, offset_file_name(base, kind) + suffix))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StorageError(f"removing {path}: {exc}") from exc


def clean_directory(directory: str, names: list[str]) -> list[int]:
    """Remove leftovers of an interrupted run (temp files, segments already marked for
    deletion, index files without their .log) and return the segments' base offsets."""
    bases = sorted(o for n in names if (o := parse_offset_file_name(n, LOG_SUFFIX)) is not None)
    present = set(bases)
    for name in names:
        path = os.path.join(directory, name)
        orphan = False
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            base = parse_offset_file_name(name, suffix)
            if base is not None and base not in present:
                orphan = True
        if orphan or name.endswith(DELETED_SUFFIX) or name.endswith(TEMP_SUFFIX):
            if orphan:
                log.warning("removing orphan index file %s", path)
            try:
                os.unlink(path)
            except OSError as exc:
                raise StorageError(f"removing {path}: {exc}") from exc
    return bases


def load_segments(
    tp: TopicPartition,
    directory: str,
    open_segment: Callable[[int, bool, str], LogSegment],
    start: int,
    recovery_point: int,
    clean_shutdown: bool,
) -> list[LogSegment]:
    """A log directory's segments, settled and recovered: the cleaner's leftovers
    (:func:`finish_swaps`), stray files (:func:`clean_directory`), then
    :func:`recover_segments`. An empty directory gets one segment based at ``start``.
    ``open_segment(base, create, file_suffix)`` opens one."""
    names = list_dir(directory)
    if finish_swaps(tp, directory, names, lambda base: open_segment(base, False, SWAP_SUFFIX)):
        names = list_dir(directory)
    bases = clean_directory(directory, names)
    if not bases:
        return [open_segment(start, True, "")]
    segments = [open_segment(b, False, "") for b in bases]
    return recover_segments(tp, segments, recovery_point, clean_shutdown)


def recover_segments(
    tp: TopicPartition, segments: list[LogSegment], recovery_point: int, clean_shutdown: bool
) -> list[LogSegment]:
    """Rebuild untrustworthy indexes; after an unclean shutdown validate every segment
    from the one holding the recovery point. A segment cut short takes every later
    segment with it (their offsets would no longer follow). Returns what remains."""
    bases = [s.base_offset for s in segments]
    if clean_shutdown:
        first_unflushed = len(segments)
    else:
        first_unflushed = max(bisect_right(bases, recovery_point) - 1, 0)
    next_offset: int | None = None
    for i, seg in enumerate(segments):
        if i < first_unflushed:
            problem = seg.check_indexes()
            if problem is None:
                if i + 1 < len(segments):
                    seg.seal_indexes()
                continue
            log.warning("%s: rebuilding indexes of segment %d: %s", tp, seg.base_offset, problem)
            result = seg.rebuild_indexes()
        else:
            result = seg.recover(next_offset)
        _report(tp, seg, result)
        next_offset = result.next_offset
        if i + 1 < len(segments):
            # A rebuilt inactive segment gets its closing time entry and trimmed
            # indexes, exactly as if it had rolled.
            seg.on_become_inactive()
            if result.truncated_bytes:
                _drop(tp, seg, segments[i + 1 :])
                return segments[: i + 1]
    return segments


def _drop(tp: TopicPartition, cut: LogSegment, later: list[LogSegment]) -> None:
    for dropped in later:
        log.warning(
            "%s: deleting segment %d (%d bytes) after the corruption in segment %d",
            tp, dropped.base_offset, dropped.size, cut.base_offset,
        )  # fmt: skip
        dropped.delete_files()


def _report(tp: TopicPartition, seg: LogSegment, result: RecoveryResult) -> None:
    if result.truncated_bytes:
        log.warning(
            "%s: truncated segment %d at byte %d (after offset %d): removed %d bytes: %s",
            tp,
            seg.base_offset,
            result.valid_bytes,
            result.next_offset - 1,
            result.truncated_bytes,
            result.reason,
        )


def list_dir(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError as exc:
        raise StorageError(f"opening log {directory}: {exc}") from exc


def read_topic_id(directory: str) -> str | None:
    """The topic id in the log's partition.metadata (None when missing or unreadable)."""
    try:
        return read_partition_metadata(os.path.join(directory, PARTITION_METADATA))
    except CheckpointError as exc:
        log.warning("ignoring unreadable partition.metadata: %s", exc)
        return None
