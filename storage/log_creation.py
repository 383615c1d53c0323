"""Creating a partition's log in a directory that does not exist yet: files written, none read.

:meth:`storage.log.Log.open` serves every case -- a directory left by an earlier run,
with segments to recover, indexes to check, producer snapshots to load, a leader-epoch
checkpoint to read -- and so asks the disk about each: it lists the directory three
times and opens files to learn that they are not there. A LeaderAndIsr creating 3,000
partitions did all of that 3,000 times, on directories it had just made, where every
answer is known beforehand: no segment, no snapshot, no checkpoint.

:func:`create_log` makes the directory with ``mkdir`` -- which fails if the directory
exists, so a directory it did not make is never taken for empty (the caller then falls
back to ``Log.open``) -- and writes only what a new log holds: its first, empty segment
(based at offset 0) and partition.metadata. The result is the Log that ``Log.open``
returns for an empty directory: log start, recovery point, high watermark and log end
all 0, no leader epochs, no producers.
"""

from __future__ import annotations

import os

from protocol.values import TopicPartition
from storage.checkpoint import LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA, write_partition_metadata
from storage.clock import Clock
from storage.config import LogConfig
from storage.errors import StorageError
from storage.leader_epoch import LeaderEpochCache
from storage.local_log import new_segment
from storage.log import Background, Log


def create_log(
    directory: str,
    tp: TopicPartition,
    config: LogConfig,
    clock: Clock,
    *,
    topic_id: str | None,
    background: Background | None,
    sync: bool,
) -> Log | None:
    """The new, empty log of ``tp`` in ``directory``, which this call creates; None when
    ``directory`` exists already, or its parent does not (open it with ``Log.open``).
    ``sync=False``: the partition.metadata written here is not fsynced, nor is the
    directory; the caller makes them durable (storage.group_sync). Raises StorageError."""
    try:
        os.mkdir(directory)
    except (FileExistsError, FileNotFoundError):  # (the latter: no parent; Log.open makes it)
        return None
    except OSError as exc:
        raise StorageError(f"creating log {directory}: {exc}") from exc
    segment = new_segment(directory, 0, config, clock.time_ms(), create=True)
    if topic_id is not None:
        write_partition_metadata(os.path.join(directory, PARTITION_METADATA), topic_id, sync)
    return Log(
        directory,
        tp,
        config,
        clock,
        [segment],
        log_start_offset=0,
        recovery_point=0,
        high_watermark=0,
        topic_id=topic_id,
        background=background,
        epoch_cache=LeaderEpochCache(os.path.join(directory, LEADER_EPOCH_CHECKPOINT)),
    )
