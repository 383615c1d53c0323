"""Compression inside legacy wrapper messages (magic 0 and 1), and the lz4 quirk of magic 0.

A wrapper's value is one compressed stream of an inner message set. The codecs are those
of RecordBatch v2 (:mod:`.compression`) with the same framings: gzip (1) a gzip stream;
snappy (2) xerial's block stream as Java clients write it (a raw block, as some
non-Java clients write, is read too); lz4 (3) an LZ4 frame. zstd (4) came with magic 2
only: a legacy message naming it is refused (UNSUPPORTED_COMPRESSION_TYPE), and a v2
zstd batch cannot be converted to magic 0 or 1.

The lz4 quirk (KAFKA-3160): Kafka's first lz4 writer computed the frame descriptor's
header checksum (the byte HC after the FLG and BD bytes, and after the content size and
dictionary id when FLG announces them) over the 4 magic bytes *and* the descriptor,
where the LZ4 frame format says over the descriptor only. Magic 0 keeps that: writers
of magic 0 put the wrong byte, readers of magic 0 ignore the byte; from magic 1 the byte
is the standard one, and checked. HC is bits 8-15 of the XXH32 (seed 0) of the bytes it
covers; XXH32 is computed here, over a dozen bytes at most.
"""

from __future__ import annotations

import struct

from protocol.records.batch import Compression, InvalidBatch
from protocol.records.compression import (
    UnsupportedCompression,
    codec_of,
    compress,
    decompress,
)

Buffer = bytes | bytearray | memoryview

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
_FLG_CONTENT_SIZE = 0x08
_FLG_DICT_ID = 0x01
_LEGACY_CODECS = (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4)

_M32 = 0xFFFFFFFF
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_LANES = struct.Struct("<IIII")
_U32 = struct.Struct("<I")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: Buffer, seed: int = 0) -> int:
    """XXH32 of ``data`` (the LZ4 frame format's header and content checksum)."""
    view = memoryview(data)
    n, i = len(view), 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while i <= n - 16:
            for lane, word in enumerate(_LANES.unpack_from(view, i)):
                v[lane] = (_rotl((v[lane] + word * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (word,) = _U32.unpack_from(view, i)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + view[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _header_checksum_position(frame: Buffer) -> int:
    """Where the HC byte of the LZ4 frame at the start of ``frame`` is."""
    if len(frame) < 7 or bytes(frame[:4]) != LZ4_FRAME_MAGIC:
        raise InvalidBatch("lz4 data does not start with an LZ4 frame", corrupt=True)
    flg = frame[4]
    pos = 6 + (8 if flg & _FLG_CONTENT_SIZE else 0) + (4 if flg & _FLG_DICT_ID else 0)
    if pos >= len(frame):
        raise InvalidBatch("lz4 frame descriptor truncated", corrupt=True)
    return pos


def header_checksum(frame: Buffer, *, broken: bool) -> int:
    """The HC byte the frame at the start of ``frame`` should carry: the standard one,
    or magic 0's (``broken``: hashed from the frame's first byte)."""
    pos = _header_checksum_position(frame)
    covered = memoryview(frame)[0 if broken else 4 : pos]
    return (xxh32(covered) >> 8) & 0xFF


def _with_header_checksum(frame: Buffer, *, broken: bool) -> bytearray:
    out = bytearray(frame)
    out[_header_checksum_position(out)] = header_checksum(out, broken=broken)
    return out


def legacy_codec(value: int) -> Compression:
    """The codec of a legacy message's attributes; zstd and unknown ids raise
    :class:`UnsupportedCompression`."""
    codec = codec_of(value)
    if codec not in _LEGACY_CODECS:
        raise UnsupportedCompression(f"{codec.name.lower()} is not a codec of magic 0 or 1")
    return codec


def legacy_compress(codec: int, data: Buffer, magic: int) -> bytes:
    """A wrapper's value: ``data`` (an inner message set) compressed as ``magic`` wants."""
    kind = legacy_codec(codec)
    compressed = compress(kind, data)
    if kind is Compression.LZ4 and magic == 0:
        return bytes(_with_header_checksum(compressed, broken=True))
    return compressed


def legacy_decompress(codec: int, data: Buffer, magic: int, max_size: int) -> bytes:
    """A wrapper's inner message set; magic 0's lz4 header checksum is not checked (it
    is put right before the frame is decoded)."""
    kind = legacy_codec(codec)
    if kind is Compression.LZ4 and magic == 0:
        data = _with_header_checksum(data, broken=False)
    return decompress(kind, data, max_size)
