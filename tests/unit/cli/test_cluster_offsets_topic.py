"""A local cluster's brokers create __consumer_offsets with at most as many replicas as
there are brokers (Kafka's default of 3 would refuse a one- or two-broker cluster's
groups), unless the layout's overrides say otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.cluster import ClusterLayout


@pytest.mark.parametrize(("brokers", "factor"), [(1, "1"), (2, "2"), (3, "3"), (5, "3")])
def test_the_offsets_topic_replication_factor_fits_the_cluster(
    tmp_path: Path, brokers: int, factor: str
) -> None:
    layout = ClusterLayout.standard(tmp_path, brokers=brokers)
    assert {
        layout.broker_properties(i)["offsets.topic.replication.factor"] for i in range(brokers)
    } == {factor}


def test_an_override_wins(tmp_path: Path) -> None:
    layout = ClusterLayout.standard(
        tmp_path, brokers=3, overrides=[("offsets.topic.replication.factor", "1")]
    )
    assert layout.broker_properties(0)["offsets.topic.replication.factor"] == "1"
