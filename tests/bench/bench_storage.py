"""Storage benchmarks, each printed beside a baseline measured in the same run.

    .venv/bin/python tests/bench/bench_storage.py [--quick] [--dir DIR]

1. Append MB/s through Log.append (validate + CRC-32C, offsets rewritten in place,
   os.write, sparse index entries) with 1 MiB and 16 KiB batches, against a plain
   sequential os.write of the same bytes to the same directory. Target: >= 0.8.
   Measured twice: appending bytes (the log validates them, CRC-32C included), and as
   the broker's produce path appends (``ValidatedRecords``: the request's validation
   checked the batch, so the log does not).
2. Offset lookups per second on a 1 GiB log (index binary search + batch header scan,
   through Log.read), beside a bisect over an in-memory list of batch offsets.
3. Recovery scan MB/s over a 1 GiB segment (every batch validated with its CRC, indexes
   rebuilt), beside reading the file and running CRC-32C over it with no parsing.
   Target: >= 500 MB/s.
4. Startup of a LogManager with 1,000 partitions after a clean shutdown (no scan
   expected), beside listing and stat-ing the same files.

The page cache is warm for the read benchmarks (the files were just written): they
measure CPU cost, not the disk. ``--quick`` uses 128 MiB instead of 1 GiB.
"""

from __future__ import annotations

import argparse
import bisect
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from protocol.records import SimpleRecord, build_batch, validate_records
from protocol.records.crc import crc32c
from protocol.values import TopicPartition
from storage.clock import SystemClock
from storage.config import LogConfig, LogManagerConfig
from storage.log import Log
from storage.log_manager import LogManager
from storage.segment import LogSegment

MiB = 1 << 20


def batch_of(size: int, record_size: int = 1024) -> bytearray:
    """An uncompressed batch of about ``size`` bytes made of ``record_size`` records."""
    n = max(1, size // (record_size + 10))
    value = os.urandom(record_size)
    return build_batch(
        [SimpleRecord(None, value, timestamp=1_700_000_000_000 + i) for i in range(n)]
    )


def best_of(rounds: int, fn: Callable[[], float]) -> float:
    return min(fn() for _ in range(rounds))


def bench_append(
    root: str, total: int, batch_size: int, prevalidated: bool = False
) -> tuple[float, float]:
    """MB/s of both writers. They take turns, 8 MiB at a time, so that both meet the
    same page-cache and writeback conditions (the kernel throttles writers once dirty
    pages pile up, which would otherwise punish whichever runs second).
    ``prevalidated``: append as the broker's produce path does, records its request
    validation has already checked (the log then does not check them again)."""
    batch = batch_of(batch_size)
    view = memoryview(batch)
    records = validate_records(view, from_client=True) if prevalidated else view
    per_turn = max(1, 8 * MiB // len(batch))
    turns = max(1, total // (per_turn * len(batch)))
    config = LogConfig(max_message_bytes=4 * MiB)
    plain_path = os.path.join(root, "plain.bin")
    fd = os.open(plain_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    log_path = os.path.join(root, "t-0")
    lg = Log.open(log_path, TopicPartition("t", 0), config, SystemClock())
    plain_s = log_s = 0.0
    for _ in range(turns):
        start = time.perf_counter()
        for _ in range(per_turn):
            os.write(fd, batch)
        plain_s += time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(per_turn):
            lg.append(records, leader_epoch=0)
        log_s += time.perf_counter() - start
    os.close(fd)
    lg.close()
    os.unlink(plain_path)
    shutil.rmtree(log_path)
    mb = turns * per_turn * len(batch) / 1e6
    return mb / plain_s, mb / log_s


def build_big_log(root: str, total: int) -> Log:
    path = os.path.join(root, "big-0")
    config = LogConfig(segment_bytes=2**31 - 1, max_message_bytes=4 * MiB)
    lg = Log.open(path, TopicPartition("big", 0), config, SystemClock())
    batch = memoryview(batch_of(16 * 1024))
    for _ in range(total // len(batch)):
        lg.append(batch, leader_epoch=0)
    return lg


def bench_lookups(lg: Log, n: int) -> tuple[float, float]:
    rng = random.Random(1)
    targets = [rng.randrange(lg.log_start_offset, lg.log_end_offset) for _ in range(n)]
    bases = [h.base_offset for _, _, h in lg.iter_batch_headers(0)]
    start = time.perf_counter()
    for t in targets:
        bisect.bisect_right(bases, t)
    baseline = n / (time.perf_counter() - start)
    start = time.perf_counter()
    for t in targets:
        region = lg.read(t, 1)
        assert region is not None
    measured = n / (time.perf_counter() - start)
    return baseline, measured


def bench_recovery(lg: Log) -> tuple[float, float, int]:
    seg = lg.active_segment
    size = seg.size
    fd = os.open(seg.log_path, os.O_RDONLY)
    buf = bytearray(8 * MiB)
    view = memoryview(buf)

    def baseline() -> float:
        start = time.perf_counter()
        pos = 0
        while pos < size:
            got = os.preadv(fd, [view], pos)
            crc32c(view[:got])
            pos += got
        return time.perf_counter() - start

    base = best_of(2, baseline)
    os.close(fd)
    start = time.perf_counter()
    result = seg.recover()
    measured = time.perf_counter() - start
    assert result.truncated_bytes == 0
    return size / 1e6 / base, size / 1e6 / measured, result.batches


def bench_startup(root: str, partitions: int) -> tuple[float, float, int]:
    d = os.path.join(root, "startup")
    config = LogManagerConfig(log_dirs=(d,), default=LogConfig())
    lm = LogManager(config, SystemClock())
    lm.load_logs()
    batch = batch_of(4096, 100)
    for p in range(partitions):
        lg = lm.get_or_create_log(TopicPartition(f"topic{p % 20}", p // 20))
        for _ in range(5):
            lg.append(memoryview(bytearray(batch)), leader_epoch=0)
    lm.shutdown()

    start = time.perf_counter()
    files = 0
    for name in os.listdir(d):
        sub = os.path.join(d, name)
        if os.path.isdir(sub):
            for f in os.listdir(sub):
                os.stat(os.path.join(sub, f))
                files += 1
    baseline = time.perf_counter() - start

    scans = 0
    original = LogSegment.recover

    def counting(self: LogSegment, min_offset: int | None = None):  # type: ignore[no-untyped-def]
        nonlocal scans
        scans += 1
        return original(self, min_offset)

    LogSegment.recover = counting  # type: ignore[method-assign]
    try:
        lm = LogManager(config, SystemClock())
        start = time.perf_counter()
        lm.load_logs()
        measured = time.perf_counter() - start
    finally:
        LogSegment.recover = original  # type: ignore[method-assign]
    assert len(lm.all_logs()) == partitions
    lm.shutdown()
    return baseline, measured, scans


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="128 MiB instead of 1 GiB")
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    total = 128 * MiB if args.quick else 1024 * MiB
    root = tempfile.mkdtemp(prefix="bench-storage-", dir=args.dir)
    try:
        print(f"storage benchmarks in {root} ({total // MiB} MiB)")
        for size, label in ((MiB, "1 MiB"), (16 * 1024, "16 KiB")):
            for prevalidated, path in ((False, "Log.append"), (True, "broker path")):
                base, logged = bench_append(root, min(total, 512 * MiB), size, prevalidated)
                print(
                    f"append {label:>6} batches: {path:<11} {logged:8.0f} MB/s | plain "
                    f"os.write {base:8.0f} MB/s | ratio {logged / base:.2f} (target >= 0.8)"
                )
        print(
            "(broker path: Log.append(ValidatedRecords), as produce calls it after the "
            "request's validation checked the batch)"
        )
        lg = build_big_log(root, total)
        log_mib = lg.size_in_bytes / MiB
        print(f"built a {log_mib:.0f} MiB log of 16 KiB batches ({lg.log_end_offset} records)")
        base, measured = bench_lookups(lg, 20_000)
        print(f"offset lookups: Log.read {measured:10.0f}/s | in-memory bisect {base:10.0f}/s")
        base, measured, batches = bench_recovery(lg)
        print(
            f"recovery scan ({batches} batches, CRC each): {measured:6.0f} MB/s | "
            f"read + CRC-32C only {base:6.0f} MB/s (target >= 500)"
        )
        lg.close()
        base, measured, scans = bench_startup(root, 1000)
        print(
            f"startup, 1000 partitions after a clean shutdown: {measured * 1000:6.0f} ms, "
            f"{scans} segment scans | listdir + stat of the files {base * 1000:6.0f} ms"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
