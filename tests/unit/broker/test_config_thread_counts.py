"""The halve-or-double rule of a dynamic pool size (broker.config.thread_counts) and
which broker keys a running broker takes (broker.config.keys)."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig
from broker.config.keys import DYNAMIC_BROKER_KEYS
from broker.config.thread_counts import RESIZABLE_POOL_KEYS, resize_problem, resize_problems


@pytest.mark.parametrize(
    ("current", "new"),
    [(8, 8), (8, 4), (8, 16), (8, 9), (3, 1), (1, 2), (2, 1)],
)
def test_a_size_may_go_to_half_or_double_its_current_value(current: int, new: int) -> None:
    assert resize_problem("num.io.threads", current, new) is None


def test_a_size_below_one_is_refused_naming_the_key() -> None:
    assert resize_problem("num.io.threads", 1, 0) == (
        "Dynamic thread count update validation failed for num.io.threads=0, "
        "value should be at least 1"
    )
    assert resize_problem("log.cleaner.threads", 2, -3) == (
        "Dynamic thread count update validation failed for log.cleaner.threads=-3, "
        "value should be at least 1"
    )


def test_more_than_double_is_refused() -> None:
    assert resize_problem("num.network.threads", 3, 7) == (
        "Dynamic thread count update validation failed for num.network.threads=7, "
        "value should not be greater than double the current value 3"
    )


def test_less_than_half_is_refused() -> None:
    assert resize_problem("num.replica.fetchers", 8, 3) == (
        "Dynamic thread count update validation failed for num.replica.fetchers=3, "
        "value should be at least half the current value 8"
    )


def test_the_rule_compares_the_effective_values_before_and_after() -> None:
    static = BrokerConfig.from_properties({"num.io.threads": "4", "background.threads": "2"})
    # the cluster default quadruples num.io.threads: refused; background.threads doubles
    default = static.with_dynamic(
        default=True, config={"num.io.threads": "16", "background.threads": "4"}
    )
    assert resize_problems(static, default) == [
        "Dynamic thread count update validation failed for num.io.threads=16, "
        "value should not be greater than double the current value 4"
    ]
    # this broker's own value hides the default's: the default changes nothing here
    own = static.with_dynamic(default=False, config={"num.io.threads": "4"})
    assert (
        resize_problems(own, own.with_dynamic(default=True, config={"num.io.threads": "64"})) == []
    )


def test_pool_sizes_cleaner_settings_and_connection_caps_are_dynamic() -> None:
    for key in (
        *RESIZABLE_POOL_KEYS,
        "log.cleaner.io.max.bytes.per.second",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.backoff.ms",
        "max.connections",
        "max.connections.per.ip",
        "max.connections.per.ip.overrides",
    ):
        assert key in DYNAMIC_BROKER_KEYS, key
    for key in ("queued.max.requests", "listeners", "log.dirs", "log.cleaner.enable"):
        assert key not in DYNAMIC_BROKER_KEYS, key
