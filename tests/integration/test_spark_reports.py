"""Each job's HTML report, opened in headless Chromium, shows its charts: the rendered
page holds the colours matplotlib draws data in, which a page whose images failed to
load (or a report without charts) does not."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from PIL import Image

from spark_jobs.jobs import JOB_NAMES, JobArgs, run_job
from tests.unit.spark_jobs.known_topic import BASE_TIME, TOPIC, write_commits, write_known_topic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark
#: matplotlib's first colour (C0, "tab:blue"): every chart draws its first series in it
C0 = np.array([31, 119, 180])


def chart_pixels(screenshot: Path) -> int:
    pixels = np.asarray(Image.open(screenshot).convert("RGB")).reshape(-1, 3).astype(int)
    return int((np.abs(pixels - C0).sum(axis=1) < 30).sum())


def screenshot(page: Path, out: Path) -> Path:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is a system dependency of the integration tests (make system-deps)"
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1000,2500", f"--screenshot={out}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return out


@pytest.mark.parametrize("job", JOB_NAMES)
def test_a_report_shows_its_charts_in_chromium(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, job: str
) -> None:
    logs = tmp_path_factory.getbasetemp() / "report-logs"
    if not logs.exists():
        write_known_topic(str(logs))
        write_commits(str(logs))
    out = tmp_path_factory.mktemp(job)
    args = JobArgs(source={"path": str(logs), "subscribe": TOPIC}, out=out, now_ms=BASE_TIME)
    report = run_job(job, spark, args, lambda line: None)
    assert chart_pixels(screenshot(report, out / "page.png")) > 500
    # the same page with its images removed shows none of it
    bare = out / "bare.html"
    text = report.read_text()
    bare.write_text(text[: text.index("<img")] + "</body></html>")
    assert chart_pixels(screenshot(bare, out / "bare.png")) == 0
