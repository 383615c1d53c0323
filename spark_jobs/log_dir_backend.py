"""The log-dir way in: partitions, bounds, timestamp lookups and reads from log
directories (option ``path``), all read-only (see :mod:`.log_dirs`, :mod:`.segments`)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from protocol.values import READ_COMMITTED, TopicPartition
from spark_jobs.committed import last_stable_offset
from spark_jobs.log_dirs import Replica, discover
from spark_jobs.planning import Bounds
from spark_jobs.segments import offset_for_timestamp
from storage.names import LOG_SUFFIX, offset_file_name

#: Bytes of segments a task reads at least, as Spark's spark.sql.files.maxPartitionBytes
SPLIT_BYTES = 128 << 20


class LogDirBackend:
    """One look at ``log_dirs``: the replica read for each partition is fixed here, so a
    query's planning and its reads agree."""

    def __init__(self, log_dirs: Sequence[str], isolation_level: int) -> None:
        self.replicas: dict[TopicPartition, Replica] = discover(log_dirs)
        self.isolation_level = isolation_level

    def partitions(self) -> list[TopicPartition]:
        return sorted(self.replicas)

    def bounds(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, Bounds]:
        """[log start, high watermark), or to the LSO for read_committed."""
        committed = self.isolation_level == READ_COMMITTED
        return {
            tp: Bounds(
                self.replicas[tp].log_start_offset,
                last_stable_offset(self.replicas[tp])
                if committed
                else self.replicas[tp].high_watermark,
            )
            for tp in tps
        }

    def offset_for_timestamp(self, tp: TopicPartition, timestamp: int) -> int | None:
        return offset_for_timestamp(self.replicas[tp], timestamp)

    def split_points(self, tp: TopicPartition) -> list[int]:
        """Segment base offsets to cut a read of ``tp`` at: one every
        :data:`SPLIT_BYTES` of segments, so a large partition is read by several tasks
        and each task reads whole segments."""
        replica = self.replicas[tp]
        points, size = [], 0
        for base in replica.segments:
            if size >= SPLIT_BYTES:
                points.append(base)
                size = 0
            size += os.path.getsize(os.path.join(replica.path, offset_file_name(base, LOG_SUFFIX)))
        return points

    def source_of(self, tp: TopicPartition) -> Replica:
        """What an executor needs to read ``tp``: its chosen replica."""
        return self.replicas[tp]
