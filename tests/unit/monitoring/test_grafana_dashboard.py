"""The provisioned Grafana dashboard is well formed: every panel reads the provisioned
Prometheus datasource (by its uid), has a known panel type, an expression per target and
a place on the grid. (What each expression returns is checked against a real Prometheus by
`make compose-test`.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "monitoring/grafana/dashboards/minikafka.json"
DATASOURCES = ROOT / "monitoring/grafana/provisioning/datasources/prometheus.yml"
PANEL_TYPES = {"row", "stat", "timeseries"}


def _dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def _panels() -> list[dict[str, Any]]:
    return [p for p in _dashboard()["panels"] if p["type"] != "row"]


def _provisioned_uid() -> str:
    found = re.search(r"^\s*uid:\s*(\S+)\s*$", DATASOURCES.read_text(), re.MULTILINE)
    assert found, "the datasource provisioning names a uid"
    return found.group(1)


def test_the_dashboard_has_a_stable_uid_and_panels() -> None:
    dashboard = _dashboard()
    assert dashboard["uid"] == "minikafka-overview"
    assert len(_panels()) >= 20


def test_panel_ids_are_unique() -> None:
    ids = [p["id"] for p in _dashboard()["panels"]]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("panel", _panels(), ids=lambda p: str(p["title"]))
def test_each_panel_reads_the_provisioned_prometheus(panel: dict[str, Any]) -> None:
    uid = _provisioned_uid()
    assert panel["type"] in PANEL_TYPES
    assert panel["datasource"] == {"type": "prometheus", "uid": uid}
    assert panel["targets"], "a panel shows at least one expression"
    ref_ids = [t["refId"] for t in panel["targets"]]
    assert len(ref_ids) == len(set(ref_ids))
    for target in panel["targets"]:
        assert target["datasource"] == {"type": "prometheus", "uid": uid}
        assert target["expr"].strip()
    grid = panel["gridPos"]
    assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24 and grid["h"] > 0


def test_the_sections_the_operators_need_are_there() -> None:
    rows = {p["title"] for p in _dashboard()["panels"] if p["type"] == "row"}
    assert {
        "Cluster overview",
        "Throughput per broker",
        "Requests",
        "Partitions and ISR",
        "Controller and ZooKeeper",
        "Consumer groups",
    } <= rows
    titles = {p["title"] for p in _panels()}
    assert "Purgatory sizes" in titles
    assert "Consumer lag per group and topic" in titles
