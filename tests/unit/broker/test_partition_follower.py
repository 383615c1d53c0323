"""Partition's follower side, on real logs: the leader's batches appended as they are
(offsets, epochs, producer state), the high watermark and log start following the
leader's, truncation, and refusals when this broker is not a follower."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.partition import Partition, PartitionError
from protocol.errors import ErrorCode
from protocol.records import BatchBuilder, read_header
from protocol.records.batch import HEADER_SIZE
from protocol.records.builder import pack_batch
from protocol.records.validation import validate_fetched_records
from protocol.values import TopicPartition
from storage import Log, LogConfig, LogManager, LogManagerConfig
from storage.errors import RecordError
from tests.unit.broker.broker_helpers import lone_partition, partition_state
from timer.clock import MockClock

TP = TopicPartition("copied", 0)


def leader_batch(
    base_offset: int, n: int, epoch: int, *, producer_id: int = -1, seq: int = -1
) -> bytes:
    """A batch as a leader stored it: its offsets and partition leader epoch set."""
    builder = BatchBuilder(
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=seq,
    )
    for i in range(n):
        builder.append(1_000 + i, b"k", b"v" * 10)
    return bytes(builder.build())


@pytest.fixture
def log_manager(tmp_path: Path) -> Iterator[LogManager]:
    config = LogManagerConfig(log_dirs=(str(tmp_path),), default=LogConfig())
    manager = LogManager(config, MockClock())
    yield manager
    manager.shutdown()


@pytest.fixture
def follower(log_manager: LogManager) -> Partition:
    partition = lone_partition(TP, 1, log_manager)
    partition.make_follower(partition_state(TP, leader=0, epoch=4, replicas=(0, 1)), None)
    return partition


def log_of(partition: Partition) -> Log:
    assert partition.log is not None
    return partition.log


def test_appends_keep_the_leaders_offsets_and_epochs(follower: Partition) -> None:
    follower.append_records_as_follower(leader_batch(0, 3, epoch=2) + leader_batch(3, 2, epoch=4))
    lg = log_of(follower)
    assert lg.log_end_offset == 5
    assert lg.epoch_cache.entries == [(2, 0), (4, 3)]
    assert lg.end_offset_for_epoch(2) == (2, 3)


def test_a_gap_below_the_log_end_is_refused(follower: Partition) -> None:
    follower.append_records_as_follower(leader_batch(0, 3, epoch=2))
    with pytest.raises(RecordError):
        follower.append_records_as_follower(leader_batch(1, 3, epoch=2))
    assert log_of(follower).log_end_offset == 3


def test_high_watermark_is_the_leaders_up_to_our_log_end(follower: Partition) -> None:
    follower.append_records_as_follower(leader_batch(0, 5, epoch=4))
    assert follower.update_follower_high_watermark(3) == 3
    assert follower.update_follower_high_watermark(9) == 5  # the leader is further on
    assert follower.high_watermark == 5


def test_log_start_follows_the_leaders_never_above_the_high_watermark(
    follower: Partition,
) -> None:
    follower.append_records_as_follower(leader_batch(0, 10, epoch=4))
    follower.update_follower_high_watermark(6)
    assert follower.update_follower_log_start_offset(4) == 4
    assert follower.update_follower_log_start_offset(2) == 4  # never down
    assert follower.update_follower_log_start_offset(8) == 6  # capped at our HW


def test_apply_fetched_appends_then_follows_the_leaders_offsets(follower: Partition) -> None:
    fetched = validate_fetched_records(leader_batch(0, 10, epoch=4))
    assert follower.apply_fetched(fetched, 6, 4) == 10
    lg = log_of(follower)
    assert (lg.log_end_offset, lg.high_watermark, lg.log_start_offset) == (10, 6, 4)
    # no records: only the offsets move, the high watermark at most to our log end
    assert follower.apply_fetched(None, 15, 8) == 10
    assert (lg.high_watermark, lg.log_start_offset) == (10, 8)
    assert follower.apply_fetched(None, 15, 2) == 10
    assert lg.log_start_offset == 8  # never down


def test_apply_fetched_refuses_a_leader(log_manager: LogManager) -> None:
    partition = lone_partition(TP, 0, log_manager)
    partition.make_leader(partition_state(TP, leader=0, epoch=1), None)
    with pytest.raises(PartitionError):
        partition.apply_fetched(None, 5, 0)


def test_compacted_batches_are_copied_as_they_are(follower: Partition) -> None:
    # The cleaner leaves batches with fewer records than their offset range, and empty
    # ones (a producer's last batch); a follower copies them, as Kafka's does.
    four = read_header(leader_batch(0, 4, epoch=4, producer_id=3, seq=0))
    one_record = leader_batch(0, 1, epoch=4)[HEADER_SIZE:]
    kept = pack_batch(four._replace(records_count=1), one_record)  # offsets 0-3, 1 record
    two = read_header(leader_batch(4, 2, epoch=4, producer_id=3, seq=4))
    empty = pack_batch(two._replace(records_count=0), b"")  # offsets 4-5, no record
    follower.append_records_as_follower(bytes(kept) + bytes(empty))
    lg = log_of(follower)
    assert lg.log_end_offset == 6
    assert lg.producer_state.producers[3].last_seq == 5


def test_a_batch_above_the_followers_max_message_bytes_is_copied(
    tmp_path: Path,
) -> None:
    # The leader accepted it under its view of the topic config; refusing it would
    # stall the follower for good (Kafka's followers skip the size check).
    config = LogManagerConfig(log_dirs=(str(tmp_path),), default=LogConfig(max_message_bytes=100))
    manager = LogManager(config, MockClock())
    try:
        partition = lone_partition(TP, 1, manager)
        partition.make_follower(partition_state(TP, leader=0, epoch=4, replicas=(0, 1)), None)
        batch = leader_batch(0, 20, epoch=4)
        assert len(batch) > 100
        partition.append_records_as_follower(batch)
        assert log_of(partition).log_end_offset == 20
    finally:
        manager.shutdown()


def test_truncation_drops_records_epochs_and_producer_state(follower: Partition) -> None:
    follower.append_records_as_follower(
        leader_batch(0, 2, epoch=3, producer_id=7, seq=0)
        + leader_batch(2, 2, epoch=4, producer_id=7, seq=2)
    )
    assert follower.truncate_to(2)
    lg = log_of(follower)
    assert lg.log_end_offset == 2 and lg.epoch_cache.entries == [(3, 0)]
    assert lg.producer_state.producers[7].last_seq == 1
    follower.truncate_fully_and_start_at(40)
    assert (lg.log_start_offset, lg.log_end_offset, lg.epoch_cache.entries) == (40, 40, [])


def test_a_follower_that_leads_deduplicates_what_it_copied(follower: Partition) -> None:
    # An idempotent producer's batch, copied from the old leader; the producer retries
    # it on the new leader (this broker), which must answer it as a duplicate.
    copied = leader_batch(0, 2, epoch=4, producer_id=9, seq=0)
    follower.append_records_as_follower(copied)
    follower.make_leader(partition_state(TP, leader=1, epoch=5, replicas=(0, 1)), None)
    retry = leader_batch(0, 2, epoch=-1, producer_id=9, seq=0)
    info = log_of(follower).append(retry, leader_epoch=5)
    assert info.duplicate and (info.first_offset, info.last_offset) == (0, 1)
    assert log_of(follower).log_end_offset == 2


def test_follower_methods_refuse_a_leader(log_manager: LogManager) -> None:
    partition = lone_partition(TP, 0, log_manager)
    partition.make_leader(partition_state(TP, leader=0, epoch=1), None)
    with pytest.raises(PartitionError) as refused:
        partition.append_records_as_follower(leader_batch(0, 1, epoch=1))
    assert refused.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(PartitionError):
        partition.truncate_to(0)


def test_make_follower_truncates_nothing(log_manager: LogManager) -> None:
    partition = lone_partition(TP, 1, log_manager)
    partition.make_follower(partition_state(TP, leader=0, epoch=1, replicas=(0, 1)), None)
    partition.append_records_as_follower(leader_batch(0, 4, epoch=1))
    partition.make_follower(partition_state(TP, leader=2, epoch=2, replicas=(0, 1, 2)), None)
    assert log_of(partition).log_end_offset == 4  # the fetcher decides, not the role change
