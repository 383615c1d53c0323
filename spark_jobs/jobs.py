"""Running an analytics job: the arguments every job takes, progress, and the outputs
(one Parquet directory per result table, one self-contained HTML report).

The jobs themselves (:mod:`.topic_stats`, :mod:`.retention_report`,
:mod:`.consumer_lag`) only build Spark DataFrames and report sections; writing them is
done here once. Run them with ``minikafka spark JOB`` or with spark-submit
(``spark-submit tools/spark.py JOB ...``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_jobs.report import Section, render

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Prints one line of progress.
Progress = Callable[[str], None]


@dataclass(frozen=True)
class JobArgs:
    #: options of the minikafka source: path or kafka.bootstrap.servers, and a subscription
    source: dict[str, str]
    out: Path
    #: "now" for ages and retention, in ms (injected: the jobs read no clock)
    now_ms: int
    top: int = 10
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobOutput:
    tables: dict[str, DataFrame]
    sections: list[Section]


Job = Callable[["SparkSession", JobArgs, Progress], JobOutput]


def jobs() -> dict[str, Job]:
    """Job name -> the function that builds it (imported on demand: they load pyspark)."""
    from spark_jobs.consumer_lag import consumer_lag
    from spark_jobs.retention_report import retention_report
    from spark_jobs.topic_stats import topic_stats

    return {
        "topic-stats": topic_stats,
        "retention-report": retention_report,
        "consumer-lag": consumer_lag,
    }


JOB_NAMES = ("topic-stats", "retention-report", "consumer-lag")


def session(master: str | None, app_name: str) -> SparkSession:
    """A Spark session with the minikafka source registered; executors run this very
    interpreter (PYSPARK_PYTHON), so they import the same code. Without ``master``,
    spark-submit's applies, or local[*]."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from spark_jobs.source import register

    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    spark = (
        builder.config("spark.ui.showConsoleProgress", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    register(spark)
    return spark


def run_job(name: str, spark: SparkSession, args: JobArgs, progress: Progress) -> Path:
    """Run job ``name``; write its tables as Parquet under ``args.out`` and its report as
    ``args.out/report.html`` (returned)."""
    output = jobs()[name](spark, args, progress)
    args.out.mkdir(parents=True, exist_ok=True)
    for table, df in output.tables.items():
        progress(f"writing {args.out / table} (Parquet)")
        df.write.mode("overwrite").parquet(str(args.out / table))
    report = args.out / "report.html"
    progress(f"writing {report}")
    report.write_text(render(f"minikafka {name}", output.sections), encoding="utf-8")
    return report
