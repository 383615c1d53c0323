"""consumer-lag: each group's committed offsets, read from ``__consumer_offsets`` and
decoded with the OffsetCommitKey/Value formats (:mod:`.offsets_topic`), against the log
end offsets (high watermarks) of the partitions they are for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.values import TopicPartition
from spark_jobs.jobs import JobArgs, JobOutput, Progress
from spark_jobs.offsets_topic import latest_commits
from spark_jobs.options import parse_options
from spark_jobs.report import Section, chart_png

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

OFFSETS_TOPIC = "__consumer_offsets"
SCHEMA = (
    "group string, topic string, partition int, committed_offset long, "
    "log_end_offset long, lag long, commit_timestamp long"
)
SUBSCRIPTION_OPTIONS = ("subscribe", "subscribepattern", "assign")


def consumer_lag(spark: SparkSession, args: JobArgs, progress: Progress) -> JobOutput:
    from pyspark.sql import functions as F

    from spark_jobs.source import backend_for

    way_in = {k: v for k, v in args.source.items() if k.lower() not in SUBSCRIPTION_OPTIONS}
    progress(f"reading {OFFSETS_TOPIC}")
    offsets = (
        spark.read.format("minikafka").options(**way_in).option("subscribe", OFFSETS_TOPIC).load()
    )
    # the last record of each key wins; few keys (groups x partitions) reach the driver
    last = offsets.groupBy("key").agg(
        F.max_by("value", "offset").alias("value"), F.max("offset").alias("offset")
    )
    rows = last.orderBy("offset").collect()
    commits = latest_commits((_bytes(r.key), _bytes(r.value)) for r in rows)
    progress(f"{len(commits)} committed offsets; asking for the log end offsets")
    backend = backend_for(parse_options({**way_in, "subscribe": "-"}, streaming=False))
    tps = sorted(
        {TopicPartition(c.topic, c.partition) for c in commits} & set(backend.partitions())
    )
    ends = {tp: b.latest for tp, b in backend.bounds(tps).items()}
    lag_rows = [
        (c.group, c.topic, c.partition, c.offset, ends.get(TopicPartition(c.topic, c.partition)),
         _lag(ends.get(TopicPartition(c.topic, c.partition)), c.offset), c.commit_timestamp)
        for c in commits
    ]  # fmt: skip
    lag = spark.createDataFrame(lag_rows, SCHEMA).orderBy("group", "topic", "partition")
    table = lag.toPandas()
    return JobOutput(
        tables={"consumer_lag": lag},
        sections=[
            Section(
                "Lag per group",
                text="lag = log end offset (high watermark) - committed offset; "
                "null where the partition was not found.",
                tables=[table],
                charts=[chart_png("total lag per group", lambda ax: _per_group(ax, table))],
            )
        ],
    )


def _lag(end: int | None, committed: int | None) -> int | None:
    return None if end is None or committed is None else max(end - committed, 0)


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def _per_group(ax: Any, table: Any) -> None:
    totals = table.groupby("group")["lag"].sum() if len(table) else table
    ax.bar([str(g) for g in totals.index], list(totals.values) if len(table) else [])
    ax.set_ylabel("records behind")
