"""Every family a broker exports is declared in broker.metrics.catalog, with the type,
help text and labels the scrape shows; the operators' list is exactly the flagged
declarations; the groups gauge is labelled by the group protocol's own states."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from broker.group.model import GroupState
from broker.metrics import OPERATOR_METRICS, BrokerMetrics
from broker.metrics.catalog import DECLARED, GROUP_STATES, PRINCIPALS_PER_LISTENER, Kind
from protocol.values import TopicPartition
from tests.unit.broker.metric_doubles import GroupStoreDouble, LogDouble


@dataclass
class _CleanerMetrics:
    passes: int = 4
    bytes_read: int = 5
    bytes_written: int = 6


class _Cleaner:
    metrics = _CleanerMetrics()
    uncleanable: set[TopicPartition] = set()

    def time_since_last_clean_ms(self) -> int:
        return 1500

    def dirty_ratios(self) -> dict[TopicPartition, float]:
        return {TopicPartition("t", 1): 0.5}


def _every_watch_wired(tmp_path: Path) -> BrokerMetrics:
    """A registry with every scrape-time collector registered."""
    m = BrokerMetrics()
    cleaner: Any = _Cleaner()
    m.watch_cleaner(cleaner)
    log_dir = tmp_path / "logs"
    (log_dir / "t-0").mkdir(parents=True)
    logs: list[Any] = [LogDouble(TopicPartition("t", 0), str(log_dir / "t-0"))]
    m.watch_logs(lambda: [str(log_dir)], lambda: logs)
    m.watch_last_stable_offsets(lambda: logs, lambda: 0.0)
    m.watch_idle(lambda: [("processor", "PLAINTEXT-0", 1.0), ("handler", "data-plane", 2.0)])
    m.watch_unclean_leader_elections(lambda: 0)
    m.watch_follower_lags(lambda: {2: [1, 5]})
    m.watch_groups(lambda: {"Stable": 1})
    m.watch_group_store(GroupStoreDouble())
    m.watch_zookeeper_state(lambda: "CONNECTED")
    m.watch_connection_principals(lambda: {("SASL_PLAINTEXT", "User:alice"): 1})
    return m


def test_every_exported_family_is_declared_with_its_type_help_and_labels(
    tmp_path: Path,
) -> None:
    declared = {d.full_name: d for d in DECLARED}
    families = list(
        text_string_to_metric_families(_every_watch_wired(tmp_path).exposition().decode())
    )
    assert {f.name for f in families} == set(declared)
    for family in families:
        d = declared[family.name]
        assert family.type == d.kind.value
        assert family.documentation == d.help
        for sample in family.samples:
            assert set(sample.labels) - {"le"} <= set(d.labels), family.name


def test_the_operators_list_is_the_flagged_declarations() -> None:
    flagged = [d for d in DECLARED if d.operator]
    assert sorted(OPERATOR_METRICS) == sorted(d.exposed_name for d in flagged)
    counters = [d for d in flagged if d.kind is Kind.COUNTER]
    assert all(d.exposed_name.endswith("_total") for d in counters)


def test_the_groups_gauge_is_labelled_by_every_group_state() -> None:
    assert set(GROUP_STATES) == {state.value for state in GroupState}
    m = BrokerMetrics()
    m.watch_groups(lambda: {GroupState.STABLE.value: 2})
    for state in GroupState:
        value = m.registry.get_sample_value("minikafka_groups", {"state": state.value})
        assert value == (2 if state is GroupState.STABLE else 0)


def test_connections_by_principal_names_the_busiest_and_sums_the_rest() -> None:
    m = BrokerMetrics()
    many = {("SASL", f"User:u{i:03d}"): 1 for i in range(PRINCIPALS_PER_LISTENER + 5)}
    many["SASL", "User:busy"] = 7
    many["PLAINTEXT", "User:ANONYMOUS"] = 3
    m.watch_connection_principals(lambda: many)
    sample = m.registry.get_sample_value
    name = "minikafka_connections_by_principal"
    assert sample(name, {"listener": "SASL", "principal": "User:busy"}) == 7
    assert sample(name, {"listener": "PLAINTEXT", "principal": "User:ANONYMOUS"}) == 3
    # the busiest named (ties by name), the other six summed
    assert sample(name, {"listener": "SASL", "principal": "other"}) == 6
    assert sample(name, {"listener": "SASL", "principal": "User:u000"}) == 1
    named = [
        s
        for f in m.registry.collect()
        if f.name == name
        for s in f.samples
        if s.labels["listener"] == "SASL"
    ]
    assert len(named) == PRINCIPALS_PER_LISTENER + 1
