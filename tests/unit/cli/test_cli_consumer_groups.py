"""``minikafka consumer-groups``: its arguments and Kafka's tables."""

from __future__ import annotations

import pytest

from client.assignors import MemberAssignment
from client.cluster_view import BrokerNode
from client.group_admin import GroupDescription, MemberDescription
from protocol.values import TopicPartition
from tools.consumer_groups import (
    format_assignment,
    format_members,
    format_offsets,
    format_reset,
    format_state,
    format_table,
    offset_rows,
    state_notice,
)
from tools.main import build_parser

M1 = MemberDescription(
    "consumer-1-aaa", None, "consumer-1", "127.0.0.1", MemberAssignment({"t": [0, 1]})
)
M2 = MemberDescription(
    "consumer-2-bbb", "static-2", "consumer-2", "127.0.0.2", MemberAssignment({"t": [2]})
)


def _group(state: str = "Stable", *members: MemberDescription) -> GroupDescription:
    return GroupDescription(
        "g", state, "consumer", "range", members, BrokerNode(2, "127.0.0.1", 9093)
    )


def test_the_parser_knows_the_subcommand_and_its_actions() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["consumer-groups", "--bootstrap-server", "h:1", "--describe", "--group", "g", "--members"]
    )
    assert args.describe and args.members and args.group == ["g"]
    args = parser.parse_args(
        ["consumer-groups", "--bootstrap-server", "h:1", "--reset-offsets", "--group", "g",
         "--topic", "t:0,1", "--shift-by", "-2", "--execute"]
    )  # fmt: skip
    assert args.reset_offsets and args.shift_by == "-2" and args.topic == ["t:0,1"]
    for bad in (
        ["--list", "--describe"],
        ["--describe", "--members", "--state"],
        ["--reset-offsets", "--dry-run", "--execute"],
        [],
    ):
        with pytest.raises(SystemExit):
            parser.parse_args(["consumer-groups", "--bootstrap-server", "h:1", *bad])


def test_a_table_is_as_wide_as_its_cells_with_a_blank_line_first() -> None:
    text = format_table(("A", "BB", "C"), [("xyz", "1", "last"), ("", "22", "")], min_width=2)
    assert text.split("\n") == ["", "A   BB C", "xyz 1  last", "    22"]


def test_offsets_rows_join_commits_with_assignments_and_show_the_lag() -> None:
    committed = {TopicPartition("t", 0): 5, TopicPartition("t", 3): 9}
    log_ends = {TopicPartition("t", p): 10 for p in range(4)}
    rows = offset_rows(_group("Stable", M1, M2), committed, log_ends)
    assert [(r.partition, r.current, r.log_end, r.lag, r.consumer_id) for r in rows] == [
        (0, 5, 10, 5, "consumer-1-aaa"),
        (1, None, 10, None, "consumer-1-aaa"),
        (2, None, 10, None, "consumer-2-bbb"),
        (3, 9, 10, 1, None),
    ]
    lines = format_offsets("g", rows).split("\n")
    assert lines[0] == ""
    assert lines[1].split() == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "CONSUMER-ID", "HOST", "CLIENT-ID",
    ]  # fmt: skip
    assert lines[2].split() == ["g", "t", "0", "5", "10", "5", "consumer-1-aaa", "127.0.0.1",
                                "consumer-1"]  # fmt: skip
    assert lines[5].split() == ["g", "t", "3", "9", "10", "1", "-", "-", "-"]
    # columns line up: every row's LAG starts where the header's does
    at = lines[1].index("LAG")
    assert all(line[at - 1] == " " and line[at] != " " for line in lines[2:])


def test_members_view_counts_partitions_and_verbose_lists_them() -> None:
    lines = format_members(_group("Stable", M2, M1), verbose=False).split("\n")
    assert lines[1].split() == [
        "GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"
    ]  # fmt: skip
    assert lines[2].split() == ["g", "consumer-1-aaa", "-", "127.0.0.1", "consumer-1", "2"]
    assert lines[3].split() == ["g", "consumer-2-bbb", "static-2", "127.0.0.2", "consumer-2", "1"]
    verbose = format_members(_group("Stable", M1), verbose=True).split("\n")
    assert verbose[1].split()[-1] == "ASSIGNMENT"
    assert verbose[2].split()[-1] == "t(0,1)"
    assert format_assignment({"b": [3], "a": [1, 0]}) == "a(0,1),b(3)"
    assert format_assignment({}) == "-"


def test_state_view_names_the_coordinator_and_strategy() -> None:
    lines = format_state(_group("Stable", M1, M2)).split("\n")
    assert lines[1].startswith("GROUP")
    assert "COORDINATOR (ID)" in lines[1] and "ASSIGNMENT-STRATEGY" in lines[1]
    assert lines[2].split() == ["g", "127.0.0.1:9093", "(2)", "range", "Stable", "2"]


def test_kafkas_notices_for_empty_dead_and_rebalancing_groups() -> None:
    assert state_notice(_group("Empty")) == "Consumer group 'g' has no active members."
    assert state_notice(_group("Dead")) == "Consumer group 'g' does not exist."
    assert state_notice(_group("PreparingRebalance")) == (
        "Warning: Consumer group 'g' is rebalancing."
    )
    assert state_notice(_group("Stable", M1)) is None


def test_only_empty_and_dead_groups_count_as_inactive() -> None:
    assert not _group("Empty").is_active
    assert not _group("Dead").is_active
    assert _group("Stable", M1).is_active
    assert _group("CompletingRebalance", M1).is_active


def test_reset_table() -> None:
    lines = format_reset("g", {TopicPartition("t", 1): 0, TopicPartition("t", 0): 4}).split("\n")
    assert [line.split() for line in lines[1:]] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
        ["g", "t", "0", "4"],
        ["g", "t", "1", "0"],
    ]
