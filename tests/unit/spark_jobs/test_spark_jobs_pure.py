"""The jobs' pure parts: __consumer_offsets decoding, the retention plan, the report."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import pandas as pd
from known_topic import TOPIC, commit_record

from spark_jobs.offsets_topic import Commit, decode_commit, latest_commits
from spark_jobs.report import Section, chart_png, render
from spark_jobs.retention_report import deletion_plan
from storage.retention import SegmentStats

DAY = 24 * 3600 * 1000


def test_commits_decode_and_the_last_per_key_wins_tombstones_removing() -> None:
    records = [commit_record("g", TOPIC, 0, 5), commit_record("g", TOPIC, 1, 9)]
    records += [commit_record("g", TOPIC, 0, 8), commit_record("g", TOPIC, 1, None)]
    pairs = [(r.key, r.value) for r in records]
    assert decode_commit(*pairs[0]) == Commit("g", TOPIC, 0, 5, records[0].timestamp)
    assert [(c.partition, c.offset) for c in latest_commits(pairs)] == [(0, 8)]


def test_records_that_are_not_commits_are_skipped() -> None:
    assert decode_commit(b"\x00\x02\x00\x01g", b"\x00\x03") is None  # group metadata
    assert decode_commit(None, b"x") is None
    assert decode_commit(b"\x00\x01\x00", b"x") is None  # truncated


def test_retention_deletes_by_time_then_by_size_never_the_active_segment() -> None:
    now = 100 * DAY
    stats = [
        SegmentStats(0, 100, now - 9 * DAY),
        SegmentStats(10, 100, now - 8 * DAY),
        SegmentStats(20, 100, now - 2 * DAY),
        SegmentStats(30, 100, now - 1 * DAY),
        SegmentStats(40, 100, now - 10 * DAY),  # active: never deleted
    ]
    assert deletion_plan(stats, 50, now, 7 * DAY, -1) == {0: "retention.ms", 1: "retention.ms"}
    plan = deletion_plan(stats, 50, now, 7 * DAY, 200)
    assert plan == {0: "retention.ms", 1: "retention.ms", 2: "retention.bytes"}
    # nothing past the high watermark goes
    assert deletion_plan(stats, 15, now, 7 * DAY, -1) == {0: "retention.ms"}
    assert deletion_plan(stats, 50, now, -1, -1) == {}


def test_the_report_is_one_file_with_its_charts_inline() -> None:
    png = chart_png("a chart", lambda ax: ax.plot([1, 2, 3], [3, 1, 2]))
    page = render("t <&>", [Section("s", "text", [pd.DataFrame({"a": ["<b>"]})], [png])])
    assert "<title>t &lt;&amp;&gt;</title>" in page and "&lt;b&gt;" in page
    (data,) = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    from PIL import Image

    image = Image.open(io.BytesIO(base64.b64decode(data)))
    assert image.format == "PNG" and image.size[0] > 100
    assert len(np.unique(np.asarray(image.convert("L")))) > 2  # something was drawn
