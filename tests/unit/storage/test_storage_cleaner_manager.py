"""The cleaner manager: which log is cleaned, the checkpoint, uncleanable logs, the
I/O throttle, compact,delete, and an idempotent producer that carries on after a pass."""

from __future__ import annotations

import os
from pathlib import Path

from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from protocol.values import TopicPartition
from storage.checkpoint import read_offset_checkpoint
from storage.cleaner_manager import (
    CLEANER_CHECKPOINT,
    Section,
    Throttler,
    choose,
    cleanable_section,
)
from storage.clock import MockClock
from storage.config import LogConfig, LogManagerConfig
from storage.log import Log
from storage.log_manager import LogManager
from tests.unit.storage.test_storage_cleaner import consumer_view, read_log

A0 = TopicPartition("a", 0)
B0 = TopicPartition("b", 0)
COMPACT = LogConfig(segment_bytes=400, index_interval_bytes=100, cleanup_policy="compact")
SEGMENTS = [(0, 100, 1_000), (10, 100, 2_000), (20, 100, 3_000), (30, 50, 9_000)]


def section(**kw: object) -> Section:
    args: dict[str, object] = dict(
        log_start_offset=0, log_end_offset=35, checkpoint=None, high_watermark=35,
        now_ms=10_000, min_lag_ms=0, max_lag_ms=1 << 63,
    )  # fmt: skip
    args.update(kw)
    return cleanable_section(SEGMENTS, **args)  # type: ignore[arg-type]


def test_the_dirty_section_runs_from_the_checkpoint_to_the_active_segment() -> None:
    s = section(checkpoint=10)
    assert (s.first_dirty, s.first_uncleanable, s.clean_bytes, s.dirty_bytes) == (10, 30, 100, 200)
    assert s.dirty_ratio == 200 / 300
    assert section().first_dirty == 0
    assert section(checkpoint=99).first_dirty == 0  # beyond the log end: truncated since


def test_the_high_watermark_and_the_compaction_lag_bound_the_section() -> None:
    assert section(high_watermark=15).first_uncleanable == 15
    # the segment newest at 2_000 is 8 s old: within an 8.5 s lag, so cleaning stops there
    s = section(min_lag_ms=8_500)
    assert (s.first_uncleanable, s.dirty_bytes) == (10, 100)


def test_max_compaction_lag_forces_a_log() -> None:
    assert not section().forced
    assert section(max_lag_ms=5_000).forced  # the oldest dirty record is 9 s old
    assert not section(max_lag_ms=9_500).forced


def test_choose_takes_forced_logs_then_the_dirtiest_over_its_ratio() -> None:
    low = Section(0, 10, 90, 10, False)
    high = Section(0, 10, 10, 90, False)
    forced = Section(0, 10, 99, 1, True)
    assert choose([(A0, low, 0.5), (B0, high, 0.5)]) == B0
    assert choose([(A0, low, 0.5)]) is None
    assert choose([(A0, low, 0.05)]) == A0
    assert choose([(A0, high, 0.5), (B0, forced, 0.5)]) == B0
    assert choose([(A0, Section(5, 5, 100, 0, True), 0.0)]) is None  # nothing dirty


def test_the_throttler_sleeps_the_time_the_rate_asks_for() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    throttle = Throttler(1_000, lambda: now[0], sleep)
    throttle(500)
    assert slept == [0.5]
    now[0] += 2.0  # idle for a while: the next bytes go at once
    throttle(100)
    assert slept == [0.5]


def keyed(key: int, value: bytes | None, ts: int = 1_000, **kw: object) -> bytes:
    return bytes(build_batch([SimpleRecord(b"k%d" % key, value, (), ts)], **kw))  # type: ignore[arg-type]


def manager(path: Path, clock: MockClock | None = None) -> LogManager:
    lm = LogManager(LogManagerConfig(log_dirs=(str(path),), default=COMPACT), clock or MockClock())
    lm.load_logs()
    return lm


def overwrite(lg: Log, rounds: int, keys: int = 4) -> None:
    for r in range(rounds):
        for k in range(keys):
            lg.append(keyed(k, b"v%d" % r), leader_epoch=0)
    lg.roll()
    lg.update_high_watermark(lg.log_end_offset)


def test_the_cleaner_cleans_compacted_logs_and_checkpoints_how_far(tmp_path: Path) -> None:
    lm = manager(tmp_path)
    compacted = lm.get_or_create_log(A0, overrides={"cleanup.policy": "compact"})
    plain = lm.get_or_create_log(B0, overrides={"cleanup.policy": "delete"})
    for lg in (compacted, plain):
        overwrite(lg, 10)
    plain_before = read_log(plain)
    assert lm.cleaner.dirty_ratios() == {A0: 1.0}
    lm.cleaner.run_until_idle()
    assert lm.cleaner.metrics.passes == 1
    assert [r[2] for r in read_log(compacted)] == [b"v9"] * 4
    assert read_log(plain) == plain_before
    checkpoint = read_offset_checkpoint(str(tmp_path / CLEANER_CHECKPOINT))
    assert checkpoint == {A0: compacted.active_segment.base_offset}
    assert lm.cleaner.dirty_ratios() == {A0: 0.0}
    assert not lm.cleaner.clean_next()  # nothing dirty left
    lm.delete_log(A0)
    assert lm.cleaner.checkpoint(lm.get_or_create_log(A0)) is None  # re-created: all dirty
    lm.shutdown()


def test_a_log_the_cleaner_fails_on_is_marked_uncleanable_once(tmp_path: Path) -> None:
    lm = manager(tmp_path)
    lg = lm.get_or_create_log(A0, overrides={"cleanup.policy": "compact"})
    overwrite(lg, 10)
    first = lg.segments[0]
    with open(first.log_path, "r+b") as f:  # a flipped bit inside a record
        f.seek(70)
        byte = f.read(1)
        f.seek(70)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert lm.cleaner.clean_next()
    assert A0 in lm.cleaner.uncleanable
    assert not lm.cleaner.clean_next()  # not retried
    assert lm.cleaner.metrics.passes == 0
    lm.shutdown()


def test_compact_delete_both_compacts_and_deletes_by_retention(tmp_path: Path) -> None:
    clock = MockClock()
    lm = manager(tmp_path, clock)
    lg = lm.get_or_create_log(
        A0, overrides={"cleanup.policy": "compact,delete", "retention.ms": "60000"}
    )
    for r in range(10):
        for k in range(4):
            lg.append(keyed(k, b"v%d" % r), leader_epoch=0)
    size_before = lg.size_in_bytes
    lg.roll()
    lg.update_high_watermark(lg.log_end_offset)
    lm.cleaner.run_until_idle()
    assert [r[2] for r in read_log(lg)] == [b"v9"] * 4
    assert lg.size_in_bytes < size_before / 2
    # timestamps are 1_000 ms since the epoch: long past retention.ms
    lg.append(keyed(0, b"new", clock.time_ms()), leader_epoch=0)
    lg.update_high_watermark(lg.log_end_offset)
    assert lm.cleanup_logs() >= 1
    assert consumer_view(lg) == {b"k0": b"new"}
    lm.shutdown()


def test_an_idempotent_producer_carries_on_after_compaction(tmp_path: Path) -> None:
    lm = manager(tmp_path)
    lg = lm.get_or_create_log(A0, overrides={"cleanup.policy": "compact"})
    producer = dict(producer_id=7, producer_epoch=0)
    for seq in range(20):
        lg.append(keyed(0, b"v%d" % seq, base_sequence=seq, **producer), leader_epoch=0)
    lg.roll()
    lg.append(keyed(1, b"other"), leader_epoch=0)  # another writer after it
    lg.roll()
    lg.update_high_watermark(lg.log_end_offset)
    lm.cleaner.run_until_idle()
    assert [r[2] for r in read_log(lg)] == [b"v19", b"other"]
    lm.shutdown()
    for name in os.listdir(lg.directory):  # no snapshot: state rebuilt from the batches
        if name.endswith(".snapshot"):
            os.unlink(os.path.join(lg.directory, name))
    reopened = Log.open(lg.directory, A0, COMPACT, MockClock(), clean_shutdown=False)
    info = reopened.append(keyed(0, b"v20", base_sequence=20, **producer), leader_epoch=0)
    assert not info.duplicate
    retry = reopened.append(keyed(0, b"v20", base_sequence=20, **producer), leader_epoch=0)
    assert retry.duplicate
    reopened.close()


def test_the_cleaner_keeps_the_last_batch_of_each_producer_even_when_emptied(
    tmp_path: Path,
) -> None:
    lm = manager(tmp_path)
    lg = lm.get_or_create_log(A0, overrides={"cleanup.policy": "compact"})
    lg.append(keyed(0, b"old", producer_id=7, producer_epoch=0, base_sequence=0), leader_epoch=0)
    lg.append(keyed(0, b"new"), leader_epoch=0)
    lg.roll()
    lg.update_high_watermark(lg.log_end_offset)
    lm.cleaner.run_until_idle()
    headers = [h for _, _, h in lg.iter_batch_headers(0)]
    assert [(h.base_offset, h.records_count, h.producer_id) for h in headers] == [
        (0, 0, 7),
        (1, 1, -1),
    ]
    lm.shutdown()
