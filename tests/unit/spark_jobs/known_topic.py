"""A log directory with known content, written through the storage package (as a broker
would), and the rows the minikafka source must return for it.

Topic ``known``, two partitions, several segments each: a batch in every codec, records
with headers, null keys and null values, a LogAppendTime batch, a transaction's data
batch followed by its COMMIT control batch (the broker refuses transactions, so only a
test can write one), and records above the high watermark that must never be read.
"""

from __future__ import annotations

from typing import Any

from protocol.data import data_class, encode_data
from protocol.records import (
    Compression,
    ControlType,
    SimpleRecord,
    TimestampType,
    build_batch,
    control_record,
)
from protocol.values import TopicPartition
from storage.clock import MockClock
from storage.config import LogConfig, LogManagerConfig
from storage.log import Log
from storage.log_manager import LogManager

TOPIC = "known"
#: small segments, so that every partition spans several
CONFIG = LogConfig(segment_bytes=900, index_interval_bytes=100, segment_index_bytes=4096)
BASE_TIME = 1_700_000_000_000
APPEND_TIME = 1_800_000_000_000
#: records appended after the high watermark was checkpointed, per partition
UNCOMMITTED = 3

Row = dict[str, Any]


def _records(log: Log, n: int, *, headers: bool = False) -> list[SimpleRecord]:
    """``n`` records for the next offsets of ``log``, their content a function of the
    partition and the offset."""
    out = []
    partition, first = log.tp.partition, log.log_end_offset
    for i in range(first, first + n):
        key = None if i % 4 == 0 else b"key-%d" % (i % 7)
        value = None if i % 11 == 5 else b"p%d-value-%d" % (partition, i)
        hdrs = [("trace", b"t%d" % i), ("empty", None)] if headers and i % 2 else []
        out.append(SimpleRecord(key, value, hdrs, BASE_TIME + 1000 * i))
    return out


def write_known_topic(log_dir: str) -> list[Row]:
    """Write the topic into ``log_dir``; return the rows that are committed, in
    (partition, offset) order, as Spark's Kafka source would give them."""
    lm = LogManager(LogManagerConfig(log_dirs=(log_dir,), default=CONFIG), MockClock())
    lm.load_logs()
    expected: list[Row] = []
    for partition in (0, 1):
        log = lm.get_or_create_log(TopicPartition(TOPIC, partition))
        for codec in Compression:
            expected += append(log, _records(log, 5), compression=codec)
        expected += append(log, _records(log, 4, headers=True), compression=Compression.GZIP)
        expected += append(
            log,
            _records(log, 3),
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            log_append_time=APPEND_TIME,
        )
        transaction = {"producer_id": 7, "producer_epoch": 0, "is_transactional": True}
        expected += append(log, _records(log, 2), base_sequence=0, **transaction)
        commit = control_record(ControlType.COMMIT, 0, BASE_TIME)
        append(log, [commit], is_control=True, **transaction)  # an offset, but no row
        expected += append(log, _records(log, 6), compression=Compression.LZ4)
        log.update_high_watermark(log.log_end_offset)
        append(log, _records(log, UNCOMMITTED))  # past the high watermark: not committed
    lm.shutdown()  # checkpoints the high watermarks set above, not the log ends
    return expected


def append(log: Log, records: list[SimpleRecord], **batch_options: Any) -> list[Row]:
    """Append one batch as a replica would; the rows a reader must see for it."""
    first = log.log_end_offset
    log.append_as_follower(bytes(build_batch(records, base_offset=first, **batch_options)))
    stamped = batch_options.get("log_append_time")
    return [row(log.tp, first + i, r, stamped) for i, r in enumerate(records)]


def row(tp: TopicPartition, offset: int, r: SimpleRecord, log_append_time: int | None) -> Row:
    return {
        "key": r.key,
        "value": r.value,
        "topic": tp.topic,
        "partition": tp.partition,
        "offset": offset,
        "timestamp_ms": log_append_time if log_append_time is not None else r.timestamp,
        "timestampType": int(log_append_time is not None),
        "headers": [{"key": k, "value": v} for k, v in r.headers] or None,
    }


def commit_record(group: str, topic: str, partition: int, offset: int | None) -> SimpleRecord:
    """A record of __consumer_offsets: an OffsetCommitKey v1 and its value (v3), or a
    tombstone with ``offset`` None."""
    key = encode_data(
        "OffsetCommitKey",
        1,
        data_class("OffsetCommitKey")(group=group, topic=topic, partition=partition),
    )
    if offset is None:
        return SimpleRecord(key, None, (), BASE_TIME)
    value = data_class("OffsetCommitValue")(
        offset=offset, leader_epoch=-1, metadata="", commit_timestamp=BASE_TIME, expire_timestamp=-1
    )
    return SimpleRecord(key, encode_data("OffsetCommitValue", 3, value), (), BASE_TIME)


#: (group, partition of TOPIC) -> committed offset, after the records of write_commits
COMMITTED = {("g1", 0): 30, ("g1", 1): 41, ("g2", 0): 5}


def write_commits(log_dir: str) -> None:
    """__consumer_offsets partition 0 holding commits of groups g1 and g2 on TOPIC: some
    superseded, one tombstoned, and a group-metadata record that is not a commit."""
    lm = LogManager(LogManagerConfig(log_dirs=(log_dir,), default=CONFIG), MockClock())
    lm.load_logs()
    log = lm.get_or_create_log(TopicPartition("__consumer_offsets", 0))
    group_metadata = SimpleRecord(b"\x00\x02\x00\x02g1", b"\x00\x03", (), BASE_TIME)
    append(log, [commit_record("g1", TOPIC, 0, 10), commit_record("g1", TOPIC, 1, 41)])
    append(log, [group_metadata, commit_record("g2", TOPIC, 0, 5)])
    append(log, [commit_record("g1", TOPIC, 0, 30), commit_record("g3", TOPIC, 1, 7)])
    append(log, [commit_record("g3", TOPIC, 1, None)])
    log.update_high_watermark(log.log_end_offset)
    lm.shutdown()
