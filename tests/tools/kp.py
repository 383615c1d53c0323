"""kafka-python's protocol classes, looked up by API key (capture tooling only).

The recording proxy and the fake broker never use minikafka's own codec: the golden frames
exist to test that codec, so everything here decodes and encodes with an independent
implementation, kafka-python 3's JSON-schema driven ``kafka.protocol`` package.

Frame layout reminders (the frame is what follows the int32 size prefix):
- request header v1: int16 api_key, int16 api_version, int32 correlation_id,
  nullable int16-length client_id; v2 (flexible versions) appends tagged fields.
- response header v0: int32 correlation_id; v1 (flexible) appends tagged fields, except
  that ApiVersions responses always use v0.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

# Importing the packages registers every message class as an ApiMessage subclass.
import kafka.protocol.admin
import kafka.protocol.consumer
import kafka.protocol.metadata
import kafka.protocol.producer  # noqa: F401
from kafka.protocol.api_message import ApiMessage

API_VERSIONS_KEY = 18
PRODUCE_KEY = 0


@dataclass(frozen=True)
class FrameHeader:
    """The fixed part of a request header, read without any schema."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def read_request_header(frame: bytes) -> FrameHeader:
    api_key, api_version, correlation_id, id_len = struct.unpack_from(">hhih", frame, 0)
    client_id = None if id_len < 0 else frame[10 : 10 + id_len].decode("utf-8", "replace")
    return FrameHeader(api_key, api_version, correlation_id, client_id)


def read_response_correlation_id(frame: bytes) -> int:
    return int(struct.unpack_from(">i", frame, 0)[0])


def _walk(cls: type) -> list[type]:
    out = [cls]
    subclasses: list[type] = cls.__subclasses__()
    for sub in subclasses:
        out.extend(_walk(sub))
    return out


def _build_registry() -> tuple[dict[int, Any], dict[int, Any]]:
    requests: dict[int, Any] = {}
    responses: dict[int, Any] = {}
    for cls in _walk(ApiMessage):
        if cls is ApiMessage or getattr(cls, "_class_version", None) is not None:
            continue
        json = getattr(cls, "_json", None)
        if not json or json.get("type") not in ("request", "response"):
            continue
        table = requests if json["type"] == "request" else responses
        table.setdefault(int(json["apiKey"]), cls)
    return requests, responses


REQUEST_CLASSES, RESPONSE_CLASSES = _build_registry()


def api_name(api_key: int) -> str:
    cls = REQUEST_CLASSES.get(api_key)
    if cls is None:
        return f"Api{api_key}"
    return str(cls.name).removesuffix("Request")


def decode_request(frame: bytes) -> Any:
    """Decode a request frame (header included) with kafka-python."""
    hdr = read_request_header(frame)
    cls = REQUEST_CLASSES[hdr.api_key]
    return cls.decode(frame, version=hdr.api_version, header=True)


def decode_response(frame: bytes, api_key: int, api_version: int) -> Any:
    cls = RESPONSE_CLASSES[api_key]
    return cls.decode(frame, version=api_version, header=True)


def encode_response(body: Any, correlation_id: int, api_version: int) -> bytes:
    """Encode a kafka-python response object with its header, without the size prefix."""
    # Set the version before attaching the header: kafka-python's version setter would
    # otherwise try to store a request-only field on the response header.
    body._header = None
    body.API_VERSION = api_version
    body.with_header(correlation_id=correlation_id)
    return bytes(body.encode(header=True))


def expects_response(frame: bytes) -> bool:
    """False only for a Produce with acks=0, the one request Kafka never answers."""
    hdr = read_request_header(frame)
    if hdr.api_key != PRODUCE_KEY:
        return True
    return bool(decode_request(frame).acks != 0)
