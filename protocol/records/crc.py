"""CRC-32C (Castagnoli), the checksum of RecordBatch v2.

The C implementation of the ``crc32c`` package uses SSE4.2 / ARMv8 instructions where the
CPU has them; it is the only dependency on the hot path of batch validation.
"""

from __future__ import annotations

from crc32c import crc32c as _crc32c


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """Return the CRC-32C of ``data``, continuing from ``value`` (0 to start)."""
    return int(_crc32c(data, value))
