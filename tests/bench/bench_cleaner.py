"""Log cleaner benchmarks, each printed beside a baseline measured in the same run.

    .venv/bin/python tests/bench/bench_cleaner.py [--quick] [--size-mib N] [--dir DIR]

1. Cleaning MB/s: one pass (offset map of every key, then the rewrite of every segment
   below the active one, fsynced and swapped in) over a log of 1 GiB of 100-byte
   records in batches of 100, whose keys are drawn from 10% as many distinct keys as
   there are records; beside a plain copy of the same segment files (1 MiB reads and
   writes, fsynced) into the same directory.
2. Offset map memory per million keys (tracemalloc), beside the 24 bytes a key costs in
   Kafka's fixed buffer (16-byte MD5 + 8-byte offset), i.e. 24 MB per million.

The page cache is warm (the log was just written): this measures CPU cost, not the disk.
``--quick`` uses 64 MiB instead of 1 GiB.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from protocol.records import SimpleRecord, build_batch
from protocol.values import TopicPartition
from storage.cleaner import clean_log
from storage.clock import SystemClock
from storage.config import LogConfig
from storage.log import Log
from storage.offset_map import OffsetMap

MiB = 1 << 20
RECORDS_PER_BATCH = 100
VALUE = b"x" * 100


def write_log(path: str, size: int, segment_bytes: int) -> tuple[Log, int]:
    """A compacted log of about ``size`` bytes; returns it and its record count."""
    config = LogConfig(segment_bytes=segment_bytes, cleanup_policy="compact")
    lg = Log.open(path, TopicPartition("bench", 0), config, SystemClock())
    batch_size = len(batch_with_keys([b"key-00000000"] * RECORDS_PER_BATCH))
    batches = max(1, size // batch_size)
    unique = max(1, batches * RECORDS_PER_BATCH // 10)
    rng = random.Random(1)
    for _ in range(batches):
        keys = [b"key-%08d" % rng.randrange(unique) for _ in range(RECORDS_PER_BATCH)]
        lg.append(batch_with_keys(keys), leader_epoch=0)
    lg.roll()
    lg.update_high_watermark(lg.log_end_offset)
    lg.flush()
    return lg, batches * RECORDS_PER_BATCH


def batch_with_keys(keys: list[bytes]) -> bytes:
    return bytes(build_batch([SimpleRecord(k, VALUE, (), 1_700_000_000_000) for k in keys]))


def plain_copy(lg: Log, out_dir: str) -> tuple[int, float]:
    """Copy every inactive segment's .log with 1 MiB reads and writes, then fsync."""
    os.makedirs(out_dir)
    total = 0
    start = time.perf_counter()
    for seg in lg.segments[:-1]:
        src = os.open(seg.log_path, os.O_RDONLY)
        target = os.path.join(out_dir, os.path.basename(seg.log_path))
        dst = os.open(target, os.O_WRONLY | os.O_CREAT)
        try:
            while chunk := os.read(src, MiB):
                os.write(dst, chunk)
                total += len(chunk)
            os.fsync(dst)
        finally:
            os.close(src)
            os.close(dst)
    return total, time.perf_counter() - start


def bench_cleaning(directory: str, size: int) -> None:
    segment_bytes = max(16 * MiB, size // 8)
    lg, records = write_log(os.path.join(directory, "bench-0"), size, segment_bytes)
    try:
        copied, copy_s = plain_copy(lg, os.path.join(directory, "copy"))
        offset_map = OffsetMap(records * 200)  # room for every key: one pass
        start = time.perf_counter()
        result = clean_log(
            lg,
            first_dirty=0,
            first_uncleanable=lg.active_segment.base_offset,
            offset_map=offset_map,
            now_ms=SystemClock().time_ms(),
        )
        clean_s = time.perf_counter() - start
    finally:
        lg.close()
    stats = result.stats
    print(f"log: {copied / MiB:.0f} MiB, {records:,} records, {len(offset_map):,} distinct keys")
    print(
        f"cleaning:   {copied / MiB / clean_s:8.1f} MB/s  ({clean_s:.1f} s; read "
        f"{stats.bytes_read / MiB:.0f} MiB, wrote {stats.bytes_written / MiB:.0f} MiB, "
        f"kept {stats.records_kept:,} of {stats.records_read:,} records)"
    )
    print(f"plain copy: {copied / MiB / copy_s:8.1f} MB/s  ({copy_s:.2f} s)  [baseline]")
    print(f"ratio cleaning / copy: {copy_s / clean_s:.3f}")


def bench_offset_map_memory(keys: int = 1_000_000) -> None:
    tracemalloc.start()
    offset_map = OffsetMap(1 << 40)
    before = tracemalloc.get_traced_memory()[0]
    for i in range(keys):
        offset_map.put(b"key-%d" % i, i + 1_000_000)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    per_million = used / keys * 1_000_000 / 1e6
    print(f"offset map: {per_million:.0f} MB per million keys ({used / keys:.0f} bytes a key)")
    print(f"Kafka's fixed buffer: {24:.0f} MB per million keys (24 bytes a key)  [baseline]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 MiB instead of 1 GiB")
    parser.add_argument("--size-mib", type=int, default=None, help="log size in MiB")
    parser.add_argument("--dir", default=None, help="directory for the log (default: temp)")
    args = parser.parse_args()
    size_mib = args.size_mib or (64 if args.quick else 1024)
    directory = tempfile.mkdtemp(prefix="bench-cleaner-", dir=args.dir)
    try:
        bench_cleaning(directory, size_mib * MiB)
        bench_offset_map_memory()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
