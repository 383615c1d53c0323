"""Flexible versions (KIP-482): compact encodings, known and unknown tagged fields."""

from __future__ import annotations

import struct

import pytest

import protocol
from protocol.errors import ProtocolError
from protocol.messages import ApiVersionsRequest, FetchResponse, MetadataRequest


def _api_versions_v3(body: bytes, header_tags: bytes = b"\x00") -> bytes:
    return struct.pack(">hhih", 18, 3, 11, 3) + b"cli" + header_tags + body


def test_compact_strings_and_empty_tag_sections_on_the_wire() -> None:
    body = ApiVersionsRequest(client_software_name="kc", client_software_version="1.0")
    frame = protocol.encode_request(protocol.make_request(18, 3, 11, "cli", body))
    # compact string = uvarint(len + 1) + bytes; then the body's empty tagged section
    assert frame == _api_versions_v3(b"\x03kc" + b"\x041.0" + b"\x00")


def test_unknown_tags_are_kept_at_every_level_and_reencoded_byte_exactly() -> None:
    header_tags = b"\x01" + b"\x05\x02hi"  # one tag (5) of 2 bytes
    body_tags = b"\x02" + b"\x00\x01\x07" + b"\x09\x00"  # tags 0 (1 byte) and 9 (empty)
    frame = _api_versions_v3(b"\x02a\x02b" + body_tags, header_tags)
    request = protocol.decode_request(frame)
    assert request.header.unknown_tags == [(5, b"hi")]
    assert request.body.unknown_tags == [(0, b"\x07"), (9, b"")]
    assert protocol.encode_request(request) == frame


def test_unknown_tags_in_nested_structs() -> None:
    topic = MetadataRequest.MetadataRequestTopic(name="t", unknown_tags=[(3, b"xyz")])
    body = MetadataRequest(topics=[topic], unknown_tags=[(100, b"\x00" * 200)])
    frame = protocol.encode_request(protocol.make_request(3, 12, 1, None, body))
    decoded = protocol.decode_request(frame)
    assert decoded.body.topics[0].unknown_tags == [(3, b"xyz")]
    assert decoded.body.unknown_tags == [(100, b"\x00" * 200)]
    assert protocol.encode_request(decoded) == frame


def _fetch_response(partition: FetchResponse.PartitionData) -> protocol.Response:
    topic = FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])
    return protocol.Response(
        protocol.ResponseHeader(correlation_id=1), FetchResponse(responses=[topic]), 1, 12
    )


def test_known_tagged_field_written_only_when_not_default() -> None:
    plain = protocol.encode_response(_fetch_response(FetchResponse.PartitionData(records=b"")))
    leader = FetchResponse.LeaderIdAndEpoch(leader_id=3, leader_epoch=7)
    tagged = protocol.encode_response(
        _fetch_response(FetchResponse.PartitionData(records=b"", current_leader=leader))
    )
    # tag 1, size 9 (two int32 + the struct's own empty tag section), then the struct
    assert len(tagged) - len(plain) == 2 + 9
    assert b"\x01\x01\x09" + struct.pack(">ii", 3, 7) + b"\x00" in tagged
    decoded = protocol.decode_response(tagged, 1, 12)
    assert decoded.body.responses[0].partitions[0].current_leader == leader


def test_tagged_field_is_inline_field_in_older_versions_only_if_declared_so() -> None:
    # ProduceResponse v9 is flexible but CurrentLeader exists from v10: not on the wire.
    from protocol.messages import ProduceResponse

    leader = ProduceResponse.LeaderIdAndEpoch(leader_id=3, leader_epoch=7)
    part = ProduceResponse.PartitionProduceResponse(index=0, current_leader=leader)
    body = ProduceResponse(
        responses=[ProduceResponse.TopicProduceResponse(name="t", partition_responses=[part])]
    )
    header = protocol.ResponseHeader(correlation_id=1)
    v9 = protocol.decode_response(
        protocol.encode_response(protocol.Response(header, body, 0, 9)), 0, 9
    )
    assert v9.body.responses[0].partition_responses[0].current_leader.leader_id == -1
    v10 = protocol.decode_response(
        protocol.encode_response(protocol.Response(header, body, 0, 10)), 0, 10
    )
    assert v10.body.responses[0].partition_responses[0].current_leader == leader


@pytest.mark.parametrize(
    "body_tags",
    [
        b"\x02\x09\x00\x03\x00",  # tags out of order
        b"\x02\x03\x00\x03\x00",  # duplicate tag
        b"\x01\x03\x05ab",  # tag size beyond the frame
        b"\x05\x03\x00",  # more tags announced than present
    ],
)
def test_malformed_tag_sections_are_refused(body_tags: bytes) -> None:
    with pytest.raises(ProtocolError):
        protocol.decode_request(_api_versions_v3(b"\x02a\x02b" + body_tags))


def test_known_tag_whose_value_does_not_fill_its_size_is_refused() -> None:
    # FetchResponse v12 partition tag 1 (CurrentLeader) declared 12 bytes but holds 9.
    good = protocol.encode_response(
        _fetch_response(
            FetchResponse.PartitionData(
                records=b"", current_leader=FetchResponse.LeaderIdAndEpoch(leader_id=1)
            )
        )
    )
    bad = good.replace(b"\x01\x01\x09", b"\x01\x01\x0c")
    with pytest.raises(ProtocolError):
        protocol.decode_response(bad, 1, 12)
