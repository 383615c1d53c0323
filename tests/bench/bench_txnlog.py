"""Non-transactional appends and reads through Log, for the transaction bookkeeping's cost.

    .venv/bin/python tests/bench/bench_txnlog.py [--quick] [--rounds N]

The log follows transactions on every append (one bit test per batch outside them) and
on every high-watermark move; this measures what producers and consumers that use no
transactions see, run beside the base revision with
``tests/bench/compare_revisions.py BASE tests/bench/bench_txnlog.py -- --quick``:

1. batches/s of Log.append, 1 KiB records, 1 record per batch (the per-batch cost is
   largest there), each append followed by the high-watermark move a single-replica
   partition makes: without a producer id, and from 8 idempotent producers;
2. the same with 10-record batches from idempotent producers (records/s);
3. reads/s of a consumer read at the high watermark (Log.read up to it, the batch
   found through the read-end memory), what every consumer fetch does.

Only APIs that exist before and after the transaction work are used, so the script
runs on both revisions. The batches are built before the clock starts. The clock is the
process's CPU time (user and system, the writes' system calls included), not the wall
clock: on a machine shared with other work the wall clock measures the neighbours.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from protocol.records import SimpleRecord, build_batch, validate_records
from protocol.records.validation import ValidatedRecords
from protocol.values import TopicPartition
from storage.clock import SystemClock
from storage.config import LogConfig
from storage.log import Log

VALUE = os.urandom(1024)


def batches(count: int, records: int, producers: int) -> list[ValidatedRecords]:
    """Pre-validated batches, as the produce path hands them to the log; with
    ``producers`` > 0, idempotent batches round-robin over that many producer ids."""
    out = []
    seqs = [0] * max(producers, 1)
    for i in range(count):
        fields: dict[str, int] = {}
        if producers:
            p = i % producers
            fields = {"producer_id": 1000 + p, "producer_epoch": 0, "base_sequence": seqs[p]}
            seqs[p] += records
        batch = build_batch(
            [SimpleRecord(None, VALUE, timestamp=1_700_000_000_000 + i) for _ in range(records)],
            **fields,  # type: ignore[arg-type]
        )
        out.append(validate_records(batch, from_client=True))
    return out


def append_rate(root: str, prepared: list[ValidatedRecords]) -> float:
    path = tempfile.mkdtemp(dir=root)
    lg = Log.open(path, TopicPartition("t", 0), LogConfig(), SystemClock())
    start = time.process_time()
    for records in prepared:
        lg.append(records, leader_epoch=0)
        lg.update_high_watermark(lg.log_end_offset)
    elapsed = time.process_time() - start
    lg.close()
    shutil.rmtree(path)
    return len(prepared) / elapsed


def read_rate(root: str, prepared: list[ValidatedRecords], reads: int) -> float:
    path = tempfile.mkdtemp(dir=root)
    lg = Log.open(path, TopicPartition("t", 0), LogConfig(), SystemClock())
    for records in prepared:
        lg.append(records, leader_epoch=0)
    lg.update_high_watermark(lg.log_end_offset)
    offsets = [lg.log_end_offset - 1 - (i % 64) for i in range(reads)]
    start = time.process_time()
    for offset in offsets:
        lg.read(offset, 1 << 20, lg.high_watermark)
    elapsed = time.process_time() - start
    lg.close()
    shutil.rmtree(path)
    return reads / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    count = 20_000 if args.quick else 100_000
    root = tempfile.mkdtemp(prefix="bench-txnlog-")
    try:
        plain = batches(count, 1, 0)
        idem = batches(count, 1, 8)
        idem10 = batches(count // 10, 10, 8)
        best = max(append_rate(root, plain) for _ in range(args.rounds))
        print(f"append 1-record batches, no producer id: {best:,.0f} batches/s")
        best = max(append_rate(root, idem) for _ in range(args.rounds))
        print(f"append 1-record batches, 8 idempotent producers: {best:,.0f} batches/s")
        best = max(append_rate(root, idem10) for _ in range(args.rounds)) * 10
        print(f"append 10-record batches, 8 idempotent producers: {best:,.0f} records/s")
        best = max(read_rate(root, plain[:2000], count) for _ in range(args.rounds))
        print(f"consumer reads at the high watermark: {best:,.0f} reads/s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
