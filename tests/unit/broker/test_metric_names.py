"""The operators' metrics keep their names and labels: broker.metrics.OPERATOR_METRICS (the
declarations flagged operator-facing) is what the alert rules and the dashboard rely on,
so a broker's registry must expose every listed family with exactly the listed labels,
and the rules and the dashboard may name nothing else (a renamed series would otherwise
leave an empty panel or a silent alert)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker.metrics import OPERATOR_METRICS, BrokerMetrics
from protocol.values import TopicPartition
from tests.unit.broker.metric_doubles import GroupStoreDouble, LogDouble

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "monitoring/prometheus/rules/minikafka.yml"
DASHBOARD = ROOT / "monitoring/grafana/dashboards/minikafka.json"
SERIES_SUFFIXES = ("_bucket", "_sum", "_count")


def _every_family_touched(tmp_path: Path) -> BrokerMetrics:
    """A registry in which every family has a child, as on a broker that has served
    each kind of request once."""
    m = BrokerMetrics()
    m.requests.labels(api="Produce", listener="PLAINTEXT").inc()
    m.request_errors.labels(api="Produce", error="NONE").inc()
    for histogram in (
        m.request_duration,
        m.request_queue_time,
        m.request_local_time,
        m.request_remote_time,
        m.request_response_time,
    ):
        histogram.labels(api="Produce").observe(0.001)
    m.watch_request_queue("data-plane", lambda: 0)
    m.watch_purgatory("Produce", lambda: 0)
    for counter in (
        m.topic_bytes_in,
        m.topic_bytes_out,
        m.topic_messages_in,
        m.topic_bytes_rejected,
        m.failed_produce_requests,
        m.failed_fetch_requests,
    ):
        counter.labels(topic="t").inc()
    m.connections.labels(listener="PLAINTEXT").set(1)
    m.network_received_bytes.labels(listener="PLAINTEXT").inc()
    m.network_sent_bytes.labels(listener="PLAINTEXT").inc()
    m.observe_controller_event("BrokerChange", 0.001, 0.002)
    m.zookeeper_request_latency.observe(0.001)
    m.watch_zookeeper_state(lambda: "CONNECTED")
    log_dir = tmp_path / "logs"
    (log_dir / "t-0").mkdir(parents=True)
    logs: list[Any] = [LogDouble(TopicPartition("t", 0), str(log_dir / "t-0"))]
    m.watch_logs(lambda: [str(log_dir)], lambda: logs)
    m.watch_last_stable_offsets(lambda: logs, lambda: 0.0)
    m.watch_transactions(lambda: {"Ongoing": 1}, lambda: 0)
    m.watch_idle(lambda: [("processor", "PLAINTEXT-0", 1.0), ("handler", "data-plane", 2.0)])
    m.replica_fetcher_max_lag.set(0)
    m.watch_unclean_leader_elections(lambda: 0)
    m.group_rebalances.labels().inc()
    m.group_offset_commits.labels().inc()
    m.watch_groups(lambda: {"Stable": 1})
    m.watch_group_store(GroupStoreDouble())
    m.sasl_authentications.labels(listener="SASL", mechanism="PLAIN", result="success").inc()
    m.watch_connection_principals(lambda: {("SASL", "User:alice"): 1})
    m.authorization_denials.labels(api="Produce", resource_type="topic").inc()
    return m


def _exposed(m: BrokerMetrics) -> dict[str, set[tuple[str, ...]]]:
    """Exposed name (a counter with ``_total``, a histogram by its base name) -> the label
    name sets of its samples (``le`` left out)."""
    out: dict[str, set[tuple[str, ...]]] = {}
    for family in text_string_to_metric_families(m.exposition().decode()):
        for sample in family.samples:
            name = sample.name
            if family.type == "histogram":
                if not name.endswith("_bucket"):
                    continue
                name = family.name
            labels = tuple(sorted(k for k in sample.labels if k != "le"))
            out.setdefault(name, set()).add(labels)
    return out


@pytest.mark.parametrize("name", sorted(OPERATOR_METRICS))
def test_each_listed_metric_is_exposed_with_its_labels(name: str, tmp_path: Path) -> None:
    exposed = _exposed(_every_family_touched(tmp_path))
    assert name in exposed, f"{name} is not exposed"
    assert exposed[name] == {tuple(sorted(OPERATOR_METRICS[name]))}


def _names_used(text: str) -> set[str]:
    names = set(re.findall(r"\bminikafka_[a-z0-9_]+", text))
    return {n.removesuffix(s) for n in names for s in SERIES_SUFFIXES if n.endswith(s)} | {
        n for n in names if not n.endswith(SERIES_SUFFIXES)
    }


def _dashboard_exprs() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [t["expr"] for p in panels for t in p.get("targets", [])]


def test_the_rules_name_only_listed_metrics() -> None:
    rules = re.sub(r"#.*", "", RULES.read_text())  # comments name files, not series
    unknown = _names_used(rules) - OPERATOR_METRICS.keys()
    assert not unknown, f"not in OPERATOR_METRICS: {sorted(unknown)}"


def test_the_dashboard_names_only_listed_metrics() -> None:
    unknown = _names_used("\n".join(_dashboard_exprs())) - OPERATOR_METRICS.keys()
    assert not unknown, f"not in OPERATOR_METRICS: {sorted(unknown)}"


def test_the_dashboard_uses_only_recorded_series_the_rules_define() -> None:
    recorded = set(re.findall(r"^\s*- record: (\S+)$", RULES.read_text(), re.MULTILINE))
    used = set(re.findall(r"\bminikafka:[a-z0-9_:]+", "\n".join(_dashboard_exprs())))
    assert used, "the dashboard uses recording rules"
    assert used <= recorded, f"not recorded: {sorted(used - recorded)}"


def test_log_gauges_and_disk_usage_come_from_the_logs_and_their_directory(
    tmp_path: Path,
) -> None:
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(
            _every_family_touched(tmp_path).exposition().decode()
        )
        for s in f.samples
    }
    tp = (("partition", "0"), ("topic", "t"))
    assert samples[("minikafka_log_size_bytes", tp)] == 100
    assert samples[("minikafka_log_end_offset", tp)] == 7
    assert samples[("minikafka_log_segments", tp)] == 1
    log_dir = (("log_dir", str(tmp_path / "logs")),)
    assert samples[("minikafka_log_dir_logs_bytes", log_dir)] == 100
    assert samples[("minikafka_log_dir_disk_total_bytes", log_dir)] > 0
    assert samples[("minikafka_zookeeper_session_state", (("state", "CONNECTED"),))] == 1
    assert samples[("minikafka_zookeeper_session_state", (("state", "LOST"),))] == 0
    assert samples[("minikafka_group_lag_messages", (("group", "g"), ("topic", "t")))] == 5
    assert samples[("minikafka_group_committed_offsets", ())] == 1
