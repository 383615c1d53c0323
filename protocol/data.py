"""Versioned data records: an int16 version, then the struct at that version.

Used for the consumer protocol (ConsumerProtocolSubscription/Assignment, the bytes inside
JoinGroup/SyncGroup) and for the keys and values of __consumer_offsets
(OffsetCommitKey/Value, GroupMetadataKey/Value).

Reading is lenient the way Kafka's own readers are: a version newer than the schema is read
as the newest known one, and bytes after the struct are ignored (newer writers append
fields there).
"""

from __future__ import annotations

from typing import Any

from protocol.codec import MESSAGE_INFO, MessageInfo, decode_struct, encode_struct
from protocol.errors import ErrorCode, ProtocolError
from protocol.primitives import INT16

_DATA = {name: info for name, info in MESSAGE_INFO.items() if info.spec.kind == "data"}


def _schema(name: str) -> MessageInfo:
    try:
        return _DATA[name]
    except KeyError:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"unknown data record {name}") from None


def data_class(name: str) -> Any:
    """The msgspec class of a data record, e.g. data_class("OffsetCommitValue")."""
    return _schema(name).root.cls


def data_version(buf: bytes | bytearray | memoryview) -> int:
    """The int16 version prefix of a data record."""
    if len(buf) < 2:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "data record shorter than its version")
    return int(INT16.unpack_from(buf, 0)[0])


def encode_data(name: str, version: int, value: Any) -> bytes:
    info = _schema(name)
    if not info.valid.has(version):
        raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION, f"{name} has no version {version}")
    out = bytearray(INT16.pack(version))
    parts: list[Any] = []
    encode_struct(info.root, version, value, out, parts)
    return b"".join([*parts, out])


def decode_data(name: str, buf: bytes | bytearray | memoryview) -> Any:
    info = _schema(name)
    version = data_version(buf)
    if version < info.valid.lo:
        raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION, f"{name} has no version {version}")
    version = min(version, info.valid.hi)
    value, _end = decode_struct(info.root, version, memoryview(buf).cast("B"), 2)
    return value
