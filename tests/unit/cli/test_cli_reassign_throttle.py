"""What ``reassign-partitions --throttle`` throttles (tools.reassign_throttle): Kafka's
choice of leader-side and follower-side replicas and of brokers."""

from __future__ import annotations

from protocol.values import TopicPartition
from tools.main import build_parser
from tools.reassign_throttle import moves, throttled_brokers, topic_throttles

TP = TopicPartition
LEADER, FOLLOWER = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)


def test_leaders_are_the_current_replicas_followers_the_ones_moving_in() -> None:
    current = {TP("a", 0): [1, 2], TP("a", 1): [2, 3], TP("b", 0): [4]}
    plan = {TP("a", 0): [2, 3], TP("a", 1): [3, 4], TP("b", 0): [5]}
    assert topic_throttles(plan, current) == {
        "a": {LEADER: "0:1,0:2,1:2,1:3", FOLLOWER: "0:3,1:4"},
        "b": {LEADER: "0:4", FOLLOWER: "0:5"},
    }
    assert throttled_brokers(plan, current) == [1, 2, 3, 4, 5]


def test_a_partition_that_stays_put_throttles_its_leaders_only() -> None:
    current = {TP("a", 0): [1, 2]}
    plan = {TP("a", 0): [2, 1]}  # a new order, no new replica
    assert moves(plan, current) == {TP("a", 0): ([1, 2], [])}
    assert topic_throttles(plan, current) == {"a": {LEADER: "0:1,0:2", FOLLOWER: ""}}


def test_the_flags_parse() -> None:
    args = build_parser().parse_args(
        ["reassign-partitions", "--bootstrap-server", "h:1", "--execute", "--throttle", "5"]
    )
    assert args.throttle == 5 and not args.preserve_throttles
    args = build_parser().parse_args(
        ["reassign-partitions", "--bootstrap-server", "h:1", "--verify", "--preserve-throttles"]
    )
    assert args.throttle == -1 and args.preserve_throttles
