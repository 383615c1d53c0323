"""read_committed from log directories (option kafka.isolation.level): the aborted
transactions' records left out through the .txnindex files, the read bounded by the
last stable offset (an open transaction and what follows it unread), read-only."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.records.builder import build_batch
from protocol.records.control import ControlType, control_record
from protocol.records.record import SimpleRecord
from protocol.values import READ_COMMITTED, READ_UNCOMMITTED, TopicPartition
from spark_jobs.committed import aborted_transactions, last_stable_offset
from spark_jobs.log_dir_backend import LogDirBackend
from spark_jobs.options import OptionError, parse_options
from spark_jobs.segments import read_range
from storage import Log, LogManager
from storage.config import LogConfig, LogManagerConfig
from timer.clock import MockClock

TP = TopicPartition("t", 0)


def append(log: Log, value: bytes, *, pid: int = -1, control: ControlType | None = None) -> None:
    """One batch at the log end: plain (no ``pid``), transactional of producer ``pid``,
    or that producer's ``control`` marker."""
    first = log.log_end_offset
    records = (
        [SimpleRecord(None, value, timestamp=1000)]
        if control is None
        else [control_record(control, 0, 1000)]
    )
    batch = build_batch(
        records,
        base_offset=first,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=first if pid >= 0 and control is None else -1,
        is_transactional=pid >= 0,
        is_control=control is not None,
    )
    log.append_as_follower(bytes(batch))


def write(log_dir: Path) -> None:
    """0 p0 | 1 aborted (producer 2) | 2 committed (producer 1) | 3 ABORT 2 | 4 COMMIT 1 |
    5 p1 | 6 open (producer 3) | 7 p2; high watermark 8."""
    lm = LogManager(LogManagerConfig(log_dirs=(str(log_dir),), default=LogConfig()), MockClock())
    lm.load_logs()
    log = lm.get_or_create_log(TP)
    append(log, b"p0")
    append(log, b"aborted", pid=2)
    append(log, b"committed", pid=1)
    append(log, b"", pid=2, control=ControlType.ABORT)
    append(log, b"", pid=1, control=ControlType.COMMIT)
    append(log, b"p1")
    append(log, b"open", pid=3)
    append(log, b"p2")
    log.update_high_watermark(log.log_end_offset)
    lm.shutdown()


def values(backend: LogDirBackend, aborted: list[tuple[int, int]] | None) -> list[bytes]:
    replica = backend.replicas[TP]
    bounds = backend.bounds([TP])[TP]
    batches = read_range(replica, bounds.earliest, bounds.latest, aborted)
    return [v for b in batches for v in b.column("value").to_pylist()]


def test_read_committed_from_log_dirs(tmp_path: Path) -> None:
    write(tmp_path)
    committed = LogDirBackend([str(tmp_path)], READ_COMMITTED)
    replica = committed.replicas[TP]
    assert aborted_transactions(replica) == [(2, 1)]
    assert last_stable_offset(replica) == 6
    assert values(committed, aborted_transactions(replica)) == [b"p0", b"committed", b"p1"]
    uncommitted = LogDirBackend([str(tmp_path)], READ_UNCOMMITTED)
    assert values(uncommitted, None) == [
        b"p0", b"aborted", b"committed", b"p1", b"open", b"p2",
    ]  # fmt: skip


def test_the_isolation_level_option() -> None:
    base = {"path": "/x", "subscribe": "t"}
    assert parse_options(base, streaming=False).isolation_level == READ_UNCOMMITTED
    chosen = parse_options({**base, "kafka.isolation.level": "read_committed"}, streaming=False)
    assert chosen.isolation_level == READ_COMMITTED
    with pytest.raises(OptionError, match=r"kafka\.isolation\.level"):
        parse_options({**base, "kafka.isolation.level": "committed"}, streaming=False)
