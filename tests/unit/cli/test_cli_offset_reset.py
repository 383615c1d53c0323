"""``consumer-groups --reset-offsets``: the reset specs and the new offsets they give."""

from __future__ import annotations

import datetime as dt

import pytest

from client.offset_reset import plan
from protocol.values import TopicPartition
from tools.offset_reset import (
    ResetSpec,
    parse_datetime,
    parse_duration_ms,
    parse_spec,
    parse_topic_partitions,
)

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)
EARLIEST = {A0: 10, A1: 0}
LATEST = {A0: 50, A1: 7}


def _plan(spec: ResetSpec, **kw: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
    return plan(
        spec.target,
        [A1, A0],
        earliest=EARLIEST,
        latest=LATEST,
        committed=kw.get("committed", {A0: 20, A1: 5}),
        by_time=kw.get("by_time"),
    )


def test_earliest_and_latest_are_the_log_bounds() -> None:
    assert _plan(ResetSpec("to-earliest")) == {A0: 10, A1: 0}
    assert _plan(ResetSpec("to-latest")) == {A0: 50, A1: 7}


def test_an_absolute_offset_is_clamped_into_the_log() -> None:
    assert _plan(ResetSpec("to-offset", 5)) == {A0: 10, A1: 5}
    assert _plan(ResetSpec("to-offset", 30)) == {A0: 30, A1: 7}


def test_a_shift_moves_the_committed_offset_within_the_log() -> None:
    assert _plan(ResetSpec("shift-by", -15)) == {A0: 10, A1: 0}
    assert _plan(ResetSpec("shift-by", 2)) == {A0: 22, A1: 7}
    with pytest.raises(ValueError, match="no current committed offset"):
        _plan(ResetSpec("shift-by", 1), committed={A0: 20})


def test_a_time_with_no_record_that_recent_goes_to_the_log_end() -> None:
    assert _plan(ResetSpec("to-datetime", 0), by_time={A0: 12, A1: -1}) == {A0: 12, A1: 7}


def test_exactly_one_spec_is_taken() -> None:
    now = 1_700_000_000_000
    assert parse_spec({"to-earliest": True}, now) == ResetSpec("to-earliest")
    assert parse_spec({"shift-by": "-3", "to-latest": False}, now) == ResetSpec("shift-by", -3)
    assert parse_spec({"by-duration": "PT1M"}, now) == ResetSpec("by-duration", now - 60_000)
    with pytest.raises(ValueError, match="exactly one"):
        parse_spec({}, now)
    with pytest.raises(ValueError, match="given: --to-earliest, --to-latest"):
        parse_spec({"to-earliest": True, "to-latest": True}, now)
    with pytest.raises(ValueError, match="whole number"):
        parse_spec({"to-offset": "ten"}, now)


def test_durations_are_iso_8601() -> None:
    assert parse_duration_ms("P1DT2H3M4.5S") == ((24 + 2) * 3600 + 3 * 60 + 4.5) * 1000
    assert parse_duration_ms("PT30M") == 30 * 60_000
    for bad in ("P", "PT", "1H", "PT-1S", "P1H"):
        with pytest.raises(ValueError, match="duration"):
            parse_duration_ms(bad)


def test_datetimes_with_and_without_a_zone() -> None:
    assert parse_datetime("2024-01-02T03:04:05.678Z") == 1704164645678
    assert parse_datetime("2024-01-02T04:04:05.678+01:00") == 1704164645678
    local = dt.datetime(2024, 1, 2, 3, 4, 5).astimezone()
    assert parse_datetime("2024-01-02T03:04:05") == int(local.timestamp() * 1000)
    with pytest.raises(ValueError, match="timestamp"):
        parse_datetime("yesterday")


def test_topic_with_or_without_partitions() -> None:
    assert parse_topic_partitions("t") == ("t", None)
    assert parse_topic_partitions("t:2,0,2") == ("t", [0, 2])
    for bad in (":1", "t:", "t:x"):
        with pytest.raises(ValueError):
            parse_topic_partitions(bad)
