"""Log: appends, rolls, reads, lookups, truncation, retention, DeleteRecords, flush."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

import pytest
from storage_helpers import SMALL, TP, all_batches, make_batch, open_log

from protocol.errors import ErrorCode
from protocol.records.batch import read_header, set_crc
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from storage.clock import MockClock
from storage.config import LogConfig
from storage.errors import (
    CorruptRecordError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    RecordValidationError,
)
from storage.log import Log


@pytest.fixture
def clock() -> MockClock:
    return MockClock(time_ms=1_000_000)


def log_files(lg: Log, suffix: str = ".log") -> list[str]:
    return sorted(n for n in os.listdir(lg.directory) if n.endswith(suffix))


# -- appends ------------------------------------------------------------------------------


def test_append_assigns_offsets_and_stamps_the_leader_epoch(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    first = lg.append(make_batch(3, base_offset=777), leader_epoch=5)
    second = lg.append(make_batch(2) + make_batch(4), leader_epoch=5)
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset, second.records_count) == (3, 8, 6)
    assert lg.log_end_offset == 9
    headers = [read_header(b[2]) for b in all_batches(lg)]
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 5), (3, 5), (5, 5)]
    assert lg.epoch_cache.entries == [(5, 0)]
    lg.close()


def test_append_accepts_a_writable_buffer_and_rewrites_it_in_place(
    tmp_path: os.PathLike[str],
) -> None:
    lg = open_log(str(tmp_path))
    lg.append(make_batch(1), leader_epoch=0)
    buf = bytearray(make_batch(2))
    lg.append(memoryview(buf), leader_epoch=0)
    assert read_header(buf).base_offset == 1
    lg.close()


def resealed(data: bytes) -> bytes:
    """``data`` with its CRC recomputed, so only the damage to the header shows."""
    out = bytearray(data)
    set_crc(out, 0, len(out))
    return bytes(out)


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (lambda b: b[:-1], CorruptRecordError),  # truncated
        (lambda b: b[:30] + bytes([b[30] ^ 1]) + b[31:], CorruptRecordError),  # CRC mismatch
        (lambda b: b[:16] + b"\x01" + b[17:], InvalidRecordError),  # magic 1
        (lambda b: b"\x00" * 5, CorruptRecordError),  # a few stray bytes
        (lambda b: resealed(b[:57] + (9).to_bytes(4, "big") + b[61:]), InvalidRecordError),
    ],
    ids=["truncated", "crc", "magic1", "stray-bytes", "records-count"],
)
def test_invalid_batches_are_refused_whole_and_leave_the_log_unchanged(
    tmp_path: os.PathLike[str],
    damage: Callable[[bytes], bytes],
    error: type[Exception],
) -> None:
    lg = open_log(str(tmp_path))
    lg.append(make_batch(2), leader_epoch=0)
    size = lg.size_in_bytes
    with pytest.raises(error):
        lg.append(make_batch(1) + damage(make_batch(3)), leader_epoch=0)
    assert lg.size_in_bytes == size and lg.log_end_offset == 2
    lg.close()


def test_empty_append_is_refused(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    with pytest.raises(InvalidRecordError):
        lg.append(b"", leader_epoch=0)
    lg.close()


def test_record_count_must_match_offsets(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    bad = bytearray(make_batch(3))
    bad[57:61] = (5).to_bytes(4, "big")  # records_count, inside the CRC range
    from protocol.records.batch import set_crc

    set_crc(bad, 0, len(bad))
    with pytest.raises(InvalidRecordError):
        lg.append(bad, leader_epoch=0)
    lg.close()


def test_control_batches_from_clients_are_refused(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    with pytest.raises(InvalidRecordError):
        lg.append(make_batch(1, attributes=0x20), leader_epoch=0)
    lg.close()


def test_batch_above_max_message_bytes_is_refused(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path), dataclasses.replace(SMALL, max_message_bytes=100))
    with pytest.raises(RecordTooLargeError) as info:
        lg.append(make_batch([b"x" * 200]), leader_epoch=0)
    assert info.value.error_code == 10
    lg.close()


def test_log_append_time_is_stamped(tmp_path: os.PathLike[str], clock: MockClock) -> None:
    config = dataclasses.replace(SMALL, message_timestamp_type="LogAppendTime")
    lg = open_log(str(tmp_path), config, clock)
    info = lg.append(make_batch(2, timestamp=5), leader_epoch=0)
    assert info.log_append_time == clock.time_ms()
    header = read_header(all_batches(lg)[0][2])
    assert header.is_log_append_time and header.max_timestamp == clock.time_ms()
    lg.close()
    # The rewritten CRC is valid: a full recovery keeps the batch.
    lg = open_log(str(tmp_path), config, clock, clean_shutdown=False)
    assert lg.log_end_offset == 2
    lg.close()


def test_follower_append_keeps_offsets_and_epochs(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    lg.append_as_follower(make_batch(3, base_offset=0, leader_epoch=1))
    lg.append_as_follower(make_batch(2, base_offset=3, leader_epoch=4))
    assert lg.log_end_offset == 5
    assert lg.epoch_cache.entries == [(1, 0), (4, 3)]
    with pytest.raises(InvalidRecordError):
        lg.append_as_follower(make_batch(1, base_offset=2, leader_epoch=4))
    lg.close()


def test_follower_append_writes_the_fetched_bytes_as_they_are(
    tmp_path: os.PathLike[str],
) -> None:
    lg = open_log(str(tmp_path))
    first = make_batch(3, base_offset=0, leader_epoch=1)
    second = make_batch(2, base_offset=3, leader_epoch=1)
    fetched = bytes(first + second)  # read-only, like a fetch response's records
    lg.append_as_follower(memoryview(fetched))
    lg.flush()
    with open(os.path.join(lg.directory, log_files(lg)[0]), "rb") as f:
        assert f.read() == fetched
    lg.close()


# -- rolling ------------------------------------------------------------------------------


def test_roll_on_segment_bytes(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for _ in range(40):
        lg.append(make_batch(3), leader_epoch=0)
    assert len(lg.segments) > 1
    for seg in lg.segments:
        assert seg.size <= SMALL.segment_bytes
    for a, b in zip(lg.segments, lg.segments[1:]):
        assert a.next_offset == b.base_offset
    # Every rolled segment left a producer snapshot at the new base and trimmed indexes.
    snapshots = log_files(lg, ".snapshot")
    assert [f"{s.base_offset:020d}.snapshot" for s in lg.segments[1:]] == snapshots
    for seg in lg.segments[:-1]:
        assert os.path.getsize(seg.offset_index.path) == seg.offset_index.entries * 8
    lg.close()


def test_roll_on_segment_ms_by_record_timestamps(
    tmp_path: os.PathLike[str], clock: MockClock
) -> None:
    config = dataclasses.replace(SMALL, segment_bytes=1 << 20, segment_ms=1_000)
    lg = open_log(str(tmp_path), config, clock)
    lg.append(make_batch(1, timestamp=10_000), leader_epoch=0)
    lg.append(make_batch(1, timestamp=11_000), leader_epoch=0)  # exactly segment.ms: stays
    assert len(lg.segments) == 1
    lg.append(make_batch(1, timestamp=11_001), leader_epoch=0)
    assert [s.base_offset for s in lg.segments] == [0, 2]
    lg.close()


def test_segment_jitter_ms_rolls_a_segment_early(
    tmp_path: os.PathLike[str], clock: MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("storage.log.random.random", lambda: 0.5)  # half the jitter
    config = dataclasses.replace(
        SMALL, segment_bytes=1 << 20, segment_ms=1_000, segment_jitter_ms=400
    )
    lg = open_log(str(tmp_path), config, clock)
    lg.append(make_batch(1, timestamp=10_000), leader_epoch=0)
    lg.append(make_batch(1, timestamp=10_800), leader_epoch=0)  # 800 = 1000 - 200: stays
    assert len(lg.segments) == 1
    lg.append(make_batch(1, timestamp=10_801), leader_epoch=0)
    assert [s.base_offset for s in lg.segments] == [0, 2]
    lg.close()


def test_each_segment_draws_its_own_jitter_and_config_changes_apply(
    tmp_path: os.PathLike[str], clock: MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The jittered segment.ms follows each roll's draw and each config change."""
    draws = iter([0.5, 0.0, 0.0])
    monkeypatch.setattr("storage.log.random.random", lambda: next(draws))
    config = dataclasses.replace(
        SMALL, segment_bytes=1 << 20, segment_ms=1_000, segment_jitter_ms=400
    )
    lg = open_log(str(tmp_path), config, clock)
    lg.append(make_batch(1, timestamp=10_000), leader_epoch=0)
    lg.append(make_batch(1, timestamp=10_801), leader_epoch=0)  # 1000 - 200: rolls
    assert [s.base_offset for s in lg.segments] == [0, 1]
    lg.append(make_batch(1, timestamp=11_801), leader_epoch=0)  # no jitter now: stays
    assert [s.base_offset for s in lg.segments] == [0, 1]
    lg.update_config(dataclasses.replace(config, segment_ms=500))
    lg.append(make_batch(1, timestamp=11_302), leader_epoch=0)  # 501 > 500: rolls
    assert [s.base_offset for s in lg.segments] == [0, 1, 3]
    lg.close()


def test_roll_on_segment_ms_by_wall_clock_without_timestamps(
    tmp_path: os.PathLike[str], clock: MockClock
) -> None:
    config = dataclasses.replace(SMALL, segment_bytes=1 << 20, segment_ms=1_000)
    lg = open_log(str(tmp_path), config, clock)
    lg.append(make_batch(1, timestamp=-1, ts_step=0), leader_epoch=0)
    clock.advance(1_001)
    lg.append(make_batch(1, timestamp=-1, ts_step=0), leader_epoch=0)
    assert len(lg.segments) == 2
    lg.close()


def test_roll_when_the_index_is_full(tmp_path: os.PathLike[str]) -> None:
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=1, segment_index_bytes=32)
    lg = open_log(str(tmp_path), config)
    for _ in range(12):
        lg.append(make_batch(1), leader_epoch=0)
    assert len(lg.segments) >= 2
    assert all(s.offset_index.entries <= 4 for s in lg.segments)
    lg.close()


def test_per_topic_override_changes_roll(tmp_path: os.PathLike[str]) -> None:
    config = LogConfig().with_overrides({"segment.bytes": "500", "retention.ms": "10"})
    assert config.segment_bytes == 500 and config.retention_ms == 10
    lg = open_log(str(tmp_path), config)
    for _ in range(10):
        lg.append(make_batch(3), leader_epoch=0)
    assert len(lg.segments) >= 2
    lg.close()


# -- reads and lookups ----------------------------------------------------------------------


def test_read_at_every_offset_and_out_of_range(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for _ in range(40):
        lg.append(make_batch(3), leader_epoch=0)
    batches = all_batches(lg)
    for base, last, data in batches:
        for off in range(base, last + 1):
            got = lg.read_bytes(off, 1)
            assert got == data, off
    assert lg.read(lg.log_end_offset, 100) is None
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(lg.log_end_offset + 1, 100)
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(-1, 100)
    lg.close()


def test_read_is_capped_at_max_offset(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for _ in range(40):
        lg.append(make_batch(3), leader_epoch=0)
    batches = all_batches(lg)
    hw = batches[5][0]
    data = lg.read_bytes(0, 1 << 20, max_offset=hw)
    assert data == b"".join(b[2] for b in batches[:5])
    assert lg.read(hw, 1 << 20, max_offset=hw) is None
    # A high watermark in a later segment does not cap the first one.
    first_seg_bytes = lg.segments[0].size
    assert len(lg.read_bytes(0, 1 << 20, max_offset=lg.log_end_offset - 1)) == first_seg_bytes
    lg.close()


def test_fetch_offset_by_timestamp(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for i in range(40):
        lg.append(make_batch(3, timestamp=1_000 + 10 * i, ts_step=3), leader_epoch=2)
    # Record i of batch b has timestamp 1000 + 10 b + 3 i, offset 3 b + i.
    assert lg.fetch_offset_by_timestamp(1_000).offset == 0
    hit = lg.fetch_offset_by_timestamp(1_004)  # between records: the next record
    assert hit is not None and (hit.offset, hit.timestamp) == (2, 1_006)
    hit = lg.fetch_offset_by_timestamp(1_007)  # after the batch's last record
    assert hit is not None and (hit.offset, hit.timestamp, hit.leader_epoch) == (3, 1_010, 2)
    assert lg.fetch_offset_by_timestamp(0).offset == 0
    assert lg.fetch_offset_by_timestamp(5_000) is None
    assert lg.fetch_offset_by_timestamp(LATEST_TIMESTAMP).offset == 120
    assert lg.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).offset == 0
    top = lg.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert top is not None and (top.timestamp, top.offset) == (1_396, 119)
    lg.close()


# -- truncation ----------------------------------------------------------------------------


def test_truncate_to_across_segments(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for i in range(40):
        lg.append(make_batch(3), leader_epoch=i // 10)
    batches = all_batches(lg)
    target = lg.segments[1].base_offset + 6
    assert lg.truncate_to(target)
    assert lg.log_end_offset == target
    assert all_batches(lg) == [b for b in batches if b[1] < target]
    assert lg.epoch_cache.latest_epoch == (target // 3 - 1) // 10
    assert len(lg.segments) == 2
    assert not lg.truncate_to(target + 5)  # at or past the end: nothing to do
    info = lg.append(make_batch(1), leader_epoch=9)
    assert info.first_offset == target
    lg.close()


def test_truncate_to_the_log_end_drops_an_epoch_that_starts_there(
    tmp_path: os.PathLike[str],
) -> None:
    # A leader of epoch 3 that appended nothing: the epoch starts at the log end. As a
    # follower of a leader that never had epoch 3 it must forget it, or it would ask
    # the leader for epoch 3 again and again.
    lg = open_log(str(tmp_path))
    lg.append(make_batch(2), leader_epoch=1)
    lg.epoch_cache.assign(3, lg.log_end_offset)
    assert not lg.truncate_to(lg.log_end_offset)  # no record removed
    assert lg.epoch_cache.entries == [(1, 0)]
    lg.close()


def test_truncate_to_a_segment_base_removes_that_segment(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for _ in range(40):
        lg.append(make_batch(3), leader_epoch=0)
    base = lg.segments[1].base_offset
    lg.truncate_to(base)
    assert lg.log_end_offset == base and lg.segments[-1].base_offset == 0
    lg.close()


def test_truncate_fully(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for _ in range(40):
        lg.append(make_batch(3), leader_epoch=0)
    lg.truncate_fully_and_start_at(500)
    assert (lg.log_start_offset, lg.log_end_offset) == (500, 500)
    assert [s.base_offset for s in lg.segments] == [500]
    assert lg.append(make_batch(1), leader_epoch=1).first_offset == 500
    lg.close()


# -- retention and DeleteRecords -------------------------------------------------------------


def filled_log(path: str, clock: MockClock, config: LogConfig = SMALL, batches: int = 40) -> Log:
    lg: Log = open_log(path, config, clock)
    for i in range(batches):
        lg.append(make_batch(3, timestamp=clock.time_ms() - 100_000 + i), leader_epoch=0)
    lg.update_high_watermark(lg.log_end_offset)
    return lg


def test_retention_by_size_keeps_the_newest(tmp_path: os.PathLike[str], clock: MockClock) -> None:
    lg = filled_log(str(tmp_path), clock, dataclasses.replace(SMALL, retention_bytes=2_000))
    sizes = [s.size for s in lg.segments]
    deleted = lg.delete_old_segments()
    assert deleted >= 1
    assert lg.size_in_bytes >= 2_000 - max(sizes)
    assert sum(sizes) - lg.size_in_bytes == sum(sizes[:deleted])
    assert lg.log_start_offset == lg.segments[0].base_offset
    lg.close()


def test_retention_by_time_rolls_an_expired_active_segment(
    tmp_path: os.PathLike[str], clock: MockClock
) -> None:
    lg = filled_log(str(tmp_path), clock, dataclasses.replace(SMALL, retention_ms=50_000))
    count = len(lg.segments)
    leo = lg.log_end_offset
    assert lg.delete_old_segments() == count
    assert [s.base_offset for s in lg.segments] == [leo]
    assert lg.log_start_offset == leo == lg.log_end_offset
    lg.close()


def test_retention_by_time_keeps_young_segments(
    tmp_path: os.PathLike[str], clock: MockClock
) -> None:
    lg = filled_log(str(tmp_path), clock, dataclasses.replace(SMALL, retention_ms=200_000))
    assert lg.delete_old_segments() == 0
    lg.close()


def test_retention_only_below_the_high_watermark(
    tmp_path: os.PathLike[str], clock: MockClock
) -> None:
    lg = filled_log(str(tmp_path), clock, dataclasses.replace(SMALL, retention_ms=1))
    lg.update_high_watermark(lg.segments[1].base_offset + 1)
    assert lg.delete_old_segments() == 1
    lg.close()


def test_compact_only_topics_are_not_deleted_by_time(
    tmp_path: os.PathLike[str], clock: MockClock
) -> None:
    lg = filled_log(str(tmp_path), clock)  # keyless records, written before the change
    lg.update_config(dataclasses.replace(SMALL, retention_ms=1, cleanup_policy="compact"))
    assert lg.delete_old_segments() == 0
    lg.close()


def test_a_compacted_topic_refuses_records_without_a_key(
    tmp_path: os.PathLike[str], clock: MockClock
) -> None:
    config = dataclasses.replace(SMALL, cleanup_policy="compact,delete")
    lg = open_log(str(tmp_path), config, clock)
    keyed = build_batch([SimpleRecord(b"k", b"v"), SimpleRecord(b"k2", None)])
    keyless = build_batch([SimpleRecord(b"k", b"v"), SimpleRecord(None, b"v")])
    assert lg.append(bytes(keyed), leader_epoch=0).records_count == 2
    with pytest.raises(InvalidRecordError, match="message without key"):
        lg.append(bytes(keyless), leader_epoch=0)
    assert lg.log_end_offset == 2
    lg.close()


def test_a_compacted_topic_names_exactly_the_keyless_records(
    tmp_path: os.PathLike[str], clock: MockClock
) -> None:
    config = dataclasses.replace(SMALL, cleanup_policy="compact")
    lg = open_log(str(tmp_path), config, clock)
    keyless = {1, 4, 5, 9}
    batch = build_batch(
        [SimpleRecord(None if i in keyless else b"k%d" % i, b"v") for i in range(10)]
    )
    with pytest.raises(RecordValidationError) as refused:
        lg.append(bytes(batch), leader_epoch=0)
    why = f"Compacted topic cannot accept message without key in topic partition {TP}."
    assert refused.value.record_errors == [(i, why) for i in sorted(keyless)]
    assert refused.value.error_code == ErrorCode.INVALID_RECORD
    assert str(refused.value) == (
        "One or more records have been rejected due to 4 record errors in total, and only "
        "showing the first three errors at most: ["
        f"RecordError(batchIndex=1, message='{why}'), "
        f"RecordError(batchIndex=4, message='{why}'), "
        f"RecordError(batchIndex=5, message='{why}')]"
    )
    assert lg.log_end_offset == 0  # the whole batch refused
    lg.close()


def test_delete_records_moves_the_log_start(tmp_path: os.PathLike[str], clock: MockClock) -> None:
    lg = filled_log(str(tmp_path), clock)
    target = lg.segments[2].base_offset + 4
    assert lg.increment_log_start_offset(target) == target
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(target - 1, 100)
    assert lg.read(target, 1) is not None
    assert lg.delete_old_segments() == 2  # the two segments wholly below it
    assert lg.log_start_offset == target
    with pytest.raises(OffsetOutOfRangeError):
        lg.increment_log_start_offset(lg.high_watermark + 1)
    lg.close()


def test_deleted_segments_stay_readable_until_the_delay(
    tmp_path: os.PathLike[str], clock: MockClock
) -> None:
    lg = filled_log(str(tmp_path), clock, dataclasses.replace(SMALL, retention_bytes=0))
    region = lg.read(0, 1 << 20)
    assert region is not None
    expected = region.read()
    lg.delete_old_segments()
    assert any(n.endswith(".log.deleted") for n in os.listdir(lg.directory))
    assert region.read() == expected  # a fetch in flight still reads its bytes
    assert lg.delete_due_segments() == 0
    clock.advance(SMALL.file_delete_delay_ms)
    assert lg.delete_due_segments() > 0
    assert not any(n.endswith(".deleted") for n in os.listdir(lg.directory))
    lg.close()


# -- flushing --------------------------------------------------------------------------------


def test_flush_moves_the_recovery_point(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for _ in range(5):
        lg.append(make_batch(2), leader_epoch=0)
    # Inline background: rolls flush at once; nothing rolled yet, so nothing flushed.
    assert lg.recovery_point == 0
    lg.flush()
    assert lg.recovery_point == 10
    lg.truncate_to(4)
    assert lg.recovery_point == 4
    lg.close()


def test_roll_flushes_the_old_segments_in_the_background(tmp_path: os.PathLike[str]) -> None:
    jobs: list[Callable[[], None]] = []
    lg = open_log(str(tmp_path), background=jobs.append)
    for _ in range(40):
        lg.append(make_batch(3), leader_epoch=0)
    assert jobs and lg.recovery_point == 0
    for job in jobs:
        job()
    assert lg.recovery_point == lg.segments[-1].base_offset
    lg.close()


def test_flush_messages_triggers_a_flush(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path), dataclasses.replace(SMALL, flush_messages=5))
    lg.append(make_batch(3), leader_epoch=0)
    assert lg.recovery_point == 0
    lg.append(make_batch(3), leader_epoch=0)
    assert lg.recovery_point == 6
    lg.close()


def test_partition_metadata_keeps_the_topic_id(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path), topic_id="AAAAAAAAAAAAAAAAAAAAAQ")
    lg.close()
    with open(os.path.join(tmp_path, "partition.metadata")) as f:
        assert f.read() == "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"
    lg = open_log(str(tmp_path))
    assert lg.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    lg.close()


def test_a_log_of_another_topic_id_is_refused(tmp_path: os.PathLike[str]) -> None:
    from storage.errors import InconsistentTopicIdError

    open_log(str(tmp_path), topic_id="AAAAAAAAAAAAAAAAAAAAAQ").close()
    with pytest.raises(InconsistentTopicIdError) as info:
        open_log(str(tmp_path), topic_id="BBBBBBBBBBBBBBBBBBBBBQ")
    assert info.value.error_code == 103


def test_a_flush_racing_a_truncation_does_not_raise_the_recovery_point(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """flush() runs in a worker thread; if the log is truncated while it fsyncs, the
    recovery point must not move past the new log end."""
    import threading

    from storage.segment import LogSegment

    lg = open_log(str(tmp_path))
    for _ in range(10):
        lg.append(make_batch(2), leader_epoch=0)
    entered, release = threading.Event(), threading.Event()
    original = LogSegment.flush

    def slow_flush(self: LogSegment) -> None:
        entered.set()
        assert release.wait(10)
        original(self)

    monkeypatch.setattr(LogSegment, "flush", slow_flush)
    worker = threading.Thread(target=lg.flush)
    worker.start()
    assert entered.wait(10)
    lg.truncate_to(6)  # on the "event loop" while the worker is inside fsync
    release.set()
    worker.join(10)
    assert not worker.is_alive()
    assert lg.log_end_offset == 6 and lg.recovery_point <= 6


def test_high_watermark_position_is_forgotten_after_truncation(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path), dataclasses.replace(SMALL, segment_bytes=1 << 20))
    for _ in range(10):
        lg.append(make_batch(2), leader_epoch=0)
    first = lg.read_bytes(0, 1 << 20, max_offset=10)
    assert first == lg.read_bytes(0, 1 << 20, max_offset=10)  # remembered, same answer
    lg.truncate_to(4)
    for _ in range(6):
        lg.append(make_batch([b"a much longer value than before"]), leader_epoch=1)
    again = lg.read_bytes(0, 1 << 20, max_offset=10)
    assert again == b"".join(b[2] for b in all_batches(lg)[:8])  # 2 old + 6 new batches
    assert again != first
    lg.close()


def test_nonsense_arguments_are_refused_without_touching_the_log(
    tmp_path: os.PathLike[str],
) -> None:
    lg = open_log(str(tmp_path))
    lg.append(make_batch(3), leader_epoch=0)
    lg.update_high_watermark(3)
    with pytest.raises(ValueError):
        lg.truncate_to(-1)
    with pytest.raises(ValueError):
        lg.truncate_fully_and_start_at(-5)
    with pytest.raises(OffsetOutOfRangeError):
        lg.increment_log_start_offset(-2)
    assert lg.read(0, -10, min_one_message=False) is None
    assert (lg.log_start_offset, lg.log_end_offset, len(all_batches(lg))) == (0, 3, 1)
    lg.close()


def test_rolled_segments_hold_no_index_descriptors_until_written_again(
    tmp_path: os.PathLike[str],
) -> None:
    lg = open_log(str(tmp_path))
    for _ in range(40):
        lg.append(make_batch(3), leader_epoch=0)
    sealed = lg.segments[:-1]
    assert all(s.offset_index._fd < 0 and s.time_index._fd < 0 for s in sealed)
    assert lg.read_bytes(3, 1)  # lookups still work through the mappings
    lg.close()
    lg = open_log(str(tmp_path), clean_shutdown=True)
    assert all(s.offset_index._fd < 0 for s in lg.segments[:-1])
    lg.truncate_to(lg.segments[0].next_offset - 3)  # the first segment is active again
    for _ in range(20):
        lg.append(make_batch(3), leader_epoch=0)
    reference = [b[:2] for b in all_batches(lg)]
    lg.close()
    lg = open_log(str(tmp_path), clean_shutdown=False)
    assert [b[:2] for b in all_batches(lg)] == reference
    lg.close()


def test_high_watermark_is_kept_between_log_start_and_log_end(
    tmp_path: os.PathLike[str],
) -> None:
    lg = open_log(str(tmp_path))
    for _ in range(5):
        lg.append(make_batch(2), leader_epoch=0)
    assert lg.update_high_watermark(4) == lg.high_watermark == 4
    assert lg.update_high_watermark(99) == lg.high_watermark == 10  # not above the end
    lg.increment_log_start_offset(6)
    assert lg.update_high_watermark(2) == lg.high_watermark == 6  # nor below the start
    lg.close()
