"""The follower's Fetch response reader against the generic decoder, at every version."""

from __future__ import annotations

import struct
from typing import Any

import pytest

import protocol
from broker.replication.fetch_response import VERSIONS, read_fetch_response
from protocol import SUPPORTED_VERSIONS, ApiKey, ProtocolError
from protocol.api import Response
from protocol.messages import FetchResponse, ResponseHeader
from protocol.records import SimpleRecord, build_batch

BATCH = bytes(build_batch([SimpleRecord(b"k", b"v" * 40, (), 1_000)], base_offset=7))
P = FetchResponse.PartitionData
#: (topic, partition, error, high watermark, log start, records) of each partition
Rows = list[tuple[str, int, int, int, int, bytes | None]]


def body() -> FetchResponse:
    """Two topics; partitions with and without records, aborted transactions, an
    error, a preferred replica and tagged fields (diverging epoch, current leader)."""
    return FetchResponse(
        throttle_time_ms=3,
        error_code=0,
        session_id=0,
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="orders",
                partitions=[
                    P(partition_index=0, high_watermark=8, last_stable_offset=8,
                      log_start_offset=2, records=BATCH),
                    P(partition_index=3, error_code=6, high_watermark=-1, records=None),
                    P(partition_index=1, high_watermark=12, log_start_offset=0,
                      aborted_transactions=[FetchResponse.AbortedTransaction(
                          producer_id=5, first_offset=9)],
                      preferred_read_replica=2, records=BATCH + BATCH[:20],
                      diverging_epoch=FetchResponse.EpochEndOffset(epoch=3, end_offset=4),
                      current_leader=FetchResponse.LeaderIdAndEpoch(leader_id=1,
                                                                    leader_epoch=9)),
                ],
            ),
            FetchResponse.FetchableTopicResponse(
                topic="t" * 150,  # a compact length of two varint bytes
                partitions=[P(partition_index=p, high_watermark=p, records=b"") for p in range(3)],
            ),
        ],
    )  # fmt: skip


def frame(version: int, value: FetchResponse, cid: int = 11) -> bytes:
    return protocol.encode_response(
        Response(ResponseHeader(correlation_id=cid), value, ApiKey.FETCH, version)
    )


def view(response: Any) -> tuple[int, Rows]:
    """What the follower uses of a response, from the generic decoder's body or the lean
    reader's result alike (both name their fields as the schema does)."""
    rows = [
        (t.topic, p.partition_index, p.error_code, p.high_watermark, p.log_start_offset,
         None if p.records is None else bytes(p.records))
        for t in response.responses
        for p in t.partitions
    ]  # fmt: skip
    return response.error_code, rows


def generic_view(raw: bytes, version: int) -> tuple[int, Rows]:
    return view(protocol.decode_response(raw, ApiKey.FETCH, version).body)


def lean_view(raw: bytes, version: int) -> tuple[int, Rows]:
    return view(read_fetch_response(raw, version))


def test_every_version_a_follower_may_send_is_read() -> None:
    lo, hi = SUPPORTED_VERSIONS[ApiKey.FETCH]
    assert set(range(lo, hi + 1)) <= set(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_reads_what_the_generic_decoder_reads(version: int) -> None:
    raw = frame(version, body())
    error_code, rows = lean_view(raw, version)
    assert (error_code, rows) == generic_view(raw, version)
    assert len(rows) == 6 and rows[0][-1] == BATCH


@pytest.mark.parametrize("version", [7, 12])
def test_a_request_level_error(version: int) -> None:
    raw = frame(version, FetchResponse(error_code=71, session_id=0, responses=[]))
    assert read_fetch_response(raw, version) == (71, [], 0)


def test_records_are_a_view_of_the_frame_not_a_copy() -> None:
    raw = bytearray(frame(12, body()))
    records = read_fetch_response(raw, 12).responses[0].partitions[0].records
    assert isinstance(records, memoryview) and records.obj is raw


@pytest.mark.parametrize("version", [4, 11, 12])
def test_every_truncation_is_a_protocol_error(version: int) -> None:
    raw = frame(version, body())
    for end in range(len(raw)):
        with pytest.raises(ProtocolError):
            read_fetch_response(raw[:end], version)


@pytest.mark.parametrize("version", [5, 12])
def test_a_records_length_past_the_frame_is_refused(version: int) -> None:
    one = FetchResponse(
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="a", partitions=[P(partition_index=0, records=b"xyz")]
            )
        ]
    )
    raw = bytearray(frame(version, one))
    if version >= 12:  # compact length: 3 + 1, the byte before the records
        raw[len(raw) - 3 - 1 - 3] = 100
    else:
        struct.pack_into(">i", raw, len(raw) - 3 - 4, 100)
    with pytest.raises(ProtocolError):
        read_fetch_response(bytes(raw), version)


def test_a_version_it_does_not_know_is_refused() -> None:
    with pytest.raises(ProtocolError):
        read_fetch_response(frame(12, body()), 13)
