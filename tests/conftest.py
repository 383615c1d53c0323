"""Project-wide test settings.

Under CI (CI=true) hypothesis runs derandomized: the same examples every run, so a red
build always points at a reproducible case instead of one random draw. Locally it keeps
exploring new examples and remembers failures in .hypothesis/.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local Spark session for the whole test run (Spark is heavy on two cores):
    local[2], few shuffle partitions, no UI, the minikafka source registered. Tests that
    use it are marked ``spark``."""
    from pyspark.sql import SparkSession

    from spark_jobs.source import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("minikafka-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    register(session)
    yield session
    session.stop()
