"""Benchmark the minikafka Spark source: rows/s reading 1 KiB records from log dirs.

    .venv/bin/python tests/bench/bench_spark.py [--quick] [--gib 1.0]

Writes ``--gib`` of 1 KiB records (16 to a batch, as a Java producer's default 16 KiB
batch.size makes them, uncompressed) into a log directory through the storage package,
then, with Spark local[2] in the same run:

- ``minikafka`` from the log dir, summing the value lengths (so every record is decoded);
- the same records from Parquet (written once from the source's own rows, uncompressed
  and without dictionary encoding, so its files hold the same bytes): a columnar
  format's speed on the same data;
- Spark's own ``binaryFile`` source over the segment files: the bytes read with no record
  decoding at all, given as the records/s those bytes hold;
- a Python data source that decodes nothing, yielding one ready Arrow batch of the
  source's own rows (all its columns, as many rows as it yields at a time) again and
  again: the same bytes through Spark's hand-off of Arrow batches from Python workers
  to the JVM, whose cost bounds any Python data source;
- the decoder alone, in this process on one core (``spark_jobs.arrow_records``), beside
  the protocol's record-by-record decoder on the same batches.

Every source runs the same query, ``sum(length(value))``. Figures are best-of-N
wall-clock times on a shared 2-core machine, so compare within a run; beside them, the
CPU seconds the query took in the JVM and its Python workers (median of the runs), and
the rows/s that would give on two cores of its own: steadier than wall time when other
work shares the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from protocol.records import SimpleRecord, build_batch, read_header, set_base_offset
from protocol.values import TopicPartition
from spark_jobs import arrow_records
from storage.clock import MockClock
from storage.config import LogConfig, LogManagerConfig
from storage.log_manager import LogManager
from tests.bench.timing import best_of

RECORD_SIZE = 1024
PER_BATCH = 16
TOPIC = "bench"
PARTITIONS = 2


def template() -> bytes:
    records = [
        SimpleRecord(
            b"key-%d" % (i % 100), bytes([i % 251]) * RECORD_SIZE, (), 1_700_000_000_000 + i
        )
        for i in range(PER_BATCH)
    ]
    return bytes(build_batch(records))


def write_logs(log_dir: str, records: int) -> None:
    """``records`` records over the topic's partitions, high watermarks at the log ends."""
    config = LogConfig(segment_bytes=64 << 20)  # binaryFile holds a file per row
    lm = LogManager(LogManagerConfig(log_dirs=(log_dir,), default=config), MockClock())
    lm.load_logs()
    batch = bytearray(template())
    for p in range(PARTITIONS):
        log = lm.get_or_create_log(TopicPartition(TOPIC, p))
        for _ in range(records // PARTITIONS // PER_BATCH):
            set_base_offset(batch, 0, log.log_end_offset)
            log.append_as_follower(bytes(batch))
        log.update_high_watermark(log.log_end_offset)
    lm.shutdown()


def decoder_alone(batches: int) -> tuple[float, float]:
    """Records/s of the vectorized decoder and of the exact one, one core."""
    data = template()
    chunk = bytearray(data * batches)  # as a segment chunk holds them: back to back
    for i in range(batches):
        set_base_offset(chunk, i * len(data), i * PER_BATCH)
    buffer = bytes(chunk)
    many = [
        arrow_records.Batch.at(buffer, i * len(data), read_header(buffer, i * len(data)))
        for i in range(batches)
    ]
    n = batches * PER_BATCH
    fast = best_of(3, lambda: arrow_records.decode(many, 0, n))
    exact = best_of(1, lambda: arrow_records._decode_exact(many[: batches // 10]))
    return n / fast, n / 10 / exact


def ceiling_source(records: int, log_dir: str) -> type:
    """A data source of ``records`` rows that only hands over one Arrow batch built once:
    the first batch the minikafka source yields from ``log_dir``, ``PARTITIONS * 2``
    partitions of it."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from spark_jobs.source import SCHEMA

    class Reader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(PARTITIONS * 2)]

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            from spark_jobs.log_dirs import discover
            from spark_jobs.segments import read_range
            from spark_jobs.source import with_partition_columns

            tp = TopicPartition(TOPIC, 0)
            replica = discover([log_dir])[tp]
            rows = next(read_range(replica, replica.log_start_offset, replica.high_watermark))
            batch = with_partition_columns(rows, tp, include_headers=False)
            for _ in range(records // batch.num_rows // (PARTITIONS * 2)):
                yield batch

    class Ceiling(DataSource):
        @classmethod
        def name(cls) -> str:
            return "ceiling"

        def schema(self) -> str:
            return SCHEMA

        def reader(self, schema: object) -> DataSourceReader:
            return Reader()

    return Ceiling


def tree_cpu(root: int) -> float:
    """CPU seconds used so far by process ``root`` and its descendants (with the children
    they reaped): the JVM, and the Python workers it forks."""
    stats: dict[int, list[str]] = {}
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as f:
                stats[int(name)] = f.read().rsplit(")", 1)[1].split()
        except (ValueError, OSError):
            continue
    children: dict[int, list[int]] = {}
    for pid, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(pid)
    ticks, todo = 0, [root]
    while todo:
        pid = todo.pop()
        ticks += sum(int(x) for x in stats.get(pid, [])[11:15])  # utime stime cutime cstime
        todo.extend(children.get(pid, []))
    return ticks / os.sysconf("SC_CLK_TCK")


def wall_and_cpu(repeats: int, fn: Callable[[], object], root: int) -> tuple[float, float]:
    """Best wall-clock seconds of ``repeats`` calls after one to warm up (JIT, Python
    workers), and the median CPU seconds a call took in ``root``'s process tree."""
    fn()
    walls, cpus = [], []
    for _ in range(repeats):
        cpu, start = tree_cpu(root), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(tree_cpu(root) - cpu)
    return min(walls), sorted(cpus)[repeats // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 MiB instead of --gib")
    parser.add_argument("--gib", type=float, default=1.0)
    args = parser.parse_args()
    size = 64 << 20 if args.quick else int(args.gib * (1 << 30))
    records = size // RECORD_SIZE

    fast, exact = decoder_alone(4096)
    print(f"decoder, one core: vectorized {fast:,.0f} records/s, "
          f"record by record {exact:,.0f} records/s ({fast / exact:.1f}x)")  # fmt: skip

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from spark_jobs.source import register

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    jvm: int = gateway.proc.pid  # the JVM: spark-submit execs it
    with tempfile.TemporaryDirectory() as tmp:
        log_dir, parquet = os.path.join(tmp, "logs"), os.path.join(tmp, "parquet")
        start = time.perf_counter()
        write_logs(log_dir, records)
        print(
            f"wrote {records:,} records of {RECORD_SIZE} B in {time.perf_counter() - start:.1f} s"
        )
        spark.dataSource.register(ceiling_source(records, log_dir))
        # minPartitions: two tasks per core, so both cores stay busy to the end
        source = (
            spark.read.format("minikafka")
            .option("path", log_dir)
            .option("subscribe", TOPIC)
            .option("minPartitions", "4")
            .load()
        )
        # the same bytes on disk: the values repeat every 16 records, which Parquet's
        # dictionary encoding and snappy would shrink to almost nothing
        source.write.option("compression", "none").option(
            "parquet.enable.dictionary", "false"
        ).parquet(parquet)
        segments = spark.read.format("binaryFile").option("pathGlobFilter", "*.log")
        ceiling = spark.read.format("ceiling").load()
        runs = {
            "minikafka (log dir)": lambda: source.agg(F.sum(F.length("value"))).collect(),
            "Python source, no decoding": lambda: ceiling.agg(F.sum(F.length("value"))).collect(),
            "parquet": lambda: spark.read.parquet(parquet).agg(F.sum(F.length("value"))).collect(),
            "binaryFile (no decoding)": lambda: (
                segments.option("recursiveFileLookup", "true")
                .load(log_dir)
                .agg(F.sum(F.length("content")))
                .collect()
            ),
        }
        baseline = None
        for name, run in runs.items():
            seconds, cpu = wall_and_cpu(3, run, jvm)
            rate = records / seconds
            baseline = baseline or rate
            print(f"{name:26} {rate:>12,.0f} records/s  {size / seconds / (1 << 20):8.0f} MiB/s"
                  f"  {rate / baseline:5.2f}x minikafka  CPU {cpu:5.2f} s"
                  f" = {records / cpu * 2:>10,.0f} records/s on 2 cores")  # fmt: skip
    spark.stop()


if __name__ == "__main__":
    main()
