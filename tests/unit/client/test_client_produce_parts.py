"""Produce helpers: Kafka's murmur2 partitioner, acks spellings, reading responses."""

from __future__ import annotations

import pytest

from client.errors import KafkaError
from client.produce import murmur2, parse_acks, partition_for_key, read_produce_response
from protocol import ErrorCode
from protocol.messages import ProduceResponse

# Values Kafka's own Java murmur2 gives for these keys (its utility tests list them).
KNOWN = {
    "21": -973932308,
    "foobar": -790332482,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    "abc": 479470107,
}


@pytest.mark.parametrize(("key", "expected"), sorted(KNOWN.items()))
def test_murmur2_matches_kafka(key: str, expected: int) -> None:
    assert murmur2(key.encode()) == expected


def test_partition_for_key_is_positive_modulo() -> None:
    assert partition_for_key(b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7
    assert {partition_for_key(b"same", 5) for _ in range(3)} == {partition_for_key(b"same", 5)}


def test_parse_acks() -> None:
    assert [parse_acks(a) for a in ("all", "ALL", "-1", "0", "1", 1)] == [-1, -1, -1, 0, 1, 1]
    with pytest.raises(ValueError):
        parse_acks("2")


def response(error: int) -> object:
    part = ProduceResponse.PartitionProduceResponse(index=3, error_code=error, base_offset=42)
    topic = ProduceResponse.TopicProduceResponse(name="t", partition_responses=[part])
    return ProduceResponse(responses=[topic])


def test_read_produce_response() -> None:
    assert read_produce_response(response(0), "t", 3).base_offset == 42
    with pytest.raises(KafkaError) as info:
        read_produce_response(response(ErrorCode.NOT_LEADER_OR_FOLLOWER), "t", 3)
    assert info.value.retriable and info.value.name == "NOT_LEADER_OR_FOLLOWER"
    with pytest.raises(KafkaError, match="no result"):
        read_produce_response(response(0), "t", 4)
