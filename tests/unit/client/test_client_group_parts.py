"""Group membership's pure parts: the reaction to each error, console-consumer settings."""

from __future__ import annotations

import pytest

from client import KafkaClient
from client.group import REACTIONS, GroupConfig, GroupMember, Reaction, reaction
from protocol import ErrorCode
from tools.console_consumer import group_config


def test_rebalance_answers_make_the_member_rejoin() -> None:
    assert reaction(ErrorCode.REBALANCE_IN_PROGRESS) is Reaction.REJOIN
    assert reaction(ErrorCode.ILLEGAL_GENERATION) is Reaction.REJOIN
    assert reaction(ErrorCode.MEMBER_ID_REQUIRED) is Reaction.REJOIN


def test_an_unknown_member_id_is_forgotten_before_rejoining() -> None:
    assert reaction(ErrorCode.UNKNOWN_MEMBER_ID) is Reaction.RESET_AND_REJOIN


def test_coordinator_moves_are_looked_up_again_and_the_rest_fail() -> None:
    for code in (
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ):
        assert reaction(code) is Reaction.FIND_COORDINATOR
    assert reaction(ErrorCode.INCONSISTENT_GROUP_PROTOCOL) is Reaction.FAIL
    assert reaction(ErrorCode.GROUP_AUTHORIZATION_FAILED) is Reaction.FAIL
    assert ErrorCode.NONE not in REACTIONS


def test_console_consumer_reads_kafkas_group_properties() -> None:
    cfg = group_config(
        "g",
        {
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
            "partition.assignment.strategy": "roundrobin, range",
            "group.instance.id": "i-1",
            "fetch.max.wait.ms": "100",
        },
    )
    assert cfg == GroupConfig(
        "g",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        assignors=("roundrobin", "range"),
        group_instance_id="i-1",
    )
    assert group_config("g", {}) == GroupConfig("g")


def test_an_unknown_assignor_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown assignors"):
        GroupMember(KafkaClient("127.0.0.1:1"), GroupConfig("g", assignors=("sticky",)), ["t"])
