"""retention-report: segments, sizes and ages per partition, and what retention would
delete next, from log directories (option ``path``).

Each partition's segments are looked at on an executor (their files are read there,
read-only); the rules are storage's own (:mod:`storage.retention`): the oldest segments
whose newest record is older than retention.ms, then those that take the partition
above retention.bytes, never past the high watermark nor the active (last) segment.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from spark_jobs.jobs import JobArgs, JobOutput, Progress
from spark_jobs.log_dir_backend import LogDirBackend
from spark_jobs.log_dirs import Replica
from spark_jobs.report import Section, chart_png
from spark_jobs.segments import largest_timestamp
from storage.names import LOG_SUFFIX, offset_file_name
from storage.retention import SegmentStats, deletable_count, size_breached, time_breached

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = (
    "topic string, partition int, base_offset long, size_bytes long, "
    "largest_timestamp long, age_ms long, deleted_by string"
)


def segment_rows(
    replica: Replica, now_ms: int, retention_ms: int, retention_bytes: int
) -> list[tuple[Any, ...]]:
    """One row per segment of ``replica``: its stats, and the rule that deletes it next
    (None when none does)."""
    stats = []
    for base in replica.segments:
        path = os.path.join(replica.path, offset_file_name(base, LOG_SUFFIX))
        stats.append(SegmentStats(base, os.path.getsize(path), largest_timestamp(path)))
    deleted = deletion_plan(stats, replica.high_watermark, now_ms, retention_ms, retention_bytes)
    return [
        (replica.tp.topic, replica.tp.partition, s.base_offset, s.size, s.largest_timestamp,
         now_ms - s.largest_timestamp if s.largest_timestamp >= 0 else None, deleted.get(i))
        for i, s in enumerate(stats)
    ]  # fmt: skip


def deletion_plan(
    stats: list[SegmentStats],
    high_watermark: int,
    now_ms: int,
    retention_ms: int,
    retention_bytes: int,
) -> dict[int, str]:
    """Segment index -> the retention key that deletes it on the next run: time first,
    then size over what is left, as Kafka's retention pass does. The last segment is
    the active one and is never deleted."""
    closed = stats[:-1]
    next_offsets = [s.base_offset for s in stats[1:]]
    by_time = deletable_count(
        closed, next_offsets, high_watermark, time_breached(now_ms, retention_ms)
    )
    rest, rest_next = closed[by_time:], next_offsets[by_time:]
    total = sum(s.size for s in stats[by_time:])
    by_size = deletable_count(
        rest, rest_next, high_watermark, size_breached(total, retention_bytes)
    )
    plan = dict.fromkeys(range(by_time), "retention.ms")
    plan.update(dict.fromkeys(range(by_time, by_time + by_size), "retention.bytes"))
    return plan


def retention_report(spark: SparkSession, args: JobArgs, progress: Progress) -> JobOutput:
    from pyspark.sql import functions as F

    from spark_jobs.options import parse_options

    options = parse_options(args.source, streaming=False)
    if not options.log_dirs:
        raise ValueError("retention-report reads log directories: give --path")
    backend = LogDirBackend(options.log_dirs, options.isolation_level)
    replicas = [backend.replicas[tp] for tp in options.subscription.select(backend.partitions())]
    progress(f"looking at the segments of {len(replicas)} partitions")
    now, ms, size = args.now_ms, args.retention_ms, args.retention_bytes
    rdd = spark.sparkContext.parallelize(replicas, max(1, min(len(replicas), 64)))
    segments = spark.createDataFrame(rdd.flatMap(lambda r: segment_rows(r, now, ms, size)), SCHEMA)
    deleting = F.when(F.col("deleted_by").isNotNull(), F.col("size_bytes")).otherwise(0)
    partitions = (
        segments.groupBy("topic", "partition")
        .agg(
            F.count("*").alias("segments"),
            F.sum("size_bytes").alias("size_bytes"),
            F.max("age_ms").alias("oldest_age_ms"),
            F.sum(deleting).alias("bytes_deleted_next"),
            F.count("deleted_by").alias("segments_deleted_next"),
        )
        .orderBy("topic", "partition")
    )
    segments = segments.orderBy("topic", "partition", "base_offset")
    table = partitions.toPandas()
    rule = f"retention.ms={ms}, retention.bytes={size}"
    return JobOutput(
        tables={"segments": segments, "partitions": partitions},
        sections=[
            Section(
                "Partitions",
                text=f"What the next retention run deletes with {rule}.",
                tables=[table],
                charts=[chart_png("bytes per partition", lambda ax: _sizes(ax, table))],
            ),
            Section("Segments", tables=[segments.toPandas()]),
        ],
    )


def _sizes(ax: Any, table: Any) -> None:
    names = [f"{t}-{p}" for t, p in zip(table["topic"], table["partition"])]
    kept = table["size_bytes"] - table["bytes_deleted_next"]
    ax.bar(names, kept, label="kept")
    ax.bar(names, table["bytes_deleted_next"], bottom=kept, label="deleted next")
    ax.set_ylabel("bytes")
    ax.tick_params(axis="x", labelrotation=45)
    ax.legend(loc="best")
