"""Error codes, and the versioned data records (consumer protocol, __consumer_offsets)."""

from __future__ import annotations

import struct

import pytest

import protocol
from protocol.errors import ErrorCode, ProtocolError, error_name
from protocol.messages import ConsumerProtocolSubscription, OffsetCommitKey, OffsetCommitValue


def test_error_codes_are_kafkas_numbers() -> None:
    expected = {
        "UNKNOWN_SERVER_ERROR": -1,
        "NONE": 0,
        "UNKNOWN_TOPIC_OR_PARTITION": 3,
        "NOT_LEADER_OR_FOLLOWER": 6,
        "UNSUPPORTED_VERSION": 35,
        "INVALID_REQUEST": 42,
        "MEMBER_ID_REQUIRED": 79,
        "INVALID_RECORD": 87,
        "UNKNOWN_TOPIC_ID": 100,
    }
    assert {name: int(ErrorCode[name]) for name in expected} == expected
    values = [int(code) for code in ErrorCode]
    assert values == sorted(values) and values == list(range(-1, len(values) - 1))


def test_error_name_names_known_codes_and_never_raises_on_unknown_ones() -> None:
    assert error_name(6) == "NOT_LEADER_OR_FOLLOWER"
    assert error_name(ErrorCode.NONE) == "NONE"
    unknown = max(int(code) for code in ErrorCode) + 1
    assert error_name(unknown) == f"ERROR_{unknown}"
    assert error_name(-99) == "ERROR_-99"


def test_retriable_classification() -> None:
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable
    assert ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.retriable
    assert ErrorCode.NOT_COORDINATOR.retriable
    assert ErrorCode.COORDINATOR_LOAD_IN_PROGRESS.retriable
    assert not ErrorCode.NONE.retriable
    assert not ErrorCode.UNSUPPORTED_VERSION.retriable
    assert not ErrorCode.TOPIC_AUTHORIZATION_FAILED.retriable
    assert not ErrorCode.MEMBER_ID_REQUIRED.retriable


def test_protocol_error_carries_code_message_and_header() -> None:
    error = ProtocolError(ErrorCode.CORRUPT_MESSAGE, "bad", header="h")
    assert (error.error_code, error.message, error.header) == (2, "bad", "h")
    assert "CORRUPT_MESSAGE" in repr(error)


def test_offset_commit_key_and_value_layout() -> None:
    key = protocol.encode_data(
        "OffsetCommitKey", 1, OffsetCommitKey(group="g", topic="t", partition=2)
    )
    # int16 version, then group and topic as int16-length strings, then int32 partition
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + struct.pack(">i", 2)
    assert protocol.decode_data("OffsetCommitKey", key).partition == 2
    value = OffsetCommitValue(offset=10, metadata="", commit_timestamp=5)
    encoded = protocol.encode_data("OffsetCommitValue", 3, value)
    assert protocol.data_version(encoded) == 3
    assert protocol.decode_data("OffsetCommitValue", encoded) == value


def test_newer_consumer_protocol_versions_read_as_the_newest_known() -> None:
    sub = ConsumerProtocolSubscription(topics=["a", "b"], user_data=b"u")
    encoded = bytearray(protocol.encode_data("ConsumerProtocolSubscription", 3, sub))
    encoded[0:2] = struct.pack(">h", 9)  # a future writer
    encoded += b"future fields"
    decoded = protocol.decode_data("ConsumerProtocolSubscription", bytes(encoded))
    assert decoded.topics == ["a", "b"] and decoded.user_data == b"u"


def test_data_record_errors() -> None:
    with pytest.raises(ProtocolError):
        protocol.decode_data("OffsetCommitKey", b"\x00")
    with pytest.raises(ProtocolError):
        protocol.decode_data("OffsetCommitKey", struct.pack(">hh", 0, 50) + b"x")
    with pytest.raises(ProtocolError):
        protocol.decode_data("NoSuchRecord", b"\x00\x00")
    with pytest.raises(ProtocolError):
        protocol.encode_data("OffsetCommitKey", 7, OffsetCommitKey())
