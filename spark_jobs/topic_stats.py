"""topic-stats: records and bytes per topic-partition per minute, key cardinality
(approx_count_distinct), the top keys, and value-size percentiles, per topic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spark_jobs.jobs import JobArgs, JobOutput, Progress
from spark_jobs.report import Section, chart_png

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PERCENTILES = (0.5, 0.9, 0.99)
#: relative standard deviation of the key cardinality estimate (HyperLogLog++)
KEY_CARDINALITY_RSD = 0.01


def topic_stats(spark: SparkSession, args: JobArgs, progress: Progress) -> JobOutput:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    progress("reading records")
    df = spark.read.format("minikafka").options(**args.source).load()
    # a record's bytes: its key and value (a null one counts 0)
    size = F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))
    per_minute = (
        df.groupBy("topic", "partition", F.window("timestamp", "1 minute").start.alias("minute"))
        .agg(F.count("*").alias("records"), F.sum(size).alias("bytes"))
        .orderBy("topic", "partition", "minute")
    )
    value_size = F.length("value")
    per_topic = (
        df.groupBy("topic")
        .agg(
            F.count("*").alias("records"),
            F.sum(size).alias("bytes"),
            F.approx_count_distinct("key", rsd=KEY_CARDINALITY_RSD).alias("distinct_keys"),
            *[
                F.percentile_approx(value_size, q, 10_000).alias(f"value_size_p{int(q * 100)}")
                for q in PERCENTILES
            ],
            F.max(value_size).alias("value_size_max"),
        )
        .orderBy("topic")
    )
    ranked = Window.partitionBy("topic").orderBy(F.desc("records"), "key")
    top_keys = (
        df.where(F.col("key").isNotNull())
        .groupBy("topic", "key")
        .agg(F.count("*").alias("records"))
        .withColumn("rank", F.row_number().over(ranked))
        .where(F.col("rank") <= args.top)
        .withColumn("key_text", F.col("key").cast("string"))
        .orderBy("topic", "rank")
    )
    progress("aggregating per minute, per topic and per key")
    minutes = per_minute.toPandas()
    topics = per_topic.toPandas()
    keys = top_keys.select("topic", "rank", "key_text", "records").toPandas()
    return JobOutput(
        tables={"per_minute": per_minute, "per_topic": per_topic, "top_keys": top_keys},
        sections=[
            Section(
                "Records per minute",
                charts=[chart_png("records per minute", lambda ax: _per_minute(ax, minutes))],
            ),
            Section(
                "Per topic",
                text="distinct_keys is approximate (HyperLogLog++); value sizes in bytes.",
                tables=[topics],
                charts=[chart_png("value size percentiles", lambda ax: _sizes(ax, topics))],
            ),
            Section(f"Top {args.top} keys per topic", tables=[keys]),
        ],
    )


def _per_minute(ax: Any, minutes: Any) -> None:
    lines, names = [], []
    for topic, rows in minutes.groupby("topic"):
        totals = rows.groupby("minute")["records"].sum()
        lines += ax.plot(totals.index, totals.values, marker="o")
        names.append(str(topic))
    ax.set_ylabel("records")
    # given explicitly: matplotlib leaves out labels that start with "_" (__consumer_offsets)
    ax.legend(lines, names, loc="best")


def _sizes(ax: Any, topics: Any) -> None:
    columns = [f"value_size_p{int(q * 100)}" for q in PERCENTILES]
    width = 0.8 / len(columns)
    for i, column in enumerate(columns):
        ax.bar([x + i * width for x in range(len(topics))], topics[column], width, label=column)
    ax.set_xticks([x + width * (len(columns) - 1) / 2 for x in range(len(topics))], topics["topic"])
    ax.set_ylabel("bytes")
    ax.legend(loc="best")
