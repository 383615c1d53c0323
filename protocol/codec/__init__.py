"""The one table-driven codec: schema data in, per-version decode/encode plans out.

- ``structs``: every struct of every message (protocol.schema.specs) resolved, with one
  msgspec Struct class covering all of its versions;
- ``values``: the reader and writer of each field's value at a version;
- ``plans``: per (struct, version), a decode and an encode function compiled once, lazily.

``decode_struct``/``encode_struct`` are the entry points; they turn any low-level slip on
malformed input (struct.error on truncation, ...) into ProtocolError.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from protocol.codec.structs import UNKNOWN_TAGS, FieldInfo, MessageInfo, StructInfo
from protocol.codec.values import LARGE_RECORDS, Parts, Records, received_records
from protocol.errors import ErrorCode, ProtocolError
from protocol.schema.specs import MESSAGES

__all__ = [
    "LARGE_RECORDS",
    "MESSAGE_INFO",
    "UNKNOWN_TAGS",
    "FieldInfo",
    "MessageInfo",
    "Records",
    "StructInfo",
    "decode_struct",
    "encode_struct",
    "received_records",
]

#: Low-level exceptions that malformed input can provoke inside the plans.
_SLIPS: Final = (
    struct.error,
    IndexError,
    ValueError,
    TypeError,
    OverflowError,
    MemoryError,
    RecursionError,
)


def decode_struct(info: StructInfo, version: int, buf: Any, pos: int = 0) -> tuple[Any, int]:
    """Decode one struct of ``info`` at ``version`` from ``buf[pos:]``: (value, end)."""
    try:
        return info.decoder(version)(buf, pos)
    except ProtocolError:
        raise
    except _SLIPS as e:
        raise ProtocolError(
            ErrorCode.INVALID_REQUEST,
            f"malformed {info.name} v{version}: {type(e).__name__}: {e}",
        ) from None


def encode_struct(info: StructInfo, version: int, obj: Any, out: bytearray, parts: Parts) -> None:
    """Append ``obj`` encoded at ``version`` to ``out`` (large records go to ``parts``).
    A value that does not fit its field (wrong type, out of range, null where not
    nullable) raises ProtocolError(UNKNOWN_SERVER_ERROR): it is the sender's bug."""
    if not isinstance(obj, info.cls):
        raise ProtocolError(
            ErrorCode.UNKNOWN_SERVER_ERROR, f"cannot encode {type(obj).__name__} as {info.name}"
        )
    try:
        info.encoder(version)(obj, out, parts)
    except ProtocolError:
        raise
    except (*_SLIPS, AttributeError) as e:
        raise ProtocolError(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            f"cannot encode {info.name} v{version}: {type(e).__name__}: {e}",
        ) from None


#: Every declared message by name, resolved (classes are made here, at import).
MESSAGE_INFO: Final[dict[str, MessageInfo]] = {m.name: MessageInfo(m) for m in MESSAGES}
