"""Partition: roles from LeaderAndIsr states, epoch fencing, validated appends, reads
below the high watermark, ListOffsets and OffsetForLeaderEpoch answers (real logs)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.partition import Partition, PartitionError, leader_epoch_error, topic_id_text
from broker.produce_records import check_produce_records
from protocol.errors import ErrorCode
from protocol.records import Compression
from protocol.values import READ_COMMITTED, READ_UNCOMMITTED, TopicPartition
from storage import (
    AppendInfo,
    FileRegion,
    Log,
    LogConfig,
    LogManager,
    LogManagerConfig,
    RecordError,
    TimestampOffset,
)
from tests.records import record_batch
from tests.unit.broker.broker_helpers import lone_partition, partition_state
from timer.clock import MockClock

TP = TopicPartition("orders", 0)
TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def batch(
    n: int = 1,
    *,
    ts: int = 1_000,
    value: bytes = b"v" * 10,
    producer_id: int = -1,
    epoch: int = -1,
    seq: int = -1,
    compression: Compression = Compression.NONE,
) -> bytes:
    return record_batch(
        n,
        value=value,
        timestamps=range(ts, ts + n),
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=seq,
        compression=compression,
    )


def state(**options: Any) -> Any:
    """TP's LeaderAndIsr state (``options``: partition_state's)."""
    return partition_state(TP, **options)


@pytest.fixture
def log_manager(tmp_path: Path) -> Iterator[LogManager]:
    config = LogManagerConfig(log_dirs=(str(tmp_path),), default=LogConfig(max_message_bytes=4096))
    manager = LogManager(config, MockClock())
    yield manager
    manager.shutdown()


@pytest.fixture
def leader(log_manager: LogManager) -> Partition:
    partition = lone_partition(TP, 0, log_manager)
    partition.make_leader(state(epoch=3), TOPIC_ID)
    return partition


def append(
    partition: Partition,
    records: bytes | None,
    *,
    acks: int = 1,
    min_isr: int = 1,
    version: int = 9,
) -> AppendInfo:
    """Append ``records`` as a Produce request at ``version`` hands them on, checked."""
    return partition.append_records_to_leader(
        check_produce_records(records, version), required_acks=acks, min_insync_replicas=min_isr
    )


def log_of(partition: Partition) -> Log:
    assert partition.log is not None
    return partition.log


def size(region: FileRegion | None) -> int:
    assert region is not None
    return len(region)


def found(answer: TimestampOffset | None) -> TimestampOffset:
    assert answer is not None
    return answer


@pytest.mark.parametrize(
    ("requested", "local", "expected"),
    [
        (-1, 5, ErrorCode.NONE),
        (5, 5, ErrorCode.NONE),
        (4, 5, ErrorCode.FENCED_LEADER_EPOCH),
        (6, 5, ErrorCode.UNKNOWN_LEADER_EPOCH),
    ],
)
def test_leader_epoch_error_table(requested: int, local: int, expected: int) -> None:
    assert leader_epoch_error(requested, local) == expected


def test_topic_id_text_is_kafkas_base64_and_zero_means_none() -> None:
    assert topic_id_text(uuid.UUID(int=0)) is None
    assert topic_id_text(None) is None
    assert topic_id_text(TOPIC_ID) == "EjRWeBI0VngSNFZ4EjRWeA"


def test_make_leader_creates_log_with_topic_id_and_epoch_entry(leader: Partition) -> None:
    assert leader.is_leader
    assert leader.log is not None
    with open(os.path.join(log_of(leader).directory, "partition.metadata")) as f:
        assert "topic_id: EjRWeBI0VngSNFZ4EjRWeA" in f.read()
    assert log_of(leader).epoch_cache.entries == [(3, 0)]
    assert leader.leader_epoch_start_offset == 0


def test_append_assigns_offsets_stamps_epoch_and_moves_high_watermark(leader: Partition) -> None:
    first = append(leader, batch(3))
    second = append(leader, batch(2))
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert leader.high_watermark == 5 == leader.last_stable_offset
    header = next(log_of(leader).iter_batch_headers(0))[2]
    assert header.partition_leader_epoch == 3


def test_new_epoch_starts_at_log_end(leader: Partition) -> None:
    append(leader, batch(4))
    leader.make_leader(state(epoch=4), TOPIC_ID)
    assert log_of(leader).epoch_cache.entries == [(3, 0), (4, 4)]
    assert leader.end_offset_for_epoch(3, current_leader_epoch=-1) == (3, 4)
    assert leader.end_offset_for_epoch(4, current_leader_epoch=4) == (4, 4)


def test_follower_opens_log_but_refuses_produce_and_fetch(log_manager: LogManager) -> None:
    partition = lone_partition(TP, 0, log_manager)
    partition.make_follower(state(leader=1, epoch=2, isr=[0, 1], replicas=[0, 1]), TOPIC_ID)
    assert not partition.is_leader
    assert log_manager.get_log(TP) is not None
    with pytest.raises(PartitionError) as err:
        append(partition, batch())
    assert err.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(PartitionError) as err:
        partition.read(0, 1000)
    assert err.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_refused_records_answer_after_the_role_and_isr_checks(log_manager: LogManager) -> None:
    damaged = bytearray(batch())
    damaged[-1] ^= 0x55
    follower = lone_partition(TP, 0, log_manager)
    follower.make_follower(state(leader=1, epoch=2, isr=[0, 1], replicas=[0, 1]), TOPIC_ID)
    with pytest.raises(PartitionError) as err:
        append(follower, bytes(damaged))
    assert err.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    follower.make_leader(state(epoch=3, isr=[0], replicas=[0, 1]), TOPIC_ID)
    with pytest.raises(PartitionError) as err:
        append(follower, bytes(damaged), acks=-1, min_isr=2)
    assert err.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    with pytest.raises(PartitionError) as err:
        append(follower, bytes(damaged), acks=-1, min_isr=1)
    assert err.value.error_code == ErrorCode.CORRUPT_MESSAGE


def test_not_enough_replicas_only_for_acks_all(log_manager: LogManager) -> None:
    partition = lone_partition(TP, 0, log_manager)
    partition.make_leader(state(isr=[0], replicas=[0, 1, 2]), TOPIC_ID)
    assert partition.is_under_replicated
    with pytest.raises(PartitionError) as err:
        append(partition, batch(), acks=-1, min_isr=2)
    assert err.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert log_of(partition).log_end_offset == 0
    assert append(partition, batch(), acks=1, min_isr=2).first_offset == 0


def _corrupt(records: bytes) -> bytes:
    damaged = bytearray(records)
    damaged[-1] ^= 0xFF
    return bytes(damaged)


def _two_batches() -> bytes:
    return batch() + batch()


def _legacy_magic() -> bytes:
    damaged = bytearray(batch())
    damaged[16] = 1
    return bytes(damaged)


@pytest.mark.parametrize(
    ("records", "version", "code"),
    [
        (None, 9, ErrorCode.INVALID_RECORD),
        (b"", 9, ErrorCode.INVALID_RECORD),
        (_corrupt(batch()), 9, ErrorCode.CORRUPT_MESSAGE),
        (_two_batches(), 9, ErrorCode.INVALID_RECORD),
        (_legacy_magic(), 9, ErrorCode.INVALID_RECORD),
        (batch(compression=Compression.ZSTD), 6, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
        (batch(value=b"x" * 5000), 9, ErrorCode.MESSAGE_TOO_LARGE),
    ],
    ids=["null", "empty", "crc", "two-batches", "magic1", "zstd-v6", "too-large"],
)
def test_invalid_records_refused_and_log_unchanged(
    leader: Partition, records: bytes | None, version: int, code: int
) -> None:
    with pytest.raises(PartitionError) as err:
        append(leader, records, version=version)
    assert err.value.error_code == code
    assert log_of(leader).log_end_offset == 0


def test_zstd_accepted_from_v7(leader: Partition) -> None:
    assert append(leader, batch(2, compression=Compression.ZSTD), version=7).last_offset == 1


def test_nonzero_base_offset_is_invalid_record(leader: Partition) -> None:
    records = bytearray(batch())
    records[7] = 5  # base_offset low byte (outside the CRC)
    with pytest.raises(PartitionError) as err:
        append(leader, bytes(records))
    assert err.value.error_code == ErrorCode.INVALID_RECORD


def test_idempotent_duplicate_gap_and_old_epoch(leader: Partition) -> None:
    first = append(leader, batch(2, producer_id=7, epoch=0, seq=0))
    again = append(leader, batch(2, producer_id=7, epoch=0, seq=0))
    assert again.duplicate and (again.first_offset, again.last_offset) == (0, 1)
    assert log_of(leader).log_end_offset == 2 == first.last_offset + 1
    with pytest.raises(RecordError) as gap:
        append(leader, batch(1, producer_id=7, epoch=0, seq=5))
    assert gap.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    append(leader, batch(1, producer_id=7, epoch=1, seq=0))
    with pytest.raises(RecordError) as fenced:
        append(leader, batch(1, producer_id=7, epoch=0, seq=2))
    assert fenced.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_read_ranges_and_epoch_fencing(leader: Partition) -> None:
    append(leader, batch(3))
    whole = leader.read(0, 1 << 20)
    assert whole.region is not None and whole.high_watermark == 3
    at_end = leader.read(3, 1 << 20)  # at the end: nothing, no error, the offsets
    assert at_end.region is None
    assert (at_end.high_watermark, at_end.log_start_offset, at_end.log_end_offset) == (3, 0, 3)
    for offset in (-1, 4):
        with pytest.raises(PartitionError) as err:
            leader.read(offset, 1 << 20)
        assert err.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    for epoch, code in ((2, ErrorCode.FENCED_LEADER_EPOCH), (4, ErrorCode.UNKNOWN_LEADER_EPOCH)):
        with pytest.raises(PartitionError) as err:
            leader.read(0, 1 << 20, current_leader_epoch=epoch)
        assert err.value.error_code == code


def test_consumer_reads_stop_at_high_watermark_replicas_read_to_log_end(
    leader: Partition,
) -> None:
    append(leader, batch(2))
    one_batch = leader.read(0, 1 << 20).region
    append(leader, batch(2))
    log_of(leader).update_high_watermark(2)  # as if followers had not caught up yet
    consumer = leader.read(0, 1 << 20)
    assert size(consumer.region) == size(one_batch)
    at_high_watermark = leader.read(2, 1 << 20)
    assert at_high_watermark.region is None
    assert (at_high_watermark.high_watermark, at_high_watermark.log_end_offset) == (2, 4)
    replica = leader.read(0, 1 << 20, up_to_high_watermark=False)
    assert size(replica.region) == 2 * size(one_batch)


def test_list_offsets_special_timestamps_and_lookup(leader: Partition) -> None:
    append(leader, batch(3, ts=100))  # 100, 101, 102
    append(leader, batch(2, ts=500))  # 500, 501

    def lookup(ts: int, isolation: int | None = READ_UNCOMMITTED) -> TimestampOffset | None:
        return leader.fetch_offset_for_timestamp(
            ts, current_leader_epoch=-1, isolation_level=isolation
        )

    assert (found(lookup(-2)).offset, found(lookup(-2)).timestamp) == (0, -1)
    assert (found(lookup(-1)).offset, found(lookup(-1)).leader_epoch) == (5, 3)
    assert (found(lookup(-3)).offset, found(lookup(-3)).timestamp) == (4, 501)
    assert (found(lookup(101)).offset, found(lookup(101)).timestamp) == (1, 101)
    assert (found(lookup(200)).offset, found(lookup(200)).timestamp) == (3, 500)
    assert lookup(10_000) is None
    assert found(lookup(-1, READ_COMMITTED)).offset == 5


def test_list_offsets_by_timestamp_hides_offsets_above_high_watermark(leader: Partition) -> None:
    append(leader, batch(1, ts=100))
    append(leader, batch(1, ts=500))
    log_of(leader).update_high_watermark(1)
    answer = leader.fetch_offset_for_timestamp(
        400, current_leader_epoch=-1, isolation_level=READ_UNCOMMITTED
    )
    assert answer is None
    latest = leader.fetch_offset_for_timestamp(
        -1, current_leader_epoch=-1, isolation_level=READ_UNCOMMITTED
    )
    assert found(latest).offset == 1
    # a replica's request (no isolation level) sees up to the log end
    replica = leader.fetch_offset_for_timestamp(-1, current_leader_epoch=-1, isolation_level=None)
    assert found(replica).offset == 2
