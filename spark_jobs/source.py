"""The "minikafka" PySpark data source: Spark's Kafka source, over minikafka.

``spark.read.format("minikafka")`` and ``spark.readStream.format("minikafka")`` take the
options of Spark's Kafka source (:mod:`.options`) and give rows of its schema (key,
value, topic, partition, offset, timestamp, timestampType, and headers with
``includeHeaders``), so a job written for Spark's Kafka source runs by changing the
format name ("kafka" itself is Spark's).

Two ways in, one schema: log directories (option ``path``, :mod:`.log_dir_backend`) or a
running cluster (option ``kafka.bootstrap.servers``, :mod:`.wire`). The driver plans
offset ranges (:mod:`.planning`); each Spark partition reads one range and yields Arrow
record batches, never rows one by one.

This module imports pyspark; nothing else in the package does at import time, so only
code that asks for Spark loads it (:func:`register`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from protocol.values import READ_COMMITTED, TopicPartition
from spark_jobs.committed import aborted_transactions
from spark_jobs.log_dir_backend import LogDirBackend
from spark_jobs.log_dirs import Replica
from spark_jobs.options import SourceOptions, flatten_offsets, nest_offsets, parse_options
from spark_jobs.planning import (
    Bounds,
    DataLoss,
    OffsetRange,
    cut,
    limit,
    plan,
    resolve,
    split,
)
from spark_jobs.segments import read_range

FORMAT = "minikafka"
SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS_SCHEMA = SCHEMA + ", headers array<struct<key: string, value: binary>>"


def register(spark: SparkSession) -> None:
    """Make ``format("minikafka")`` known to ``spark``."""
    spark.dataSource.register(MinikafkaDataSource)


class Backend(Protocol):
    """Where partitions, their bounds and their records come from."""

    def partitions(self) -> list[TopicPartition]: ...
    def bounds(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, Bounds]: ...
    def offset_for_timestamp(self, tp: TopicPartition, timestamp: int) -> int | None: ...
    def split_points(self, tp: TopicPartition) -> list[int]: ...
    def source_of(self, tp: TopicPartition) -> Replica | str: ...


def backend_for(options: SourceOptions) -> Backend:
    if options.bootstrap_servers is not None:
        from spark_jobs.wire import WireBackend

        wire: Backend = WireBackend(
            options.bootstrap_servers, options.client_properties, options.isolation_level
        )
        return wire
    return LogDirBackend(options.log_dirs, options.isolation_level)


class RangePartition(InputPartition):
    """One Spark partition: an offset range and where to read it from (the replica's
    directory in log-dir mode, the bootstrap servers over the wire)."""

    def __init__(self, r: OffsetRange, source: Replica | str) -> None:
        super().__init__(r)
        self.range = r
        self.source = source


def read_partition(partition: InputPartition, options: SourceOptions) -> Iterator[pa.RecordBatch]:
    """The rows of one Spark partition as Arrow batches of the source's schema."""
    assert isinstance(partition, RangePartition)
    r = partition.range
    committed = options.isolation_level == READ_COMMITTED
    if isinstance(partition.source, Replica):
        aborted = aborted_transactions(partition.source) if committed else None
        batches = read_range(partition.source, r.start, r.end, aborted)
    else:
        from spark_jobs.wire import read_wire_range

        batches = read_wire_range(
            partition.source, r, options.client_properties, options.isolation_level
        )
    for records in batches:
        yield with_partition_columns(records, r.tp, options.include_headers)


def with_partition_columns(
    records: pa.RecordBatch, tp: TopicPartition, include_headers: bool
) -> pa.RecordBatch:
    """Records (:data:`spark_jobs.arrow_records.RECORD_SCHEMA`) in the column order of
    Spark's Kafka schema, with the constant topic and partition columns."""
    n = records.num_rows
    # the constant columns are built in C: a dictionary of one topic, a filled array
    topic = pa.DictionaryArray.from_arrays(np.zeros(n, dtype=np.int32), [tp.topic])
    columns = [
        records.column("key"),
        records.column("value"),
        topic.cast(pa.string()),
        pa.array(np.full(n, tp.partition, dtype=np.int32)),
        records.column("offset"),
        records.column("timestamp"),
        records.column("timestampType"),
    ]
    names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    if include_headers:
        columns.append(records.column("headers"))
        names.append("headers")
    return pa.RecordBatch.from_arrays(columns, names=names)


class MinikafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return HEADERS_SCHEMA if self._options(False).include_headers else SCHEMA

    def _options(self, streaming: bool) -> SourceOptions:
        return parse_options(dict(self.options), streaming=streaming)

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(self._options(False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(self._options(True))


class BatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[RangePartition]:
        o = self.options
        backend = backend_for(o)
        tps = o.subscription.select(backend.partitions())
        ranges = plan(
            tps,
            backend.bounds(tps),
            o.starting,
            o.ending,
            backend.offset_for_timestamp,
            timestamp_strategy=o.timestamp_strategy,
            fail_on_data_loss=o.fail_on_data_loss,
        )
        ranges = cut(ranges, {tp: backend.split_points(tp) for tp in tps})
        ranges = split(ranges, o.min_partitions)
        return [RangePartition(r, backend.source_of(r.tp)) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition, self.options)


Offsets = dict[str, dict[str, int]]


class StreamReader(DataSourceStreamReader):
    """Micro-batches between Kafka-JSON offsets (``{"topic": {"0": 42}}``), which Spark
    keeps in the query's checkpoint: a restarted query resumes exactly where it was."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def _current(self) -> tuple[Backend, list[TopicPartition], dict[TopicPartition, Bounds]]:
        backend = backend_for(self.options)
        tps = self.options.subscription.select(backend.partitions())
        return backend, tps, backend.bounds(tps)

    def initialOffset(self) -> Offsets:
        backend, tps, bounds = self._current()
        o = self.options
        return nest_offsets(
            {
                tp: resolve(
                    o.starting,
                    tp,
                    bounds[tp],
                    backend.offset_for_timestamp,
                    timestamp_strategy=o.timestamp_strategy,
                )
                for tp in tps
            }
        )

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def latestOffset(self, start: Offsets, limit_: ReadLimit) -> Offsets:
        _, tps, bounds = self._current()
        begin = flatten_offsets(start)
        # a partition that appeared since the query started is read from its beginning
        begin.update({tp: bounds[tp].earliest for tp in tps if tp not in begin})
        latest = {tp: bounds[tp].latest for tp in tps}
        cap = limit_.max_rows if isinstance(limit_, ReadMaxRows) else None
        return nest_offsets(limit(begin, latest, cap))

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[RangePartition]:
        backend, _, bounds = self._current()
        begin, stop = flatten_offsets(start), flatten_offsets(end)
        ranges = []
        for tp, last in stop.items():
            first = begin.get(tp, bounds[tp].earliest if tp in bounds else last)
            if tp in bounds and first < bounds[tp].earliest:
                if self.options.fail_on_data_loss:
                    raise DataLoss(
                        f"{tp}: offsets {first} to {bounds[tp].earliest} were removed "
                        "before this query read them (failOnDataLoss=false reads on)"
                    )
                first = bounds[tp].earliest
            if last > first and tp in bounds:
                ranges.append(OffsetRange(tp, first, last))
        return [RangePartition(r, backend.source_of(r.tp)) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition, self.options)

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, not in the cluster."""
