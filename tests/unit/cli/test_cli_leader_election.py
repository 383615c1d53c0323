"""minikafka leader-election's flags, JSON file and output (Kafka's tool's wording), and
topics' under-min-ISR rule."""

from __future__ import annotations

import argparse
import io

import pytest

from client import ElectionResult
from client.cluster_view import PartitionInfo
from protocol import ErrorCode
from tools import leader_election as le
from tools.command import CommandError
from tools.main import build_parser
from tools.topics import is_under_min_isr, min_insync_replicas


def args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["leader-election", "--bootstrap-server", "h:1", *argv])


def test_the_partitions_chosen_by_the_flags() -> None:
    assert (
        le.chosen_partitions(args("--election-type", "preferred", "--all-topic-partitions")) is None
    )
    chosen = le.chosen_partitions(
        args("--election-type", "UNCLEAN", "--topic", "t", "--partition", "3")
    )
    assert chosen == [("t", 3)]
    with pytest.raises(CommandError, match="One and only one"):
        le.chosen_partitions(args("--election-type", "preferred"))
    with pytest.raises(CommandError, match="One and only one"):
        le.chosen_partitions(
            args("--election-type", "preferred", "--topic", "t", "--all-topic-partitions")
        )
    with pytest.raises(CommandError, match=r"\[partition\]"):
        le.chosen_partitions(args("--election-type", "preferred", "--topic", "t"))


def test_the_json_file() -> None:
    text = '{"partitions": [{"topic": "a", "partition": 1}, {"topic": "b", "partition": 0}]}'
    assert le.parse_json_partitions(text) == [("a", 1), ("b", 0)]
    with pytest.raises(CommandError, match="duplicate partitions: a-1"):
        le.parse_json_partitions(
            '{"partitions": [{"topic": "a", "partition": 1}, {"topic": "a", "partition": 1}]}'
        )
    for bad in ("[]", "{}", '{"partitions": [{"topic": "a"}]}', "not json"):
        with pytest.raises(CommandError, match="not valid"):
            le.parse_json_partitions(bad)


def test_the_report_reads_like_kafkas() -> None:
    out = io.StringIO()
    failed = le.report(
        "preferred",
        [
            ElectionResult("t", 1, ErrorCode.NONE),
            ElectionResult("t", 0, ErrorCode.NONE),
            ElectionResult("u", 0, ErrorCode.ELECTION_NOT_NEEDED),
            ElectionResult("v", 2, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "not in the ISR"),
        ],
        out,
    )
    assert failed == 1
    assert out.getvalue().splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions t-0, t-1",
        "Valid replica already elected for partitions u-0",
        "Error completing leader election (PREFERRED) for partition: v-2: "
        "PREFERRED_LEADER_NOT_AVAILABLE: not in the ISR",
    ]


def partition(leader: int, isr: list[int]) -> PartitionInfo:
    return PartitionInfo(0, leader, 3, (1, 2, 3), tuple(isr))


@pytest.mark.parametrize(
    ("leader", "isr", "min_isr", "under"),
    [
        (1, [1, 2], 2, False),
        (1, [1], 2, True),
        (-1, [1, 2, 3], 2, True),  # no leader: under whatever the ISR says
        (1, [1], None, False),  # configs unknown: only a missing leader counts
    ],
)
def test_under_min_isr(leader: int, isr: list[int], min_isr: int | None, under: bool) -> None:
    assert is_under_min_isr(partition(leader, isr), min_isr) is under


def test_min_insync_replicas_from_the_described_configs() -> None:
    from client.admin import ConfigEntry

    assert min_insync_replicas(None) is None
    entries = [
        ConfigEntry("retention.ms", "1", 5, False, False),
        ConfigEntry("min.insync.replicas", "2", 5, False, False),
    ]
    assert min_insync_replicas(entries) == 2
