"""The replication throttle's decisions (broker.replication.throttle), as pure functions
and over a throttle with a hand-driven clock."""

from __future__ import annotations

import itertools

import pytest

from broker.metrics import BrokerMetrics
from broker.replication.throttle import (
    ThrottleSide,
    follower_should_throttle,
    leader_should_throttle,
)
from protocol.values import TopicPartition
from tests.unit.broker.broker_helpers import unthrottled
from timer.clock import MockClock

TP = TopicPartition


@pytest.mark.parametrize(
    ("throttled", "in_sync", "exceeded"), list(itertools.product([False, True], repeat=3))
)
def test_only_a_throttled_replica_out_of_sync_over_its_quota_is_held(
    throttled: bool, in_sync: bool, exceeded: bool
) -> None:
    expected = throttled and not in_sync and exceeded
    assert leader_should_throttle(throttled, in_sync, exceeded) is expected
    assert follower_should_throttle(throttled, in_sync, exceeded) is expected


def test_a_topics_list_is_read_afresh_when_its_overrides_are_replaced() -> None:
    overrides: dict[str, dict[str, str]] = {"t": {}}
    throttle = unthrottled(ThrottleSide.LEADER, 1, MockClock(), lambda t: overrides.get(t, {}))
    assert not throttle.is_throttled(TP("t", 0))
    overrides["t"] = {"leader.replication.throttled.replicas": "0:1,1:2"}
    assert throttle.is_throttled(TP("t", 0))  # paired with broker 1
    assert not throttle.is_throttled(TP("t", 1))  # paired with broker 2
    assert not throttle.is_throttled(TP("u", 0))
    overrides["t"] = {"follower.replication.throttled.replicas": "*"}  # the other side's key
    assert not throttle.is_throttled(TP("t", 0))


def test_the_quota_follows_the_rate_configured_now() -> None:
    clock = MockClock()
    rates = [1000]
    # the rate as the broker's dynamic config has it, changed live
    throttle = unthrottled(ThrottleSide.FOLLOWER, 0, clock, rate=lambda: rates[0])
    throttle.record(10_000)  # 10 kB over the 10 s a fresh quota assumes: 1 kB/s
    assert not throttle.quota_exceeded()
    rates[0] = 999
    assert throttle.quota_exceeded()
    assert throttle.throttled_rate() == pytest.approx(1000)
    clock.advance(11_000)  # every window expired
    assert not throttle.quota_exceeded() and throttle.throttled_rate() == 0
    assert throttle.recorded_bytes == 10_000


def test_the_follower_holds_back_only_its_throttled_partitions_not_caught_up() -> None:
    clock = MockClock()
    listed = {"follower.replication.throttled.replicas": "0:3"}
    throttle = unthrottled(
        ThrottleSide.FOLLOWER, 3, clock, lambda t: listed if t == "moving" else {}, lambda: 100
    )
    moving, other = TP("moving", 0), TP("other", 0)
    lags = {moving: 5, other: 5}
    assert throttle.held_back([moving, other], lags) == set()  # quota not exceeded
    throttle.record(100_000)
    assert throttle.held_back([moving, other], lags) == {moving}
    assert throttle.held_back([moving, other], {moving: 0}) == set()  # caught up
    assert throttle.held_back([moving], {}) == {moving}  # no answer yet: not in sync


def test_the_metrics_show_each_sides_measured_rate() -> None:
    clock = MockClock()
    leader = unthrottled(ThrottleSide.LEADER, 0, clock)
    follower = unthrottled(ThrottleSide.FOLLOWER, 0, clock)
    metrics = BrokerMetrics()
    metrics.watch_replication_throttles(leader, follower)
    leader.record(50_000)  # over a fresh quota's 10 s

    def rate(side: str) -> float | None:
        name = "minikafka_replication_throttled_bytes_per_second"
        return metrics.registry.get_sample_value(name, {"side": side})

    assert rate("leader") == pytest.approx(5000)
    assert rate("follower") == 0
