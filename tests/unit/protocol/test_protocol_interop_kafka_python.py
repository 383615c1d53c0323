"""Cross-check with an independent codec: kafka-python 3's schema-generated protocol.

For every API and version that both serve, a body encoded by minikafka decodes with
kafka-python and kafka-python encodes it back to the same bytes (unknown tags left out:
kafka-python drops them). Skipped when kafka-python 3's protocol package is absent.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import message_strategy

import protocol
from protocol.api import request_message, response_message
from protocol.codec import encode_struct

api_message = pytest.importorskip("kafka.protocol.api_message")


def _kafka_python_classes() -> dict[tuple[int, str], Any]:
    import kafka.protocol as package

    for module in pkgutil.walk_packages(package.__path__, "kafka.protocol."):
        if "generate" not in module.name:
            importlib.import_module(module.name)
    found: dict[tuple[int, str], Any] = {}
    todo = list(api_message.ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if "_VERSIONS" in cls.__dict__ and hasattr(cls, "API_KEY"):
            kind = "request" if cls.__name__.endswith("Request") else "response"
            found[(cls.API_KEY, kind)] = cls
    return found


THEIRS = _kafka_python_classes()
CASES = [
    (key, version, kind)
    for key, (lo, hi) in sorted(protocol.SUPPORTED_VERSIONS.items())
    for kind in ("request", "response")
    if (key, kind) in THEIRS
    for version in range(lo, hi + 1)
    if THEIRS[(key, kind)]._valid_versions[0] <= version <= THEIRS[(key, kind)]._valid_versions[1]
]


def _id(case: tuple[int, int, str]) -> str:
    key, version, kind = case
    return f"{request_message(key).name.removesuffix('Request')}-{kind}-v{version}"


@pytest.mark.parametrize("case", CASES, ids=_id)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_kafka_python_reads_and_rewrites_our_bytes(
    case: tuple[int, int, str], data: st.DataObject
) -> None:
    key, version, kind = case
    info = request_message(key) if kind == "request" else response_message(key)
    body = data.draw(message_strategy(info, version, unknown_tags=False))
    if key == protocol.ApiKey.API_VERSIONS and kind == "response":
        # kafka-python reads an ApiVersions response with an error as v0 (the
        # UNSUPPORTED_VERSION fallback), whatever version was asked for.
        body.error_code = 0
    out = bytearray()
    parts: list[Any] = []
    encode_struct(info.root, version, body, out, parts)
    ours = b"".join([*parts, out])
    theirs = THEIRS[(key, kind)][version].decode(ours)
    if kind == "request":
        theirs.with_header(correlation_id=0)  # some of its encoders look at the header
    assert theirs.encode() == ours


REQUEST_CASES = [case for case in CASES if case[2] == "request"]


@pytest.mark.parametrize("case", REQUEST_CASES, ids=_id)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_whole_requests_from_kafka_python_decode_byte_exactly(
    case: tuple[int, int, str], data: st.DataObject
) -> None:
    key, version, _ = case
    info = request_message(key)
    body = data.draw(message_strategy(info, version, unknown_tags=False))
    out = bytearray()
    encode_struct(info.root, version, body, out, [])
    theirs = THEIRS[(key, "request")][version].decode(bytes(out))
    theirs.with_header(correlation_id=7, client_id="kafka-python")
    frame = theirs.encode(header=True)
    request = protocol.decode_request(frame)
    assert (request.header.api_key, request.header.api_version) == (key, version)
    assert (request.header.correlation_id, request.header.client_id) == (7, "kafka-python")
    assert request.body == body
    assert protocol.encode_request(request) == frame
