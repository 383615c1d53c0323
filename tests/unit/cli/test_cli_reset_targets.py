"""The shared offset-reset planner's targets: only the five it knows are accepted (the
tool's flags and the console's kinds are mapped onto them by their callers)."""

from __future__ import annotations

import pytest

from client.offset_reset import TARGETS, ResetError, ResetTarget, plan
from protocol.values import TopicPartition
from tools.offset_reset import TARGETS as FLAG_TARGETS
from web.reset import KINDS


def test_an_unknown_target_is_refused() -> None:
    with pytest.raises(ResetError, match="'to-earliest' is not one of earliest"):
        ResetTarget("to-earliest")


def test_every_flag_and_console_kind_is_a_target() -> None:
    assert set(FLAG_TARGETS.values()) == set(TARGETS) == set(KINDS)


def test_a_plan_is_in_partition_order() -> None:
    b0, a1 = TopicPartition("b", 0), TopicPartition("a", 1)
    bounds = {b0: 3, a1: 4}
    new = plan(ResetTarget("earliest"), [b0, a1], earliest=bounds, latest=bounds, committed={})
    assert list(new) == [a1, b0]
