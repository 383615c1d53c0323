"""The log-dir way in: partitions, bounds, timestamp lookups and reads from log
directories (option ``path``), all read-only (see :mod:`.log_dirs`, :mod:`.segments`)."""

from __future__ import annotations

from collections.abc import Sequence

from protocol.values import TopicPartition
from spark_jobs.log_dirs import Replica, discover
from spark_jobs.planning import Bounds
from spark_jobs.segments import offset_for_timestamp


class LogDirBackend:
    """One look at ``log_dirs``: the replica read for each partition is fixed here, so a
    query's planning and its reads agree."""

    def __init__(self, log_dirs: Sequence[str]) -> None:
        self.replicas: dict[TopicPartition, Replica] = discover(log_dirs)

    def partitions(self) -> list[TopicPartition]:
        return sorted(self.replicas)

    def bounds(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, Bounds]:
        return {
            tp: Bounds(self.replicas[tp].log_start_offset, self.replicas[tp].high_watermark)
            for tp in tps
        }

    def offset_for_timestamp(self, tp: TopicPartition, timestamp: int) -> int | None:
        return offset_for_timestamp(self.replicas[tp], timestamp)

    def source_of(self, tp: TopicPartition) -> Replica:
        """What an executor needs to read ``tp``: its chosen replica."""
        return self.replicas[tp]
