"""The stream reader's offsets without a Spark session: Kafka-JSON start and end,
the read limit Spark passes, and failOnDataLoss when retention removed what a
checkpoint points at."""

from __future__ import annotations

from pathlib import Path

import pytest
from known_topic import TOPIC, write_known_topic
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from protocol.values import TopicPartition
from spark_jobs.options import parse_options
from spark_jobs.planning import DataLoss
from spark_jobs.source import RangePartition, StreamReader
from storage.checkpoint import LOG_START_OFFSET_CHECKPOINT, write_offset_checkpoint


def reader(log_dir: Path, **options: str) -> StreamReader:
    raw = {"path": str(log_dir), "subscribe": TOPIC, **options}
    return StreamReader(parse_options(raw, streaming=True))


def test_offsets_are_kafka_json_and_honour_the_read_limit(tmp_path: Path) -> None:
    write_known_topic(str(tmp_path))
    stream = reader(tmp_path, startingOffsets="earliest", maxOffsetsPerTrigger="10")
    start = stream.initialOffset()
    assert start == {TOPIC: {"0": 0, "1": 0}}
    assert isinstance(stream.getDefaultReadLimit(), ReadMaxRows)
    end = stream.latestOffset(start, ReadMaxRows(10))
    assert end == {TOPIC: {"0": 5, "1": 5}}
    assert stream.latestOffset(start, ReadAllAvailable()) == {TOPIC: {"0": 41, "1": 41}}
    parts = stream.partitions(start, end)
    assert [
        (p.range.tp, p.range.start, p.range.end) for p in parts if isinstance(p, RangePartition)
    ] == [
        (TopicPartition(TOPIC, 0), 0, 5),
        (TopicPartition(TOPIC, 1), 0, 5),
    ]
    assert reader(tmp_path).initialOffset() == {TOPIC: {"0": 41, "1": 41}}  # latest


def test_offsets_removed_by_retention_fail_the_query_unless_told_otherwise(
    tmp_path: Path,
) -> None:
    write_known_topic(str(tmp_path))
    checkpoint = {TopicPartition(TOPIC, 0): 10, TopicPartition(TOPIC, 1): 0}
    write_offset_checkpoint(str(tmp_path / LOG_START_OFFSET_CHECKPOINT), checkpoint)
    start, end = {TOPIC: {"0": 2, "1": 2}}, {TOPIC: {"0": 20, "1": 20}}
    with pytest.raises(DataLoss):
        reader(tmp_path).partitions(start, end)
    parts = reader(tmp_path, failOnDataLoss="false").partitions(start, end)
    assert [p.range.start for p in parts if isinstance(p, RangePartition)] == [10, 2]
