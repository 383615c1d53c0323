"""The Kafka wire protocol, sans-IO: bytes in, typed messages out, and back.

Public API (what the other packages use):

- ``decode_request(frame) -> Request`` / ``encode_request(request) -> bytes``
- ``decode_response(frame, api_key, api_version) -> Response`` /
  ``encode_response(response) -> bytes`` / ``encode_response_parts(response) -> list``
- ``make_request(...)``, ``make_response(request_header, body)``,
  ``api_versions_fallback_response(header)``
- ``SUPPORTED_VERSIONS``, ``ApiKey``, ``RequestHeader``, ``ResponseHeader``
- ``encode_data(name, version, value)`` / ``decode_data(name, buf)`` for versioned data
  records (consumer protocol, __consumer_offsets)
- ``protocol.messages``: the message classes (``python -m protocol.describe <Message>``
  lists their fields); ``protocol.errors``: ErrorCode, ProtocolError;
  ``protocol.framing.FrameDecoder``; ``protocol.records``: RecordBatch v2.

Layout: ``errors`` and ``primitives`` (wire types), ``schema`` (every message declared as
data, generated from Kafka's JSON specs), ``codec`` (one table-driven codec compiling a
decode and an encode plan per struct and version), ``api`` (headers, versions, the entry
points above), ``data`` (versioned data records), ``framing`` (size-prefixed frames),
``fetch_writer`` (a leader's Fetch answers written directly, the generic encoder's bytes),
``fetch_reader`` (Fetch requests read directly, the generic decoder's objects; the hook
in ``decode_request`` tries it first).
"""

from protocol.api import (
    SUPPORTED_VERSIONS,
    ApiKey,
    Request,
    Response,
    api_versions_fallback_response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_parts,
    make_request,
    make_response,
    request_header_version,
    response_header_version,
)
from protocol.data import data_class, data_version, decode_data, encode_data
from protocol.errors import ErrorCode, ProtocolError, error_name
from protocol.messages import RequestHeader, ResponseHeader

__all__ = [
    "SUPPORTED_VERSIONS",
    "ApiKey",
    "ErrorCode",
    "ProtocolError",
    "Request",
    "RequestHeader",
    "Response",
    "ResponseHeader",
    "api_versions_fallback_response",
    "data_class",
    "data_version",
    "decode_data",
    "decode_request",
    "decode_response",
    "encode_data",
    "encode_request",
    "encode_response",
    "encode_response_parts",
    "error_name",
    "make_request",
    "make_response",
    "request_header_version",
    "response_header_version",
]
