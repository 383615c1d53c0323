"""spark.read.format("minikafka") over log directories, end to end in the shared local
Spark session: exactly the committed rows of a known topic, and exact ranges."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import pytest
from known_topic import TOPIC, UNCOMMITTED, Row, write_known_topic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[Row]]:
    log_dir = str(tmp_path_factory.mktemp("known"))
    return log_dir, write_known_topic(log_dir)


def as_expected(row: Any) -> Row:
    d = row.asDict(recursive=True)
    ts: datetime.datetime = d.pop("timestamp")
    d["timestamp_ms"] = int(ts.replace(tzinfo=datetime.UTC).timestamp() * 1000)
    d["key"] = None if d["key"] is None else bytes(d["key"])
    d["value"] = None if d["value"] is None else bytes(d["value"])
    if d.get("headers") is not None:
        d["headers"] = [
            {"key": h["key"], "value": None if h["value"] is None else bytes(h["value"])}
            for h in d["headers"]
        ]
    return d


def test_reads_exactly_the_committed_rows_of_every_codec(
    spark: SparkSession, known: tuple[str, list[Row]]
) -> None:
    log_dir, expected = known
    df = (
        spark.read.format("minikafka")
        .option("path", log_dir)
        .option("subscribe", TOPIC)
        .option("includeHeaders", "true")
        .load()
    )
    rows = [as_expected(r) for r in df.orderBy("partition", "offset").collect()]
    assert rows == expected
    # the records past each partition's high watermark are on disk but never read
    assert max(r["offset"] for r in rows if r["partition"] == 0) < 41
    assert UNCOMMITTED > 0
