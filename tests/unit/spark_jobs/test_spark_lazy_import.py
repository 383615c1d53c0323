"""pyspark is loaded only by what runs Spark: the broker, the command's parser and the
parts of spark_jobs that need no session never import it."""

from __future__ import annotations

import subprocess
import sys

NO_SPARK_NEEDED = [
    "broker.server",
    "tools.main",
    "tools.spark",
    "spark_jobs.arrow_records",
    "spark_jobs.segments",
    "spark_jobs.log_dir_backend",
    "spark_jobs.planning",
    "spark_jobs.jobs",
    "spark_jobs.wire",
]


def test_nothing_but_the_source_and_the_jobs_loads_pyspark() -> None:
    code = (
        "import importlib, sys\n"
        f"for m in {NO_SPARK_NEEDED!r}: importlib.import_module(m)\n"
        "from tools.main import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_importing_the_report_module_loads_neither_pandas_nor_matplotlib() -> None:
    code = (
        "import sys\n"
        "import spark_jobs.report\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'matplotlib'}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
