"""``minikafka spark JOB``: the PySpark analytics jobs over minikafka's logs.

    minikafka spark topic-stats --path data/broker-0/logs --out stats/
    minikafka spark consumer-lag --bootstrap-server 127.0.0.1:9092 --out lag/
    minikafka spark consumer-lag --bootstrap-server 127.0.0.1:9092 --command-config c.properties
    minikafka spark retention-report --path data/broker-0/logs --retention-ms 86400000

Each job writes Parquet tables and ``report.html`` (charts inline) under ``--out``.
``--master`` picks the Spark cluster (``local[*]`` by default); executors run this
interpreter. With spark-submit, this file is the application and the master is
spark-submit's: ``spark-submit tools/spark.py JOB [options]``. pyspark is imported only
when a job runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from spark_jobs.jobs import JOB_NAMES, JobArgs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", choices=JOB_NAMES)
    way_in = parser.add_mutually_exclusive_group(required=True)
    way_in.add_argument("--path", action="append", help="a log directory (repeatable)")
    way_in.add_argument("--bootstrap-server", help="H:P[,H:P] of a running cluster")
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="client properties for --bootstrap-server (given to the source as kafka.<key>)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--subscribe", help="topics, comma-separated")
    which.add_argument("--subscribe-pattern", default=".*", help="topic regex (default .*)")
    parser.add_argument("--out", type=Path, default=Path("spark-out"), help="output directory")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    parser.add_argument("--top", type=int, default=10, help="top keys per topic (topic-stats)")
    parser.add_argument("--retention-ms", type=int, default=7 * 24 * 3600 * 1000)
    parser.add_argument("--retention-bytes", type=int, default=-1)


def source_options(args: argparse.Namespace) -> dict[str, str]:
    options = (
        {"path": ",".join(args.path)}
        if args.path
        else {"kafka.bootstrap.servers": args.bootstrap_server}
    )
    if args.bootstrap_server and getattr(args, "command_config", None):
        from config.properties import read_properties

        props = read_properties(args.command_config)
        options.update({f"kafka.{k}": v for k, v in props.items() if k != "bootstrap.servers"})
    if args.subscribe:
        options["subscribe"] = args.subscribe
    else:
        options["subscribePattern"] = args.subscribe_pattern
    return options


def run(args: argparse.Namespace) -> int:
    from spark_jobs.jobs import run_job, session

    started = time.monotonic()

    def progress(line: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {line}", file=sys.stderr, flush=True)

    job_args = JobArgs(
        source=source_options(args),
        out=args.out,
        now_ms=int(time.time() * 1000),
        top=args.top,
        retention_ms=args.retention_ms,
        retention_bytes=args.retention_bytes,
    )
    progress(f"starting Spark ({args.master or 'default master'})")
    spark = session(args.master, f"minikafka {args.job}")
    try:
        report = run_job(args.job, spark, job_args, progress)
    finally:
        spark.stop()
    progress(f"done: {report}")
    return 0


if __name__ == "__main__":  # spark-submit tools/spark.py JOB ...
    command_line = argparse.ArgumentParser(prog="tools/spark.py")
    configure(command_line)
    sys.exit(run(command_line.parse_args()))
