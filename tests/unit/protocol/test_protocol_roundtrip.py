"""Hypothesis round trips for every message and every supported version.

For requests and responses of every API in SUPPORTED_VERSIONS (whole frames, headers
included), the data records, and the headers: decode(encode(x)) == x and
encode(decode(b)) == b.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import message_strategy

import protocol
from protocol.api import request_message, response_message
from protocol.codec import MESSAGE_INFO

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])

API_VERSIONS = [
    (key, version)
    for key, (lo, hi) in sorted(protocol.SUPPORTED_VERSIONS.items())
    for version in range(lo, hi + 1)
]
DATA = [
    (name, version)
    for name, info in sorted(MESSAGE_INFO.items())
    if info.spec.kind == "data"
    for version in range(info.valid.lo, info.valid.hi + 1)
]


def _id(pair: tuple[Any, int]) -> str:
    key, version = pair
    name = request_message(key).name[: -len("Request")] if isinstance(key, int) else key
    return f"{name}-v{version}"


@pytest.mark.parametrize("key_version", API_VERSIONS, ids=_id)
@SETTINGS
@given(data=st.data())
def test_request_round_trip(key_version: tuple[int, int], data: st.DataObject) -> None:
    key, version = key_version
    body = data.draw(message_strategy(request_message(key), version))
    client_id = data.draw(st.none() | st.text(max_size=8))
    request = protocol.make_request(
        key, version, data.draw(st.integers(-(2**31), 2**31 - 1)), client_id, body
    )
    if protocol.request_header_version(key, version) == 0:
        request.header.client_id = ""  # header v0 has no client id: it decodes as the default
    frame = protocol.encode_request(request)
    decoded = protocol.decode_request(frame)
    assert decoded == request
    assert protocol.encode_request(decoded) == frame


@pytest.mark.parametrize("key_version", API_VERSIONS, ids=_id)
@SETTINGS
@given(data=st.data())
def test_response_round_trip(key_version: tuple[int, int], data: st.DataObject) -> None:
    key, version = key_version
    body = data.draw(message_strategy(response_message(key), version))
    if key == protocol.ApiKey.API_VERSIONS and body.error_code == 35:
        body.error_code = 0  # error 35 marks the v0 fallback body, read as v0 (test_api)
    header = protocol.ResponseHeader(correlation_id=data.draw(st.integers(-(2**31), 2**31 - 1)))
    response = protocol.Response(header, body, key, version)
    frame = protocol.encode_response(response)
    decoded = protocol.decode_response(frame, key, version)
    assert decoded == response
    assert protocol.encode_response(decoded) == frame
    assert b"".join(protocol.encode_response_parts(decoded)) == frame


@pytest.mark.parametrize("name_version", DATA, ids=_id)
@SETTINGS
@given(data=st.data())
def test_data_record_round_trip(name_version: tuple[str, int], data: st.DataObject) -> None:
    name, version = name_version
    value = data.draw(message_strategy(MESSAGE_INFO[name], version))
    encoded = protocol.encode_data(name, version, value)
    assert protocol.data_version(encoded) == version
    decoded = protocol.decode_data(name, encoded)
    assert decoded == value
    assert protocol.encode_data(name, version, decoded) == encoded
