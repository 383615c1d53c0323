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
   found through the read-end memory), what every consumer fetch does;
4. (this revision only: the base has no transactions) a consumer reading a log of
   transactions, 10% of them aborted, from start to end in 1 MiB fetches: MB/s with
   read_committed (the read up to the LSO and the aborted transactions of the range)
   beside read_uncommitted.

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
from protocol.records.batch import iter_batches
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


def committed_read_rates(root: str, transactions: int) -> tuple[float, float]:
    """MB/s of read_committed and read_uncommitted consumers over a log of transactions
    of 10 one-record batches, every tenth aborted."""
    from protocol.records.control import ControlType, control_record
    from protocol.values import READ_COMMITTED

    path = tempfile.mkdtemp(dir=root)
    lg = Log.open(path, TopicPartition("t", 0), LogConfig(), SystemClock())
    seqs: dict[int, int] = {}
    for t in range(transactions):
        pid = 1000 + t % 8
        for _ in range(10):
            seq = seqs.get(pid, 0)
            seqs[pid] = seq + 1
            lg.append(
                build_batch(
                    [SimpleRecord(None, VALUE, timestamp=1)],
                    producer_id=pid,
                    producer_epoch=0,
                    base_sequence=seq,
                    is_transactional=True,
                ),
                leader_epoch=0,
            )
        kind = ControlType.ABORT if t % 10 == 9 else ControlType.COMMIT
        end = build_batch([control_record(kind, 0, 1)], producer_id=pid, producer_epoch=0,
                          is_control=True)  # fmt: skip
        lg.append(end, leader_epoch=0, from_coordinator=True)
        lg.update_high_watermark(lg.log_end_offset)
    rates = {True: 0.0, False: 0.0}
    for committed in (False, True, True, False, False, True):  # each kind's best of three
        start = time.process_time()
        offset, total = 0, 0
        while offset < lg.high_watermark:
            if committed:
                hw = lg.high_watermark
                region = lg.read(offset, 1 << 20, hw, isolation_level=READ_COMMITTED)
                if region is not None:
                    lg.aborted_transactions(offset, region)
            else:
                region = lg.read(offset, 1 << 20, lg.high_watermark)
            if region is None:
                break
            data = region.read()
            total += len(data)
            last = 0
            for _, h in iter_batches(data):
                last = h.next_offset
            offset = last
        rate = total / (time.process_time() - start) / 1e6
        rates[committed] = max(rates[committed], rate)
    lg.close()
    shutil.rmtree(path)
    return rates[True], rates[False]


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
        if hasattr(Log, "aborted_transactions"):
            committed, uncommitted = max(
                committed_read_rates(root, count // 40) for _ in range(args.rounds)
            )
            print(
                f"read_committed {committed:,.0f} MB/s, read_uncommitted {uncommitted:,.0f} "
                f"MB/s ({committed / uncommitted:.2f}x) over transactions, 10% aborted"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
