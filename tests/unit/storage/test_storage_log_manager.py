"""LogManager: loading with and without a clean shutdown, checkpoints, create/delete,
per-topic overrides and the scheduled tasks."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

import pytest
from storage_helpers import SMALL, make_batch

from protocol.values import TopicPartition
from storage.checkpoint import read_offset_checkpoint
from storage.clock import MockClock
from storage.config import CleanerConfig, LogManagerConfig
from storage.errors import InvalidTopicError
from storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager
from storage.segment import LogSegment
from tests.polling import until

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
B0 = TopicPartition("b", 0)


def manager(dirs: list[str], clock: MockClock | None = None, **kw: object) -> LogManager:
    config = LogManagerConfig(log_dirs=tuple(dirs), default=SMALL, **kw)  # type: ignore[arg-type]
    lm = LogManager(config, clock or MockClock())
    lm.load_logs()
    return lm


def populate(lm: LogManager, batches: int = 30) -> dict[TopicPartition, int]:
    for tp in (A0, A1, B0):
        lg = lm.get_or_create_log(tp, topic_id=f"id-{tp.topic}")
        for _ in range(batches):
            lg.append(make_batch(3), leader_epoch=1)
        lg.update_high_watermark(lg.log_end_offset - 3)
    return {lg.tp: lg.log_end_offset for lg in lm.all_logs()}


def test_clean_shutdown_round_trip(tmp_path: os.PathLike[str]) -> None:
    d = str(tmp_path)
    lm = manager([d])
    ends = populate(lm)
    lm.get_log(A0).increment_log_start_offset(10)  # type: ignore[union-attr]
    lm.shutdown()
    assert os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE))
    assert read_offset_checkpoint(os.path.join(d, "recovery-point-offset-checkpoint")) == ends
    lm = manager([d], num_recovery_threads_per_data_dir=3)
    assert lm.had_clean_shutdown == {d: True}
    assert not os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE))  # removed once loaded
    assert {lg.tp: lg.log_end_offset for lg in lm.all_logs()} == ends
    a0 = lm.get_log(A0)
    assert a0 is not None
    assert (a0.log_start_offset, a0.high_watermark, a0.recovery_point) == (10, 87, 90)
    assert a0.topic_id == "id-a"
    lm.shutdown()


def test_unclean_shutdown_without_checkpoints_recovers_everything(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    d = str(tmp_path)
    lm = manager([d])
    populate(lm)
    lm.shutdown()
    os.unlink(os.path.join(d, CLEAN_SHUTDOWN_FILE))
    os.unlink(os.path.join(d, "recovery-point-offset-checkpoint"))
    recovered: list[int] = []
    original = LogSegment.recover

    def spy(self: LogSegment, min_offset: int | None = None):  # type: ignore[no-untyped-def]
        recovered.append(self.base_offset)
        return original(self, min_offset)

    monkeypatch.setattr(LogSegment, "recover", spy)
    lm = manager([d])
    segments = sum(len(lg.segments) for lg in lm.all_logs())
    assert len(recovered) == segments  # every segment of every log validated
    assert lm.had_clean_shutdown == {d: False}
    lm.shutdown()


@pytest.mark.parametrize("content", ["garbage", "0\n5\na 0 1\n", ""])
def test_corrupt_checkpoints_mean_full_recovery_not_a_crash(
    tmp_path: os.PathLike[str], content: str
) -> None:
    d = str(tmp_path)
    lm = manager([d])
    ends = populate(lm)
    lm.shutdown()
    os.unlink(os.path.join(d, CLEAN_SHUTDOWN_FILE))
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                 "replication-offset-checkpoint"):  # fmt: skip
        with open(os.path.join(d, name), "w") as f:
            f.write(content)
    # A flipped byte inside the CRC range of the second batch of the first segment:
    # found only by a recovery from offset 0.
    seg0 = os.path.join(d, "a-0", f"{0:020d}.log")
    with open(seg0, "r+b") as f:
        f.seek(130)
        byte = f.read(1)[0]
        f.seek(130)
        f.write(bytes([byte ^ 0xFF]))
    lm = manager([d])
    a0 = lm.get_log(A0)
    assert a0 is not None and a0.log_end_offset == 3  # only the first batch is left
    assert lm.get_log(B0).log_end_offset == ends[B0]  # type: ignore[union-attr]
    lm.shutdown()


def test_invalid_names_never_reach_the_file_system(tmp_path: os.PathLike[str]) -> None:
    d = str(tmp_path)
    lm = manager([d])
    before = sorted(os.listdir(d))
    for name in ("..", "../escape", "a/b", "x" * 250, ""):
        with pytest.raises(InvalidTopicError):
            lm.get_or_create_log(TopicPartition(name, 0))
    assert sorted(os.listdir(d)) == before
    assert not os.path.exists(os.path.join(os.path.dirname(d), "escape-0"))
    lm.shutdown()


def test_logs_are_spread_over_directories(tmp_path: os.PathLike[str]) -> None:
    dirs = [os.path.join(tmp_path, "d1"), os.path.join(tmp_path, "d2")]
    lm = manager(dirs)
    populate(lm, batches=1)
    parents = sorted(os.path.dirname(lg.directory) for lg in lm.all_logs())
    assert set(parents) == set(dirs)
    lm.shutdown()
    lm = manager(dirs)
    assert len(lm.all_logs()) == 3
    lm.shutdown()


def test_delete_log_renames_then_removes_after_the_delay(tmp_path: os.PathLike[str]) -> None:
    d = str(tmp_path)
    clock = MockClock()
    lm = manager([d], clock)
    populate(lm)
    lm.checkpoint_recovery_offsets()
    assert lm.delete_log(A0)
    assert not lm.delete_log(A0)
    assert lm.get_log(A0) is None
    deleted = [n for n in os.listdir(d) if n.endswith("-delete")]
    assert len(deleted) == 1 and deleted[0].startswith("a-0.")
    assert A0 not in read_offset_checkpoint(os.path.join(d, "recovery-point-offset-checkpoint"))
    # Re-created at once: a fresh, empty log with the new topic id.
    fresh = lm.get_or_create_log(A0, topic_id="id-new")
    assert fresh.log_end_offset == 0 and fresh.topic_id == "id-new"
    lm.delete_logs()
    assert os.path.exists(os.path.join(d, deleted[0]))
    clock.advance(SMALL.file_delete_delay_ms)
    lm.delete_logs()
    assert not os.path.exists(os.path.join(d, deleted[0]))
    lm.shutdown()


def test_delete_dirs_left_before_a_restart_are_removed(tmp_path: os.PathLike[str]) -> None:
    d = str(tmp_path)
    lm = manager([d])
    populate(lm, batches=1)
    lm.delete_log(B0)
    lm.shutdown()
    lm = manager([d])
    assert lm.get_log(B0) is None
    lm.delete_logs()
    assert not [n for n in os.listdir(d) if n.endswith("-delete")]
    lm.shutdown()


def test_topic_overrides_apply_to_existing_and_new_logs(tmp_path: os.PathLike[str]) -> None:
    lm = manager([str(tmp_path)])
    lg = lm.get_or_create_log(A0)
    lm.update_topic_config("a", {"retention.bytes": "123"})
    assert lg.config.retention_bytes == 123
    assert lm.get_or_create_log(A1).config.retention_bytes == 123
    assert lm.get_or_create_log(B0).config.retention_bytes == SMALL.retention_bytes
    lm.shutdown()


def test_retention_task_deletes_and_checkpoint_tasks_write(tmp_path: os.PathLike[str]) -> None:
    d = str(tmp_path)
    clock = MockClock()
    lm = manager([d], clock)
    populate(lm)
    lm.update_topic_config("a", {"retention.bytes": "1000", "retention.ms": "-1"})
    lm.update_topic_config("b", {"retention.ms": "-1"})
    assert lm.cleanup_logs() > 0
    assert lm.get_log(B0).log_start_offset == 0  # type: ignore[union-attr]
    a0 = lm.get_log(A0)
    assert a0 is not None and a0.log_start_offset > 0
    lm.checkpoint_log_start_offsets()
    starts = read_offset_checkpoint(os.path.join(d, "log-start-offset-checkpoint"))
    b0 = lm.get_log(B0)
    assert b0 is not None
    assert starts == {A0: a0.log_start_offset, A1: starts[A1], B0: b0.log_start_offset}
    lm.checkpoint_high_watermarks()
    hws = read_offset_checkpoint(os.path.join(d, "replication-offset-checkpoint"))
    assert hws[B0] == lm.get_log(B0).high_watermark  # type: ignore[union-attr]
    lm.shutdown()


def test_flusher_flushes_logs_past_flush_ms(tmp_path: os.PathLike[str]) -> None:
    clock = MockClock()
    config = LogManagerConfig(
        log_dirs=(str(tmp_path),), default=dataclasses.replace(SMALL, flush_ms=1000)
    )
    lm = LogManager(config, clock)
    lm.load_logs()
    lg = lm.get_or_create_log(A0)
    lg.append(make_batch(2), leader_epoch=0)
    lm.flush_dirty_logs()
    assert lg.recovery_point == 0
    clock.advance(1000)
    lm.flush_dirty_logs()
    assert lg.recovery_point == 2
    lm.shutdown()


def test_the_housekeeping_tasks_are_scheduled(tmp_path: os.PathLike[str]) -> None:
    cleaner = CleanerConfig(threads=2, backoff_ms=5)
    lm = manager([str(tmp_path)], flush_offset_checkpoint_interval_ms=7, cleaner=cleaner)
    calls: list[tuple[str, Callable[[], object], int, int | None, bool]] = []

    class FakeScheduler:
        def schedule(
            self, name: str, fn: Callable[[], object], delay_ms: int,
            period_ms: int | None = None, blocking: bool = False,
        ) -> None:  # fmt: skip
            calls.append((name, fn, delay_ms, period_ms, blocking))

    lm.schedule_tasks(FakeScheduler())
    by_name = {c[0]: c for c in calls}
    assert list(by_name) == [
        "kafka-log-retention",
        "kafka-log-flusher",
        "kafka-recovery-point-checkpoint",
        "kafka-log-start-offset-checkpoint",
        "kafka-delete-logs",
        "kafka-log-cleaner-thread-0",
        "kafka-log-cleaner-thread-1",
    ]
    assert by_name["kafka-log-cleaner-thread-1"][3:] == (5, True)
    assert by_name["kafka-log-retention"][2:] == (30_000, 300_000, False)
    assert by_name["kafka-log-flusher"][3] is None  # log.flush.scheduler.interval.ms: never
    assert by_name["kafka-recovery-point-checkpoint"][3:] == (7, True)
    for _, fn, *_ in calls:
        fn()  # each runs on an idle manager without error
    lm.shutdown()


def test_no_cleaner_task_when_the_cleaner_is_disabled(tmp_path: os.PathLike[str]) -> None:
    lm = manager([str(tmp_path)], cleaner=CleanerConfig(enable=False))
    assert not [t for t in lm.scheduled_tasks() if "cleaner" in t.name]
    lm.shutdown()


async def test_tasks_run_on_the_timer_scheduler(tmp_path: os.PathLike[str]) -> None:
    """The broker's wiring: LogManager.schedule_tasks on a real timer.Scheduler, time
    moved by a MockClock; blocking tasks run in the scheduler's threads."""

    from timer.scheduler import Scheduler

    d = str(tmp_path)
    clock = MockClock()
    lm = manager([d], clock, initial_task_delay_ms=10, flush_offset_checkpoint_interval_ms=50)
    populate(lm, batches=2)
    scheduler = Scheduler(clock, threads=2)
    scheduler.start()
    try:
        lm.schedule_tasks(scheduler)
        checkpoint = os.path.join(d, "recovery-point-offset-checkpoint")
        assert not os.path.exists(checkpoint)
        clock.advance(10)
        scheduler.advance_clock()
        await until(lambda: os.path.exists(checkpoint), 10, "the checkpoint task to run")
        assert read_offset_checkpoint(checkpoint).keys() == {A0, A1, B0}
    finally:
        await scheduler.shutdown()
    lm.shutdown()


def test_a_directory_whose_logs_cannot_load_goes_offline(tmp_path: os.PathLike[str]) -> None:
    good, bad = os.path.join(tmp_path, "good"), os.path.join(tmp_path, "bad")
    lm = manager([good, bad])
    populate(lm, batches=1)
    lm.shutdown()
    victim = next(os.path.join(bad, n) for n in os.listdir(bad) if n.startswith(("a-", "b-")))
    os.mkdir(os.path.join(victim, f"{5:020d}.log"))  # a "segment" that cannot be opened
    lm = manager([good, bad])
    assert set(lm.offline_dirs) == {os.path.abspath(bad)}
    assert all(os.path.dirname(lg.directory) == os.path.abspath(good) for lg in lm.all_logs())
    assert lm.all_logs()
    created = lm.get_or_create_log(TopicPartition("new", 0))
    assert os.path.dirname(created.directory) == os.path.abspath(good)
    lm.shutdown()
