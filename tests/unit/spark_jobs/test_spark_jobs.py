"""Each job on a small known dataset, in the shared Spark session: its numbers match a
hand count, its tables are written as Parquet and its report holds its charts."""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from known_topic import BASE_TIME, COMMITTED, TOPIC, Row, write_commits, write_known_topic

from spark_jobs.jobs import JobArgs, run_job

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark
DAY = 24 * 3600 * 1000


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Row]]:
    log_dir = tmp_path_factory.mktemp("jobs-logs")
    expected = write_known_topic(str(log_dir))
    write_commits(str(log_dir))
    return log_dir, expected


def run(
    spark: SparkSession,
    job: str,
    log_dir: Path,
    out: Path,
    *,
    top: int = 10,
    retention_ms: int = -1,
) -> Path:
    args = JobArgs(
        source={"path": str(log_dir), "subscribe": TOPIC},
        out=out,
        now_ms=BASE_TIME + DAY,
        top=top,
        retention_ms=retention_ms,
    )
    report = run_job(job, spark, args, lambda line: None)
    page = report.read_text()
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', page)) >= 1
    return out


def test_topic_stats_match_a_hand_count(
    spark: SparkSession, dataset: tuple[Path, list[Row]], tmp_path: Path
) -> None:
    log_dir, rows = dataset
    out = run(spark, "topic-stats", log_dir, tmp_path, top=3)
    per_topic = spark.read.parquet(str(out / "per_topic")).collect()[0]
    sizes = sorted(len(r["value"]) for r in rows if r["value"] is not None)
    assert per_topic.records == len(rows)
    assert per_topic.bytes == sum(len(r["key"] or b"") + len(r["value"] or b"") for r in rows)
    assert per_topic.distinct_keys == len({r["key"] for r in rows if r["key"] is not None})
    assert per_topic.value_size_p50 == sizes[math.ceil(0.5 * len(sizes)) - 1]
    assert per_topic.value_size_max == sizes[-1]
    minutes = Counter((r["partition"], r["timestamp_ms"] // 60_000) for r in rows)
    got = {
        (m.partition, int(m.minute.timestamp()) // 60): m.records
        for m in spark.read.parquet(str(out / "per_minute")).collect()
    }
    assert got == dict(minutes)
    keys = Counter(r["key"] for r in rows if r["key"] is not None)
    top = spark.read.parquet(str(out / "top_keys")).orderBy("rank").collect()
    assert [(bytes(t.key), t.records) for t in top] == sorted(
        keys.items(), key=lambda kv: (-kv[1], kv[0])
    )[:3]


def test_retention_report_lists_segments_and_what_goes_next(
    spark: SparkSession, dataset: tuple[Path, list[Row]], tmp_path: Path
) -> None:
    log_dir, _ = dataset
    out = run(spark, "retention-report", log_dir, tmp_path, retention_ms=DAY - 26_000)
    segments = spark.read.parquet(str(out / "segments")).where("partition = 0").collect()
    part = log_dir / f"{TOPIC}-0"
    files = sorted(f for f in os.listdir(part) if f.endswith(".log"))
    assert [(s.base_offset, s.size_bytes) for s in segments] == [
        (int(f[:20]), os.path.getsize(part / f)) for f in files
    ]
    # newest records: BASE_TIME + 24 s in the first segment (older than the limit), + 28 s
    # in the second (younger); the third is the active one
    assert [s.deleted_by for s in segments] == ["retention.ms", None, None]


def test_consumer_lag_is_log_end_minus_committed(
    spark: SparkSession, dataset: tuple[Path, list[Row]], tmp_path: Path
) -> None:
    log_dir, _ = dataset
    out = run(spark, "consumer-lag", log_dir, tmp_path)
    lag = spark.read.parquet(str(out / "consumer_lag")).collect()
    assert {(r.group, r.partition): (r.committed_offset, r.lag) for r in lag} == {
        key: (offset, 41 - offset) for key, offset in COMMITTED.items()
    }
