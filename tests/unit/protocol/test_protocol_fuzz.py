"""Fuzzing decode_request: random bytes, random bodies behind valid headers, and mutated
valid frames. Nothing but ProtocolError may escape, and whatever decodes re-encodes."""

from __future__ import annotations

import os
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import message_strategy

import protocol
from protocol.api import request_message
from protocol.errors import ProtocolError

# PROTOCOL_FUZZ_EXAMPLES=20000 for a deep run; the default keeps the suite fast.
SETTINGS = settings(
    max_examples=int(os.environ.get("PROTOCOL_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

KEY_VERSIONS = [
    (key, version)
    for key, (lo, hi) in sorted(protocol.SUPPORTED_VERSIONS.items())
    for version in range(lo, hi + 1)
]


def _decode_or_refuse(frame: bytes) -> None:
    try:
        request = protocol.decode_request(frame)
    except ProtocolError:
        return
    if request.body is not None:
        protocol.encode_request(request)  # what decodes must encode again


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes(frame: bytes) -> None:
    _decode_or_refuse(frame)


@SETTINGS
@given(st.sampled_from(KEY_VERSIONS), st.integers(-1, 40), st.binary(max_size=200))
def test_random_bodies_behind_valid_headers(
    key_version: tuple[int, int], client_id_length: int, rest: bytes
) -> None:
    key, version = key_version
    frame = struct.pack(">hhih", key, version, 1, client_id_length) + rest
    _decode_or_refuse(frame)


@st.composite
def valid_frames(draw: st.DrawFn) -> bytes:
    key, version = draw(st.sampled_from(KEY_VERSIONS))
    body = draw(message_strategy(request_message(key), version))
    return protocol.encode_request(protocol.make_request(key, version, 7, "fuzz", body))


@SETTINGS
@given(valid_frames(), st.data())
def test_mutated_valid_frames(frame: bytes, data: st.DataObject) -> None:
    mutated = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        how = data.draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        at = data.draw(st.integers(0, max(len(mutated) - 1, 0)))
        if how == "flip" and mutated:
            mutated[at] = data.draw(st.integers(0, 255))
        elif how == "truncate":
            del mutated[at:]
        elif how == "insert":
            mutated[at:at] = data.draw(st.binary(min_size=1, max_size=6))
        elif mutated:
            del mutated[at]
    _decode_or_refuse(bytes(mutated))


def test_array_count_of_two_billion_fails_fast() -> None:
    # Metadata v1: header, then topics as int32 count: claim 2**31-1 topics in 8 bytes.
    frame = struct.pack(">hhih", 3, 1, 1, -1) + struct.pack(">i", 2**31 - 1) + b"\x00" * 8
    try:
        protocol.decode_request(frame)
    except ProtocolError as e:
        assert e.header is not None and e.header.correlation_id == 1
    else:
        raise AssertionError("decoded an impossible array")
