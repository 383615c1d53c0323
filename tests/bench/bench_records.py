"""Benchmark protocol.records: CRC-32C and batch-header scanning, each beside a baseline.

    .venv/bin/python tests/bench/bench_records.py [--quick]

- CRC-32C (protocol.records.crc) over 64 MiB, beside zlib.crc32 over the same bytes.
- Batch-header scan (iter_batches) over 1 GiB worth of batches: one buffer of batches is
  scanned repeatedly, so memory stays at the buffer's size. Baselines on the same bytes:
  the least a scan can do (a struct.unpack_from of offset and length per batch) and
  copying the bytes once (what a scan that touched every byte would at best cost). Full
  validation (header + CRC-32C) is printed too, since that is the produce path's cost.
- Records: build_batch / read_batch records per second, for scale (not on a hot path).

Figures are best-of-N wall-clock times on a shared machine; compare within one run.
"""

from __future__ import annotations

import argparse
import functools
import os
import struct
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from protocol.records import (
    Compression,
    SimpleRecord,
    build_batch,
    iter_batches,
    read_batch,
    validate,
)
from protocol.records.crc import crc32c
from tests.bench.timing import best_of

MiB = 1024 * 1024


def line(name: str, nbytes: int, seconds: float, extra: str = "") -> None:
    print(f"  {name:<42} {nbytes / seconds / 1e6:>10,.0f} MB/s  {extra}")


def bench_crc(size: int, repeats: int) -> None:
    data = os.urandom(size)
    print(f"CRC over {size // MiB} MiB (best of {repeats})")
    line("crc32c (protocol.records.crc)", size, best_of(repeats, lambda: crc32c(data)))
    line("zlib.crc32 (baseline)", size, best_of(repeats, lambda: zlib.crc32(data)))


def make_batches(buffer_size: int, batch_size: int) -> bytes:
    value = os.urandom(batch_size - 61 - 30)
    one = build_batch([SimpleRecord(b"key", value, (), 1_700_000_000_000)])
    count = max(1, buffer_size // len(one))
    return bytes(one) * count


def bench_scan(total: int, buffer_size: int, batch_size: int, repeats: int) -> None:
    buf = make_batches(buffer_size, batch_size)
    batches = sum(1 for _ in iter_batches(buf))
    passes = max(1, total // len(buf))
    scanned = passes * len(buf)
    unpack = struct.Struct(">qi").unpack_from
    end = len(buf)

    def scan() -> None:
        for _ in range(passes):
            for _pos, _header in iter_batches(buf):
                pass

    def minimal() -> None:
        for _ in range(passes):
            pos = 0
            while pos < end:
                _, length = unpack(buf, pos)
                pos += length + 12

    def copy() -> None:
        view = memoryview(buf)
        for _ in range(passes):
            bytearray(view)

    def validate_all() -> None:
        for pos, header in iter_batches(buf):
            validate(buf, pos, pos + header.size)

    print(
        f"Header scan over {scanned // MiB} MiB: {batches} batches of {len(buf) // batches} B "
        f"in a {len(buf) // MiB} MiB buffer x {passes} (best of {repeats})"
    )
    seconds = best_of(repeats, scan)
    line(
        "iter_batches (BatchHeader per batch)",
        scanned,
        seconds,
        f"{batches * passes / seconds / 1e6:.2f} M headers/s",
    )
    line("struct.unpack_from offset+length (baseline)", scanned, best_of(repeats, minimal))
    line("copying the bytes (baseline)", scanned, best_of(repeats, copy))
    line("validate() incl. CRC-32C, one pass", len(buf), best_of(repeats, validate_all))


def bench_records(repeats: int) -> None:
    records = [
        SimpleRecord(b"key-%d" % i, b"v" * 100, [("h", b"x")], 1_700_000_000_000 + i)
        for i in range(1000)
    ]
    print(f"Records: batches of {len(records)} records of ~110 B (best of {repeats})")
    for codec in (Compression.NONE, Compression.LZ4, Compression.ZSTD):
        batch = build_batch(records, compression=codec)
        build = best_of(repeats, functools.partial(build_batch, records, compression=codec))
        read = best_of(repeats, functools.partial(read_batch, batch))
        print(
            f"  {codec.name:<5} build {len(records) / build / 1e3:>7,.0f} k records/s   "
            f"read {len(records) / read / 1e3:>7,.0f} k records/s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    args = parser.parse_args()
    repeats = 2 if args.quick else 5
    bench_crc(16 * MiB if args.quick else 64 * MiB, repeats)
    total = 128 * MiB if args.quick else 1024 * MiB
    for batch_size in (16 * 1024, 1024):
        bench_scan(total, 16 * MiB, batch_size, 2 if args.quick else 3)
    bench_records(repeats)


if __name__ == "__main__":
    main()
