"""Public entry points: requests/responses round trip, headers, the ApiVersions exception."""

from __future__ import annotations

import struct

import pytest

import protocol
from protocol import ApiKey, ErrorCode, ProtocolError, api
from protocol.api import api_name
from protocol.codec import received_records
from protocol.messages import (
    ApiVersionsResponse,
    FetchResponse,
    MetadataRequest,
    ProduceRequest,
    ProduceResponse,
)


def _produce(version: int, records: bytes) -> protocol.Request:
    body = ProduceRequest(
        acks=-1,
        timeout_ms=1500,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)],
            )
        ],
    )
    return protocol.make_request(ApiKey.PRODUCE, version, 42, "client-1", body)


@pytest.mark.parametrize("version", range(0, 10))
def test_produce_request_round_trips_every_version(version: int) -> None:
    request = _produce(version, b"batch-bytes")
    frame = protocol.encode_request(request)
    decoded = protocol.decode_request(frame)
    assert decoded == request
    assert decoded.header.api_key == ApiKey.PRODUCE
    assert decoded.header.correlation_id == 42
    assert protocol.encode_request(decoded) == frame


def test_records_decode_as_a_zero_copy_view_of_the_frame() -> None:
    frame = protocol.encode_request(_produce(9, b"\x01" * 1_000_000))
    records = protocol.decode_request(frame).body.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview)
    assert records.obj is frame  # a slice of the caller's frame, not a copy
    assert len(records) == 1_000_000


def test_request_header_v2_exactly_when_flexible() -> None:
    assert protocol.request_header_version(ApiKey.PRODUCE, 8) == 1
    assert protocol.request_header_version(ApiKey.PRODUCE, 9) == 2
    assert protocol.request_header_version(ApiKey.METADATA, 9) == 2
    assert protocol.request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 0) == 0
    # client id stays a classic int16 string in header v2; then one empty tag section.
    frame = protocol.encode_request(protocol.make_request(3, 12, 7, "ab", MetadataRequest()))
    assert frame[:12] == struct.pack(">hhih", 3, 12, 7, 2) + b"ab"
    assert frame[12] == 0  # header tagged fields: none


def test_response_header_versions_and_api_versions_exception() -> None:
    assert protocol.response_header_version(ApiKey.METADATA, 9) == 1
    assert protocol.response_header_version(ApiKey.METADATA, 8) == 0
    assert protocol.response_header_version(ApiKey.API_VERSIONS, 3) == 0
    resp = protocol.make_response(
        protocol.RequestHeader(api_key=18, api_version=3, correlation_id=9),
        ApiVersionsResponse(error_code=0),
    )
    frame = protocol.encode_response(resp)
    # header v0: correlation id only, then the flexible body starting with error_code
    assert frame[:6] == struct.pack(">ih", 9, 0)
    assert protocol.decode_response(frame, 18, 3) == resp


def test_header_versions_outside_the_declared_versions_follow_the_rule() -> None:
    # the common versions are tabulated; the rest (a client probing above our range, an
    # unknown key) must still get the answer the rule gives
    assert protocol.request_header_version(ApiKey.API_VERSIONS, 99) == 2  # flexible "3+"
    assert protocol.request_header_version(9999, 0) == 1
    assert protocol.response_header_version(ApiKey.METADATA, 99) == 1
    assert protocol.response_header_version(ApiKey.API_VERSIONS, 99) == 0
    assert protocol.response_header_version(9999, 0) == 0


def test_tabulated_header_versions_match_the_rule_for_every_key_and_version() -> None:
    for key in range(-1, 80):
        for version in range(-1, 40):
            assert protocol.request_header_version(key, version) == (
                api._request_header_version(key, version)
            )
            assert protocol.response_header_version(key, version) == (
                api._response_header_version(key, version)
            )


def test_api_versions_above_max_decodes_from_header_alone() -> None:
    header = struct.pack(">hhih", 18, 99, 1234, 3) + b"cli" + b"\x00"
    request = protocol.decode_request(header + b"\x07garbage")
    assert request.body is None
    assert request.header.correlation_id == 1234
    response = protocol.api_versions_fallback_response(request.header)
    assert response.api_version == 0
    decoded = protocol.decode_response(protocol.encode_response(response), 18, 0)
    assert decoded.body.error_code == ErrorCode.UNSUPPORTED_VERSION
    listed = {k.api_key: (k.min_version, k.max_version) for k in decoded.body.api_keys}
    assert listed == protocol.SUPPORTED_VERSIONS


def test_a_v0_fallback_answer_to_a_newer_api_versions_request_is_read_as_v0() -> None:
    header = protocol.RequestHeader(api_key=18, api_version=9, correlation_id=4)
    frame = protocol.encode_response(protocol.api_versions_fallback_response(header))
    response = protocol.decode_response(frame, 18, 3)  # what a client that sent v3 does
    assert response.api_version == 0
    assert response.body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert len(response.body.api_keys) == len(protocol.SUPPORTED_VERSIONS)


def test_unsupported_version_carries_the_header() -> None:
    frame = struct.pack(">hhih", ApiKey.FETCH, 13, 77, -1)
    with pytest.raises(ProtocolError) as info:
        protocol.decode_request(frame + b"\x00" * 40)
    assert info.value.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert info.value.header.correlation_id == 77
    assert info.value.header.client_id is None


def test_unknown_api_key_carries_the_header() -> None:
    frame = struct.pack(">hhih", 999, 0, 5, 1) + b"x"
    with pytest.raises(ProtocolError) as info:
        protocol.decode_request(frame)
    assert info.value.error_code == ErrorCode.INVALID_REQUEST
    assert info.value.header.correlation_id == 5


def test_malformed_body_error_carries_the_header() -> None:
    frame = protocol.encode_request(_produce(7, b"abc"))
    with pytest.raises(ProtocolError) as info:
        protocol.decode_request(frame[:-2])
    assert info.value.error_code == ErrorCode.INVALID_REQUEST
    assert info.value.header.correlation_id == 42


def test_trailing_bytes_are_ignored_as_kafka_does() -> None:
    # librdkafka's Metadata v9+ "all topics": an int32 0 where a compact null array (one
    # byte 0) belongs. Kafka reads null topics, auto-create false, no tags, 3 bytes left.
    header = struct.pack(">hhih", 3, 12, 4, 1) + b"c" + b"\x00"
    frame = header + b"\x00\x00\x00\x00" + b"\x01\x00\x00"
    request = protocol.decode_request(frame)
    assert request.body.topics is None
    assert request.body.allow_auto_topic_creation is False
    assert protocol.encode_request(request) == frame[:-3]


class _Region:
    """Stands in for storage.FileRegion: has a length, is not bytes."""

    def __len__(self) -> int:
        return 5000


def test_encode_response_parts_keeps_external_records_apart() -> None:
    plain = protocol.Response(protocol.ResponseHeader(correlation_id=1), ProduceResponse(), 0, 9)
    assert protocol.encode_response_parts(plain) == [protocol.encode_response(plain)]
    region = _Region()
    fetch = FetchResponse(
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="t",
                partitions=[
                    FetchResponse.PartitionData(records=region),
                    FetchResponse.PartitionData(partition_index=1, records=b"small"),
                ],
            )
        ]
    )
    response = protocol.Response(protocol.ResponseHeader(correlation_id=3), fetch, 1, 12)
    parts = protocol.encode_response_parts(response)
    assert len(parts) == 3
    assert isinstance(parts[0], bytes) and parts[1] is region and isinstance(parts[2], bytes)
    with pytest.raises(ProtocolError):
        protocol.encode_response(response)
    # The pieces are the real frame once the region's bytes are put in place.
    fetch.responses[0].partitions[0].records = b"r" * 5000
    assert parts[0] + b"r" * 5000 + parts[2] == protocol.encode_response(response)


def test_api_versions_above_max_with_an_unreadable_header_tail() -> None:
    # A future client's header v2 whose tagged section we cannot read: its v1 part
    # (key, version, correlation id, client id) still answers it.
    frame = struct.pack(">hhih", 18, 42, 99, 2) + b"kp" + b"\x05\xff\xff"
    request = protocol.decode_request(frame)
    assert request.body is None
    assert (request.header.correlation_id, request.header.client_id) == (99, "kp")


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_decode_request_accepts_any_bytes_like(kind: type) -> None:
    frame = protocol.encode_request(_produce(8, b"xyz"))
    request = protocol.decode_request(kind(frame))
    assert bytes(request.body.topic_data[0].partition_data[0].records) == b"xyz"


def test_encoding_a_value_that_does_not_fit_is_a_protocol_error() -> None:
    body = ProduceRequest(acks=1 << 20)  # acks is an int16
    with pytest.raises(ProtocolError) as info:
        protocol.encode_request(protocol.make_request(0, 9, 1, None, body))
    assert info.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    with pytest.raises(ProtocolError):  # a non-nullable string given None
        protocol.encode_request(
            protocol.make_request(
                0,
                9,
                1,
                None,
                ProduceRequest(topic_data=[ProduceRequest.TopicProduceData(name=None)]),  # type: ignore[arg-type]
            )
        )
    fixed = ProduceRequest(topic_data=[ProduceRequest.TopicProduceData(name="t")])
    assert (
        protocol.decode_request(
            protocol.encode_request(protocol.make_request(0, 9, 1, None, fixed))
        ).body
        == fixed
    )


def test_declared_but_unserved_api_is_unsupported_version() -> None:
    alter_partition = 56  # declared by the specs, served by no handler (KRaft's)
    frame = struct.pack(">hhih", alter_partition, 0, 8, -1) + b"\x00\x00\x00\x00"
    with pytest.raises(ProtocolError) as info:
        protocol.decode_request(frame)
    assert info.value.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert info.value.header.correlation_id == 8


@pytest.mark.parametrize("key", list(ApiKey))
def test_api_name_is_kafkas_spelling_of_every_key(key: ApiKey) -> None:
    camel = "".join(word.capitalize() for word in key.name.split("_"))
    assert api_name(key) == camel


def test_api_name_of_an_unknown_key() -> None:
    assert api_name(9999) == "9999"
    assert api_name(9999, unknown="Unknown(9999)") == "Unknown(9999)"


def test_decoded_records_are_bytes_like() -> None:
    decoded = protocol.decode_request(protocol.encode_request(_produce(9, b"batch-bytes")))
    records = decoded.body.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview)
    assert received_records(records) is records
    assert received_records(None) is None
    with pytest.raises(TypeError):
        received_records(_Region())
