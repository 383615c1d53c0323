"""``minikafka reassign-partitions``' pure parts: Kafka's JSON files read and written, the
proposal of --generate, and the status lines of --verify and --list."""

from __future__ import annotations

import json
import random

import pytest

from client import OngoingReassignment
from protocol.values import TopicPartition
from tools.command import CommandError
from tools.reassign_partitions import (
    format_reassignment,
    list_lines,
    parse_broker_list,
    parse_reassignment,
    parse_topics_to_move,
    propose,
    verify_lines,
)

TP = TopicPartition


def test_reassignment_file_round_trips_in_kafkas_shape() -> None:
    plan = {TP("b", 0): [3, 1], TP("a", 1): [2], TP("a", 0): [1, 2]}
    text = format_reassignment(plan)
    assert json.loads(text) == {
        "version": 1,
        "partitions": [
            {"topic": "a", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]},
            {"topic": "a", "partition": 1, "replicas": [2], "log_dirs": ["any"]},
            {"topic": "b", "partition": 0, "replicas": [3, 1], "log_dirs": ["any", "any"]},
        ],
    }
    assert parse_reassignment(text) == plan


def test_reassignment_file_without_log_dirs_is_accepted() -> None:
    text = '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3]}]}'
    assert parse_reassignment(text) == {TP("t", 0): [2, 3]}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("nope", "not JSON"),
        ('{"version":2,"partitions":[]}', "unknown version"),
        ('{"version":1,"partitions":[]}', "cannot be empty"),
        ('{"version":1,"partitions":[{"topic":"t","partition":0}]}', "bad partition entry"),
        ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}', "empty"),
        ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}', "Duplicate"),
        (
            '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},'
            '{"topic":"t","partition":0,"replicas":[2]}]}',
            "Duplicate reassignment",
        ),
        (
            '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],'
            '"log_dirs":["/data"]}]}',
            "not supported",
        ),
        (
            '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],'
            '"log_dirs":["any"]}]}',
            "one entry per replica",
        ),
    ],
)
def test_bad_reassignment_files_are_refused(text: str, fragment: str) -> None:
    with pytest.raises(CommandError, match=fragment):
        parse_reassignment(text)


def test_topics_to_move_file() -> None:
    assert parse_topics_to_move('{"version":1,"topics":[{"topic":"a"},{"topic":"b"}]}') == [
        "a",
        "b",
    ]
    with pytest.raises(CommandError, match="duplicate"):
        parse_topics_to_move('{"topics":[{"topic":"a"},{"topic":"a"}]}')
    with pytest.raises(CommandError, match="empty"):
        parse_topics_to_move('{"topics":[]}')


def test_broker_list() -> None:
    assert parse_broker_list("3,1,2") == [3, 1, 2]
    with pytest.raises(CommandError, match="Duplicate"):
        parse_broker_list("1,1")
    with pytest.raises(CommandError):
        parse_broker_list("1,x")


def test_proposal_keeps_each_topics_replication_factor_on_the_listed_brokers() -> None:
    current = {TP("a", p): [0, 1] for p in range(4)} | {TP("b", 0): [2, 0, 1]}
    plan = propose(current, [1, 2, 3], random.Random(7))
    assert set(plan) == set(current)
    for tp, replicas in plan.items():
        assert len(replicas) == len(current[tp])
        assert len(set(replicas)) == len(replicas)
        assert set(replicas) <= {1, 2, 3}
    # leaders spread over the brokers, as at topic creation
    assert len({plan[TP("a", p)][0] for p in range(4)}) == 3


def test_proposal_needs_enough_brokers() -> None:
    with pytest.raises(CommandError, match="larger than available brokers"):
        propose({TP("a", 0): [0, 1, 2]}, [1, 2])


def test_verify_lines() -> None:
    plan = {TP("t", 0): [2, 3], TP("t", 1): [3, 1], TP("t", 2): [1, 2]}
    current = {TP("t", 0): [2, 3], TP("t", 1): [3, 1, 2], TP("t", 2): [2, 1]}
    ongoing = {TP("t", 1): OngoingReassignment((3, 1, 2), (1,), (2,))}
    assert verify_lines(plan, current, ongoing) == [
        "Status of partition reassignment:",
        "Reassignment of partition t-0 is completed.",
        "Reassignment of partition t-1 is still in progress.",
        "There is no active reassignment of partition t-2, but replica set is 2,1 rather than 1,2.",
    ]


def test_list_lines() -> None:
    assert list_lines({}) == ["No partition reassignments found."]
    ongoing = {
        TP("t", 1): OngoingReassignment((3, 1, 2), (3,), (2,)),
        TP("t", 0): OngoingReassignment((1, 2, 3), (), (3,)),
    }
    assert list_lines(ongoing) == [
        "Current partition reassignments:",
        "t-0: replicas: 1,2,3. removing: 3.",
        "t-1: replicas: 3,1,2. adding: 3. removing: 2.",
    ]
