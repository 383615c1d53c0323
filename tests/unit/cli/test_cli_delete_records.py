"""minikafka delete-records: Kafka's offsets file (version 1, duplicates refused) and its
output lines."""

from __future__ import annotations

import pytest

from client import DeleteRecordsResult
from protocol import ErrorCode
from protocol.values import TopicPartition
from tools import delete_records as dr
from tools.command import CommandError
from tools.main import build_parser


def test_the_offsets_file_of_kafka_s_tool() -> None:
    text = '{"partitions": [{"topic": "t", "partition": 0, "offset": 5},' \
        ' {"topic": "t", "partition": 1, "offset": -1}], "version": 1}'  # fmt: skip
    assert dr.parse_offsets(text) == {TopicPartition("t", 0): 5, TopicPartition("t", 1): -1}
    # no version field: the first (and only) version
    assert dr.parse_offsets('{"partitions": []}') == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not a valid JSON"),
        ("[1]", "not a valid JSON"),
        ('{"partitions": [], "version": 2}', "Not supported version field value 2"),
        ('{"version": 1}', "Missing partitions field"),
        ('{"partitions": [{"topic": "t", "partition": 0}]}', "offsets file is not valid"),
        (
            '{"partitions": [{"topic": "t", "partition": 0, "offset": 1},'
            ' {"topic": "t", "partition": 0, "offset": 2}]}',
            "duplicate topic partitions: t-0",
        ),
    ],
)
def test_bad_offsets_files_are_refused(text: str, message: str) -> None:
    with pytest.raises(CommandError, match=message):
        dr.parse_offsets(text)


def test_one_line_a_partition_as_kafka_prints_it() -> None:
    assert dr.result_line(DeleteRecordsResult("t", 0, 5)) == "partition: t-0\tlow_watermark: 5"
    failed = DeleteRecordsResult("t", 1, -1, ErrorCode.OFFSET_OUT_OF_RANGE)
    assert dr.result_line(failed) == "partition: t-1\terror: OFFSET_OUT_OF_RANGE"


def test_the_subcommand_is_registered_with_kafka_s_flags() -> None:
    args = build_parser().parse_args(
        ["delete-records", "--bootstrap-server", "h:1", "--offset-json-file", "f.json"]
    )
    assert args._module == "delete_records"
    assert str(args.offset_json_file) == "f.json" and args.timeout_ms == 30_000
