"""Requests and responses: API keys, the supported version matrix, headers, entry points.

A request frame (after its int32 size) is ``header | body``. The header version follows
from the API key and version: v2 (with tagged fields) exactly when the API version is
flexible, v1 otherwise, and v0 (no client id) only for ControlledShutdown v0. A response
is ``header | body`` with header v1 for flexible versions, v0 otherwise, and always v0
for ApiVersions (a client must be able to read it before it knows our versions).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from enum import IntEnum
from typing import Any, Final

import msgspec

from protocol import fetch_reader
from protocol.codec import MESSAGE_INFO, MessageInfo, decode_struct, encode_struct
from protocol.errors import ErrorCode, ProtocolError
from protocol.messages import ApiVersionsResponse, RequestHeader, ResponseHeader


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66


#: The versions minikafka serves (docs/architecture.md, "The wire protocol"): every version
#: a ZooKeeper-mode Kafka 3.x serves (Produce 0-2 and Fetch 0-3 convert the magic 0/1
#: message formats); the inter-broker APIs stop at the versions that carry topic ids
#: (later ones add KRaft-only fields).
SUPPORTED_VERSIONS: Final[dict[int, tuple[int, int]]] = {
    ApiKey.PRODUCE: (0, 9),
    ApiKey.FETCH: (0, 12),
    ApiKey.LIST_OFFSETS: (0, 7),
    ApiKey.METADATA: (0, 12),
    ApiKey.LEADER_AND_ISR: (0, 5),
    ApiKey.STOP_REPLICA: (0, 3),
    ApiKey.UPDATE_METADATA: (0, 7),
    ApiKey.CONTROLLED_SHUTDOWN: (0, 3),
    ApiKey.OFFSET_COMMIT: (0, 8),
    ApiKey.OFFSET_FETCH: (0, 8),
    ApiKey.FIND_COORDINATOR: (0, 4),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (0, 7),
    ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
    ApiKey.WRITE_TXN_MARKERS: (0, 1),
    ApiKey.TXN_OFFSET_COMMIT: (0, 3),
    # the transaction coordinator (broker.txn); v4 of AddPartitionsToTxn is broker to broker
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 4),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 3),
    ApiKey.END_TXN: (0, 3),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 0),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.DESCRIBE_ACLS: (0, 3),
    ApiKey.CREATE_ACLS: (0, 3),
    ApiKey.DELETE_ACLS: (0, 3),
}


def _by_api_key(kind: str) -> dict[int, MessageInfo]:
    return {
        m.spec.api_key: m
        for m in MESSAGE_INFO.values()
        if m.spec.kind == kind and m.spec.api_key is not None
    }


_REQUESTS: Final = _by_api_key("request")
_RESPONSES: Final = _by_api_key("response")
_REQUEST_HEADER: Final = MESSAGE_INFO["RequestHeader"].root
_RESPONSE_HEADER: Final = MESSAGE_INFO["ResponseHeader"].root
#: Each API's name as Kafka spells it ("ApiVersions"): its request message's, less "Request".
_API_NAMES: Final = {key: msg.name.removesuffix("Request") for key, msg in _REQUESTS.items()}

_KEY_AND_VERSION: Final = struct.Struct(">hh")
_ERROR_CODE: Final = struct.Struct(">h")


class Request(msgspec.Struct, gc=False):
    """A decoded request: its header and its body (a message Struct; None only for an
    ApiVersions request newer than we support)."""

    header: RequestHeader
    body: Any

    @property
    def api_key(self) -> int:
        return int(self.header.api_key)

    @property
    def api_version(self) -> int:
        return int(self.header.api_version)


class Response(msgspec.Struct, gc=False):
    """A response: header (correlation id), body, and the API key/version it answers."""

    header: ResponseHeader
    body: Any
    api_key: int
    api_version: int


def api_name(api_key: int, unknown: str | None = None) -> str:
    """The API's name in Kafka's spelling (``LeaderAndIsr``) for logs, metrics and tables;
    for a key no spec declares, ``unknown`` (its number when not given)."""
    name = _API_NAMES.get(api_key)
    if name is not None:
        return name
    return str(api_key) if unknown is None else unknown


def _request_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    msg = _REQUESTS.get(api_key)
    return 2 if msg is not None and msg.is_flexible(api_version) else 1


def _response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    msg = _RESPONSES.get(api_key)
    return 1 if msg is not None and msg.is_flexible(api_version) else 0


def _header_versions(
    messages: Mapping[int, MessageInfo], rule: Callable[[int, int], int]
) -> dict[tuple[int, int], int]:
    """``rule`` tabulated for every version the specs declare: every request and
    response looks its header version up, and a dict lookup is cheaper than the rule."""
    return {
        (key, version): rule(key, version)
        for key, msg in messages.items()
        for version in range(msg.valid.lo, msg.valid.hi + 1)
    }


_REQUEST_HEADER_VERSIONS: Final = _header_versions(_REQUESTS, _request_header_version)
_RESPONSE_HEADER_VERSIONS: Final = _header_versions(_RESPONSES, _response_header_version)


def request_header_version(api_key: int, api_version: int) -> int:
    version = _REQUEST_HEADER_VERSIONS.get((api_key, api_version))
    return _request_header_version(api_key, api_version) if version is None else version


def response_header_version(api_key: int, api_version: int) -> int:
    version = _RESPONSE_HEADER_VERSIONS.get((api_key, api_version))
    return _response_header_version(api_key, api_version) if version is None else version


def request_message(api_key: int) -> MessageInfo:
    """Schema of the request of ``api_key`` (KeyError when unknown)."""
    return _REQUESTS[api_key]


def response_message(api_key: int) -> MessageInfo:
    return _RESPONSES[api_key]


#: A lean reader of one API's most frequent request shape: ``(frame, version)`` -> the
#: header and body the generic decoder would make, or None for any other shape. It may
#: raise on a malformed frame (struct.error, IndexError, ValueError): the generic decoder
#: then reads the frame and reports the error.
LeanReader = Callable[[bytes, int], tuple[RequestHeader, Any] | None]

#: The lean readers by (API key, version), for served versions only. Each is checked
#: against the generic decoder by its unit tests.
_LEAN_READERS: Final[dict[tuple[int, int], LeanReader]] = {
    (ApiKey.FETCH, v): fetch_reader.read_fetch_request
    for v in fetch_reader.VERSIONS
    if SUPPORTED_VERSIONS[ApiKey.FETCH][0] <= v <= SUPPORTED_VERSIONS[ApiKey.FETCH][1]
}
_LEAN_SLIPS: Final = (struct.error, IndexError, ValueError)


def _view(frame: bytes | bytearray | memoryview) -> memoryview:
    view = memoryview(frame)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def _decode_header(view: memoryview, api_key: int, api_version: int) -> tuple[RequestHeader, int]:
    version = request_header_version(api_key, api_version)
    try:
        return decode_struct(_REQUEST_HEADER, version, view, 0)
    except ProtocolError:
        # An ApiVersions request newer than ours may carry a header we cannot fully read;
        # its v1 part (key, version, correlation id, client id) is enough to answer it.
        if api_key != ApiKey.API_VERSIONS or version != 2:
            raise
        return decode_struct(_REQUEST_HEADER, 1, view, 0)


def decode_request(frame: bytes | bytearray | memoryview) -> Request:
    """Decode a request frame (without its size prefix). Raises ProtocolError, carrying
    the header when it could be read; an ApiVersions request above the supported version
    is returned with ``body=None`` so the broker can answer it from its header. Bytes
    after the body are ignored (so re-encoding gives the frame without them)."""
    view = _view(frame)
    if len(view) < 4:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"request of {len(view)} bytes")
    api_key, api_version = _KEY_AND_VERSION.unpack_from(view, 0)
    lean = _LEAN_READERS.get((api_key, api_version))
    if lean is not None:
        try:
            decoded = lean(bytes(view), api_version)
        except _LEAN_SLIPS:
            decoded = None  # malformed: the generic decoder below says how
        if decoded is not None:
            return Request(*decoded)
    header, pos = _decode_header(view, api_key, api_version)
    msg = _REQUESTS.get(api_key)
    if msg is None:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"unknown api key {api_key}", header)
    supported = SUPPORTED_VERSIONS.get(api_key)
    if supported is None:  # declared (its schema is known) but not served by minikafka
        raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION, f"{msg.name} is not served", header)
    lo, hi = supported
    if not lo <= api_version <= hi:
        if api_key == ApiKey.API_VERSIONS and api_version > hi:
            return Request(header, None)
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_VERSION,
            f"{msg.name} v{api_version} is not supported (versions {lo}-{hi})",
            header,
        )
    try:
        body, _end = decode_struct(msg.root, api_version, view, pos)
    except ProtocolError as e:
        e.header = header
        raise
    # Bytes after the body are ignored, as Kafka does: librdkafka (2.x, issue #5049) writes
    # the null topics of a Metadata v9+ "all topics" request as an int32, which reads as
    # a compact null array followed by 3 stray bytes; Kafka serves it, so must we.
    return Request(header, body)


def _check_version(msg: MessageInfo, version: int) -> None:
    if not msg.valid.has(version):
        raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION, f"{msg.name} has no version {version}")


def _encode_request_pieces(request: Request) -> list[Any]:
    header = request.header
    msg = _REQUESTS.get(header.api_key)
    if msg is None:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"unknown api key {header.api_key}")
    if request.body is not None:  # a header alone may name any version (tests, probes)
        _check_version(msg, header.api_version)
    out = bytearray()
    parts: list[Any] = []
    hv = request_header_version(header.api_key, header.api_version)
    encode_struct(_REQUEST_HEADER, hv, header, out, parts)
    if request.body is not None:
        encode_struct(msg.root, header.api_version, request.body, out, parts)
    parts.append(out)
    return parts


def encode_request(request: Request) -> bytes:
    """Encode a request (header and body, without the size prefix)."""
    return _join(_encode_request_pieces(request))


def decode_response(
    frame: bytes | bytearray | memoryview, api_key: int, api_version: int
) -> Response:
    """Decode a response frame (without its size prefix) to the given request's API.

    A broker that does not know the ApiVersions version asked for answers error 35 with
    a v0 body; such a response is read as v0 (its ``api_version`` says so)."""
    view = _view(frame)
    msg = _RESPONSES.get(api_key)
    if msg is None:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"unknown api key {api_key}")
    _check_version(msg, api_version)
    header, pos = decode_struct(
        _RESPONSE_HEADER, response_header_version(api_key, api_version), view, 0
    )
    if (
        api_key == ApiKey.API_VERSIONS
        and api_version > 0
        and len(view) >= pos + 2
        and _ERROR_CODE.unpack_from(view, pos)[0] == ErrorCode.UNSUPPORTED_VERSION
    ):
        api_version = 0
    body, _end = decode_struct(msg.root, api_version, view, pos)
    # Trailing bytes are ignored, as Kafka's clients do (see decode_request).
    return Response(header, body, api_key, api_version)


def _encode_response_pieces(response: Response) -> list[Any]:
    msg = _RESPONSES.get(response.api_key)
    if msg is None:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"unknown api key {response.api_key}")
    _check_version(msg, response.api_version)
    out = bytearray()
    parts: list[Any] = []
    hv = response_header_version(response.api_key, response.api_version)
    encode_struct(_RESPONSE_HEADER, hv, response.header, out, parts)
    encode_struct(msg.root, response.api_version, response.body, out, parts)
    parts.append(out)
    return parts


def _is_bytes(piece: object) -> bool:
    return isinstance(piece, bytes | bytearray | memoryview)


def _join(pieces: list[Any]) -> bytes:
    for piece in pieces:
        if not _is_bytes(piece):
            raise ProtocolError(
                ErrorCode.UNKNOWN_SERVER_ERROR,
                f"records of type {type(piece).__name__} need encode_response_parts",
            )
    if len(pieces) == 1:
        return bytes(pieces[0])
    return b"".join(pieces)


def encode_response(response: Response) -> bytes:
    """Encode a response (header and body, without the size prefix)."""
    return _join(_encode_response_pieces(response))


def encode_response_parts(response: Response) -> list[Any]:
    """Like encode_response, as a list: runs of bytes joined into one ``bytes``, and each
    ``records`` value that is not bytes-like (a file region to sendfile) as its own
    element, untouched. Its wire length was taken as ``len(value)``."""
    result: list[Any] = []
    run: list[Any] = []
    for piece in _encode_response_pieces(response):
        if _is_bytes(piece):
            if len(piece):
                run.append(piece)
            continue
        if run:
            result.append(b"".join(run))
            run = []
        result.append(piece)
    if run:
        result.append(b"".join(run))
    return result


def make_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Any
) -> Request:
    header = RequestHeader(
        api_key=api_key,
        api_version=api_version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    return Request(header, body)


def make_response(request_header: RequestHeader, body: Any) -> Response:
    """A response to the request with this header, at the request's version."""
    return Response(
        ResponseHeader(correlation_id=request_header.correlation_id),
        body,
        int(request_header.api_key),
        int(request_header.api_version),
    )


def api_versions_fallback_response(
    header: RequestHeader, versions: Mapping[int, tuple[int, int]] = SUPPORTED_VERSIONS
) -> Response:
    """The answer to an ApiVersions request newer than we support: error 35 in a v0 body
    listing the ranges of ``versions`` (every supported one unless a server serves fewer);
    clients then retry with a version from it."""
    keys = [
        ApiVersionsResponse.ApiVersion(api_key=key, min_version=lo, max_version=hi)
        for key, (lo, hi) in sorted(versions.items())
    ]
    body = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=keys)
    return Response(
        ResponseHeader(correlation_id=header.correlation_id), body, ApiKey.API_VERSIONS, 0
    )
