"""Every codec both ways, the framings other writers use, and the decompression cap."""

from __future__ import annotations

import contextlib
import gzip
import struct
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.records.batch import Compression, InvalidBatch
from protocol.records.compression import (
    XERIAL_MAGIC,
    DecompressionBomb,
    UnsupportedCompression,
    codec_of,
    compress,
    decompress,
)

CODECS = list(Compression)
COMPRESSED = [c for c in Compression if c is not Compression.NONE]
PAYLOAD = b"".join(b"record %d of a compressible section; " % i for i in range(3000))


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_round_trip_each_codec(codec: Compression) -> None:
    packed = compress(codec, PAYLOAD)
    if codec is not Compression.NONE:
        assert len(packed) < len(PAYLOAD) // 4
    assert decompress(codec, packed) == PAYLOAD
    assert decompress(codec, compress(codec, b"")) == b""


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CODECS), st.binary(max_size=5000))
def test_round_trip_any_bytes(codec: Compression, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


def test_written_formats_are_the_ones_kafka_reads() -> None:
    assert compress(Compression.GZIP, b"x")[:2] == b"\x1f\x8b"
    assert compress(Compression.SNAPPY, b"x")[:8] == XERIAL_MAGIC
    frame = compress(Compression.LZ4, PAYLOAD)
    info = lz4.frame.get_frame_info(frame)
    assert info["block_linked"] is False and info["content_checksum"] is False
    assert compress(Compression.ZSTD, b"x")[:4] == b"\x28\xb5\x2f\xfd"


def test_snappy_reads_raw_blocks_as_librdkafka_writes_them() -> None:
    raw = bytes(cramjam.snappy.compress_raw(PAYLOAD))
    assert decompress(Compression.SNAPPY, raw) == PAYLOAD


def test_snappy_reads_xerial_with_little_endian_version_fields() -> None:
    block = bytes(cramjam.snappy.compress_raw(b"abc" * 100))
    stream = XERIAL_MAGIC + struct.pack("<ii", 1, 1) + struct.pack(">i", len(block)) + block
    assert decompress(Compression.SNAPPY, stream) == b"abc" * 100


def test_xerial_writes_32k_blocks() -> None:
    data = bytes(range(256)) * 1000  # 256000 bytes: 8 blocks
    stream = compress(Compression.SNAPPY, data)
    pos, blocks = 16, 0
    while pos < len(stream):
        (length,) = struct.unpack_from(">i", stream, pos)
        pos += 4 + length
        blocks += 1
    assert blocks == 8


def test_gzip_reads_several_members_and_zlib_data() -> None:
    two = gzip.compress(b"first ") + gzip.compress(b"second")
    assert decompress(Compression.GZIP, two) == b"first second"
    assert decompress(Compression.GZIP, zlib.compress(b"zlib")) == b"zlib"


def test_lz4_reads_frames_with_content_size_and_several_frames() -> None:
    sized = lz4.frame.compress(b"a" * 1000, store_size=True)
    assert decompress(Compression.LZ4, sized + sized) == b"a" * 2000


def test_zstd_reads_frames_without_content_size() -> None:
    compressor = zstandard.ZstdCompressor(write_content_size=False)
    frame = compressor.compress(PAYLOAD)
    assert zstandard.frame_content_size(frame) == -1
    assert decompress(Compression.ZSTD, frame) == PAYLOAD
    assert decompress(Compression.ZSTD, frame + frame) == PAYLOAD * 2


# A bomb: 64 MiB of zeros compresses to a few KiB in every codec.
BOMB_SIZE = 64 * 1024 * 1024
CAP = 1024 * 1024


@pytest.fixture(scope="module")
def zeros() -> bytes:
    return bytes(BOMB_SIZE)


def _bomb(codec: Compression, zeros: bytes) -> bytes:
    if codec is Compression.ZSTD:
        # without a declared content size: the cap cannot rely on the header
        return zstandard.ZstdCompressor(write_content_size=False).compress(zeros)
    if codec is Compression.LZ4:
        return bytes(lz4.frame.compress(zeros, store_size=False))
    if codec is Compression.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(zeros))
    return compress(codec, zeros)


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_decompression_bomb_stops_at_the_cap(codec: Compression, zeros: bytes) -> None:
    bomb = _bomb(codec, zeros)
    assert len(bomb) < BOMB_SIZE // 20  # snappy tops out near 21:1
    with pytest.raises(DecompressionBomb) as info:
        decompress(codec, bomb, max_size=CAP)
    assert not info.value.corrupt  # INVALID_RECORD: retrying would not help
    assert decompress(codec, compress(codec, zeros[:CAP]), max_size=CAP) == zeros[:CAP]


def test_xerial_bomb_is_refused_across_blocks() -> None:
    stream = compress(Compression.SNAPPY, bytes(4 * CAP))
    with pytest.raises(DecompressionBomb):
        decompress(Compression.SNAPPY, stream, max_size=CAP)


def test_uncompressed_section_above_the_cap_is_refused() -> None:
    with pytest.raises(DecompressionBomb):
        decompress(Compression.NONE, b"x" * 11, max_size=10)


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_truncated_stream_is_corrupt(codec: Compression) -> None:
    packed = compress(codec, PAYLOAD)
    for cut in (len(packed) // 2, len(packed) - 1):
        with pytest.raises(InvalidBatch) as info:
            decompress(codec, packed[:cut])
        assert info.value.corrupt


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_garbage_is_corrupt(codec: Compression) -> None:
    with pytest.raises(InvalidBatch) as info:
        decompress(codec, b"\x00not compressed at all, just some bytes" * 3)
    assert info.value.corrupt


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(COMPRESSED), st.binary(max_size=200), st.integers(0, 199))
def test_mutated_streams_raise_only_invalid_batch(
    codec: Compression, noise: bytes, where: int
) -> None:
    packed = bytearray(compress(codec, PAYLOAD[:2000]))
    where %= len(packed)
    packed[where : where + len(noise)] = noise
    with contextlib.suppress(InvalidBatch):
        decompress(codec, bytes(packed), max_size=CAP)


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_ids_are_unsupported(codec_id: int) -> None:
    with pytest.raises(UnsupportedCompression) as info:
        codec_of(codec_id)
    assert info.value.error_code == 76
    with pytest.raises(UnsupportedCompression):
        decompress(codec_id, b"")
