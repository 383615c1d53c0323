"""`minikafka cluster up` writes a prometheus.yml that scrapes each of its brokers."""

from __future__ import annotations

from pathlib import Path

from tools.cluster import PROMETHEUS_RULES, ClusterLayout


def test_the_config_scrapes_every_broker_labelled_as_in_the_compose_stack(
    tmp_path: Path,
) -> None:
    layout = ClusterLayout.standard(tmp_path, brokers=3, metrics_base_port=9700)
    text = layout.prometheus_config()
    for i, port in enumerate((9700, 9701, 9702)):
        assert f'- targets: ["127.0.0.1:{port}"]\n        labels: {{broker: "{i}"}}' in text
    assert "job_name: minikafka" in text
    assert f"{PROMETHEUS_RULES}/*.yml" in text  # a checkout has the rules


def test_write_configs_puts_it_beside_the_brokers(tmp_path: Path) -> None:
    layout = ClusterLayout.standard(tmp_path / "data", brokers=1)
    layout.write_configs()
    assert layout.prometheus_config_path == tmp_path / "data" / "prometheus.yml"
    assert layout.prometheus_config_path.read_text() == layout.prometheus_config()
