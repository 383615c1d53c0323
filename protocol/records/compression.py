"""Compression of a batch's records section: gzip, snappy, lz4 and zstd, both directions.

A compressed batch keeps its 61-byte header in clear; everything after it is one
compressed stream of the records section. Per codec, what Kafka clients put on the wire
and what this module accepts and writes:

- gzip (1): an RFC 1952 gzip stream. Read: one or more gzip members (zlib data also
  accepted). Written: one member.
- snappy (2): two framings exist. The Java client writes xerial's block stream: a
  16-byte header (``\\x82SNAPPY\\x00``, int32 version, int32 compat), then blocks of
  ``int32 compressed length | raw snappy block`` (each block holding 32 KiB of input).
  librdkafka writes a single raw snappy block. Read: both, told apart by the 8 magic
  bytes (versions ignored: some producers write them little-endian). Written: xerial,
  which every client and Kafka itself read.
- lz4 (3): the standard LZ4 frame format (KIP-57; magic 0x184D2204). Read: one or more
  frames. Written: one frame of independent 64 KiB blocks, no content size, no
  checksums, as Kafka's own writer does.
- zstd (4): standard zstd frames. Read: one or more frames, with or without a declared
  content size. Written: one frame, level 3 (Kafka's default).

Decompression bombs: every decoder stops once the output would pass ``max_size`` bytes
(default :data:`DEFAULT_MAX_UNCOMPRESSED`, 64 MiB) and raises :class:`DecompressionBomb`;
memory use stays within ``max_size`` plus one working chunk, so a hostile batch yields an
error, never a MemoryError. Snappy declares each block's size up front, so its bombs are
refused before anything is decompressed. Damaged streams raise :class:`InvalidBatch`
with ``corrupt=True``; an unknown codec id raises :class:`UnsupportedCompression`.
"""

from __future__ import annotations

import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from protocol.records.batch import Compression, InvalidBatch
from protocol.records.varint import read_unsigned_varint

Buffer = bytes | bytearray | memoryview

#: Default cap on a batch's uncompressed records section. Kafka's own limit on a batch
#: is message.max.bytes (1 MiB by default) *compressed*; 64 MiB leaves room for highly
#: compressible data while bounding what one hostile batch can make us allocate.
DEFAULT_MAX_UNCOMPRESSED = 64 * 1024 * 1024

#: Output is produced in chunks of this size where the decoder lets us choose.
_CHUNK = 256 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
#: magic (8 bytes), version int32 = 1, compat int32 = 1.
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024
_INT32 = struct.Struct(">i")

GZIP_DEFAULT_LEVEL = 6
LZ4_DEFAULT_LEVEL = 0  # lz4's fast mode; HC levels trade much CPU for a little size
ZSTD_DEFAULT_LEVEL = 3


class UnsupportedCompression(InvalidBatch):
    """A codec this reader does not know, or one not allowed at this protocol version
    (zstd below Produce v7): answered with UNSUPPORTED_COMPRESSION_TYPE (76)."""

    error_code = 76


class DecompressionBomb(InvalidBatch):
    """The records section would decompress to more than the configured cap."""


def codec_of(value: int) -> Compression:
    """The :class:`Compression` for a codec id, or :class:`UnsupportedCompression`."""
    try:
        return Compression(value)
    except ValueError:
        raise UnsupportedCompression(f"unknown compression codec id {value}") from None


# ---------------------------------------------------------------------------- compress


def compress(codec: int, data: Buffer, level: int | None = None) -> bytes:
    """Compress a records section with ``codec`` (``level``: the codec's own scale,
    None for the default above)."""
    kind = codec_of(codec)
    if kind is Compression.NONE:
        return bytes(data)
    if kind is Compression.GZIP:
        return _gzip_compress(data, GZIP_DEFAULT_LEVEL if level is None else level)
    if kind is Compression.SNAPPY:
        return _xerial_compress(data)
    if kind is Compression.LZ4:
        return bytes(
            lz4.frame.compress(
                data,
                compression_level=LZ4_DEFAULT_LEVEL if level is None else level,
                block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                block_linked=False,
                content_checksum=False,
                block_checksum=False,
                store_size=False,
            )
        )
    compressor = zstandard.ZstdCompressor(level=ZSTD_DEFAULT_LEVEL if level is None else level)
    return bytes(compressor.compress(data))


def _gzip_compress(data: Buffer, level: int) -> bytes:
    # wbits 16 + 15: a gzip wrapper (header and CRC-32 trailer) around deflate data.
    compressor = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _xerial_compress(data: Buffer) -> bytes:
    view = memoryview(data)
    parts = [XERIAL_HEADER]
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


# -------------------------------------------------------------------------- decompress


def decompress(codec: int, data: Buffer, max_size: int = DEFAULT_MAX_UNCOMPRESSED) -> bytes:
    """Decompress a records section; raise :class:`DecompressionBomb` past ``max_size``
    bytes of output, :class:`InvalidBatch` (corrupt) on a damaged stream."""
    kind = codec_of(codec)
    if kind is Compression.NONE:
        if len(data) > max_size:
            raise DecompressionBomb(f"records section of {len(data)} bytes exceeds {max_size}")
        return bytes(data)
    decoder = _DECODERS[kind]
    try:
        return decoder(data, max_size)
    except InvalidBatch:
        raise
    except (zlib.error, cramjam.DecompressionError, RuntimeError, zstandard.ZstdError) as exc:
        raise InvalidBatch(f"{kind.name.lower()} data is damaged: {exc}", corrupt=True) from None


def _bomb(codec: str, max_size: int) -> DecompressionBomb:
    return DecompressionBomb(f"{codec} records section decompresses to more than {max_size} bytes")


def _gzip_decompress(data: Buffer, max_size: int) -> bytes:
    out: list[bytes] = []
    total = 0
    pending = bytes(data)
    while pending:
        # wbits 32 + 15: accept a gzip or a zlib header.
        decoder = zlib.decompressobj(32 + zlib.MAX_WBITS)
        chunk = pending
        while True:
            piece = decoder.decompress(chunk, max_size + 1 - total)
            total += len(piece)
            if total > max_size:
                raise _bomb("gzip", max_size)
            out.append(piece)
            chunk = decoder.unconsumed_tail
            if decoder.eof or not chunk:
                break
        if not decoder.eof:
            raise InvalidBatch("gzip stream truncated", corrupt=True)
        pending = decoder.unused_data
    return b"".join(out)


def _snappy_decompress(data: Buffer, max_size: int) -> bytes:
    view = memoryview(data)
    if bytes(view[:8]) != XERIAL_MAGIC:
        return _snappy_block(view, max_size)
    out: list[bytes] = []
    total = 0
    pos = len(XERIAL_HEADER)
    end = len(view)
    while pos < end:
        if end - pos < 4:
            raise InvalidBatch("xerial snappy block length truncated", corrupt=True)
        (length,) = _INT32.unpack_from(view, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise InvalidBatch(f"xerial snappy block of {length} bytes is truncated", corrupt=True)
        block = _snappy_block(view[pos : pos + length], max_size - total)
        total += len(block)
        out.append(block)
        pos += length
    return b"".join(out)


def _snappy_block(block: memoryview, max_size: int) -> bytes:
    # A raw snappy block starts with its uncompressed length (unsigned varint): check it
    # against the cap before letting the decoder allocate it.
    declared, _ = read_unsigned_varint(block, 0)
    if declared > max_size:
        raise _bomb("snappy", max_size)
    return bytes(cramjam.snappy.decompress_raw(block))


def _lz4_decompress(data: Buffer, max_size: int) -> bytes:
    out: list[bytes] = []
    total = 0
    pending = bytes(data)
    while pending:
        decoder = lz4.frame.LZ4FrameDecompressor()
        chunk = pending
        while True:
            piece = decoder.decompress(chunk, max_length=min(_CHUNK, max_size + 1 - total))
            total += len(piece)
            if total > max_size:
                raise _bomb("lz4", max_size)
            out.append(piece)
            chunk = b""
            if decoder.eof or decoder.needs_input:
                break
        if not decoder.eof:
            raise InvalidBatch("lz4 frame truncated", corrupt=True)
        pending = decoder.unused_data or b""
    return b"".join(out)


def _zstd_decompress(data: Buffer, max_size: int) -> bytes:
    # Frames may omit their content size (Java's streaming writer does), and zstd's
    # one-shot and decompressobj APIs have no output cap. So a streaming reader first
    # measures the output in bounded chunks, discarding them; once the total is known
    # to be within the cap, decompressobj decodes frame by frame and reports whether
    # each frame ended (the streaming reader is silent about a truncated one).
    context = zstandard.ZstdDecompressor()
    total = 0
    with context.stream_reader(data, read_across_frames=True) as reader:
        while piece := reader.read(_CHUNK):
            total += len(piece)
            if total > max_size:
                raise _bomb("zstd", max_size)
    out: list[bytes] = []
    pending = bytes(data)
    while pending:
        decoder = context.decompressobj()
        out.append(decoder.decompress(pending))
        if not decoder.eof:
            raise InvalidBatch("zstd frame truncated", corrupt=True)
        pending = decoder.unused_data
    return b"".join(out)


_DECODERS = {
    Compression.GZIP: _gzip_decompress,
    Compression.SNAPPY: _snappy_decompress,
    Compression.LZ4: _lz4_decompress,
    Compression.ZSTD: _zstd_decompress,
}
