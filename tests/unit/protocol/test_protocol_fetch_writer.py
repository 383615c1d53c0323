"""The lean Fetch response writer lays out exactly what the generic encoder does."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import protocol
from protocol import ApiKey
from protocol.fetch_writer import VERSIONS, PartitionAnswer, fetch_response_parts
from protocol.messages import FetchResponse, ResponseHeader


@dataclass(frozen=True, slots=True)
class Region:
    """Stands for a file region: a sized piece the encoders must pass through untouched."""

    name: str
    length: int

    def __len__(self) -> int:
        return self.length


def generic_parts(
    correlation_id: int,
    version: int,
    topics: list[tuple[str, list[PartitionAnswer]]],
    read_committed: bool,
) -> list[object]:
    body = FetchResponse(
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic=name,
                partitions=[
                    FetchResponse.PartitionData(
                        partition_index=index,
                        error_code=error,
                        high_watermark=hwm,
                        last_stable_offset=lso,
                        log_start_offset=start,
                        aborted_transactions=[] if read_committed else None,
                        preferred_read_replica=-1,
                        records=b"" if records is None else records,
                    )
                    for index, error, hwm, lso, start, records in partitions
                ],
            )
            for name, partitions in topics
        ],
    )
    response = protocol.Response(
        ResponseHeader(correlation_id=correlation_id), body, ApiKey.FETCH, version
    )
    return protocol.encode_response_parts(response)


CASES: dict[str, list[tuple[str, list[PartitionAnswer]]]] = {
    "one partition, one region": [("events", [(0, 0, 1 << 40, 1 << 40, 7, Region("a", 65536))])],
    "nothing to send": [("events", [(2, 0, 10, 10, 0, None)])],
    "an error": [("t", [(1, 6, -1, -1, -1, None)])],
    "inline bytes": [("t", [(0, 0, 5, 5, 0, b"\x01\x02\x03")])],
    "empty region": [("t", [(0, 0, 5, 5, 0, Region("e", 0))])],
    "regions back to back and a region last": [
        ("alpha", [(0, 0, 3, 3, 0, Region("a", 100)), (1, 0, 4, 4, 1, Region("b", 200))]),
        ("b" * 300, [(7, 0, 9, 9, 2, None), (8, 0, 9, 9, 2, Region("c", 1 << 20))]),
    ],
    "no topics": [],
    "a topic without partitions": [("t", [])],
    "non-ascii name": [("tópico", [(0, 0, 1, 1, 0, None)])],
}


@pytest.mark.parametrize("read_committed", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("version", list(VERSIONS))
def test_pieces_match_the_generic_encoder(version: int, case: str, read_committed: bool) -> None:
    topics = CASES[case]
    lean = fetch_response_parts(0x1234567, version, topics, read_committed)
    assert lean == generic_parts(0x1234567, version, topics, read_committed)
    # the regions are passed on as they are, not copied
    regions = [p for p in lean if isinstance(p, Region)]
    expected = [r for _, ps in topics for *_, r in ps if isinstance(r, Region)]
    assert all(a is b for a, b in zip(regions, expected, strict=True))


def test_many_partitions_need_a_longer_count() -> None:
    """Counts of 127 and up take two varint bytes in the flexible layout."""
    partitions: list[PartitionAnswer] = [(i, 0, i, i, 0, None) for i in range(300)]
    topics = [("t", partitions)]
    for version in VERSIONS:
        assert fetch_response_parts(1, version, topics, False) == generic_parts(
            1, version, topics, False
        )


@pytest.mark.parametrize(
    "length", [126, 127, 128, (1 << 14) - 2, (1 << 14) - 1, (1 << 21) - 2, (1 << 21) - 1, 1 << 24]
)
def test_region_lengths_at_each_varint_width(length: int) -> None:
    """A region's length on each side of the two-, three- and four-byte varints."""
    topics: list[tuple[str, list[PartitionAnswer]]] = [
        ("t", [(0, 0, 1, 1, 0, Region("r", length))])
    ]
    for version in VERSIONS:
        assert fetch_response_parts(3, version, topics, False) == generic_parts(
            3, version, topics, False
        )


def test_topic_names_stay_right_past_the_names_kept() -> None:
    """The written names are kept for the next answers, a bounded number of them."""
    for version in (4, 12):
        for i in range(1100):
            topics: list[tuple[str, list[PartitionAnswer]]] = [(f"topic-{i}", [])]
            assert fetch_response_parts(i, version, topics, False) == generic_parts(
                i, version, topics, False
            )
