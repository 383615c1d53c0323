"""The partition leader's side of transactions over real logs: markers appended through
the ReplicaManager as WriteTxnMarkers appends them, read_committed fetches (the LSO, the
aborted transactions of the region, the long poll counting only stable bytes),
ListOffsets at the LSO, and DescribeProducers' producer state."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from broker.apis.write_txn_markers import marker_batch
from broker.delayed import FetchParams, FetchPartitionResult, PartitionFetchInfo
from broker.delayed.produce import ProducePartitionResult
from broker.produce_records import check_produce_records
from protocol.errors import ErrorCode
from protocol.records.validation import validate_records
from protocol.values import LATEST_TIMESTAMP, READ_COMMITTED, READ_UNCOMMITTED, TopicPartition
from storage.txn_index import AbortedTransaction
from tests.records import record_batch
from tests.unit.broker.broker_helpers import LocalReplicas, local_replicas, partition_state

A = TopicPartition("events", 0)
Results = list[tuple[TopicPartition, FetchPartitionResult]]


@dataclass
class Leader:
    r: LocalReplicas

    def append(self, records: bytes) -> ProducePartitionResult:
        got: list[dict[TopicPartition, ProducePartitionResult]] = []
        self.r.rm.append_records(
            {A: check_produce_records(records, 9)},
            required_acks=1,
            timeout_ms=0,
            on_done=got.append,
        )
        return got[0][A]

    def marker(self, producer_id: int, commit: bool, coordinator_epoch: int = 0) -> int:
        got: list[dict[TopicPartition, ProducePartitionResult]] = []
        batch = marker_batch(producer_id, 0, commit, coordinator_epoch, 5_000)
        self.r.rm.append_records(
            {A: validate_records(batch, from_client=False)},
            required_acks=-1,
            timeout_ms=1_000,
            on_done=got.append,
            from_coordinator=True,
        )
        return got[0][A].error_code

    def fetch(self, offset: int, isolation_level: int, *, max_wait_ms: int = 0) -> list[Results]:
        got: list[Results] = []
        params = FetchParams(-1, max_wait_ms, 1, 1 << 20, isolation_level)
        self.r.rm.fetch_messages(params, [(A, PartitionFetchInfo(offset, 1 << 20))], got.append)
        return got


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[Leader]:
    r = local_replicas(tmp_path)
    r.become({"events": uuid.uuid4()}, partition_state(A, epoch=1))
    yield Leader(r)
    r.log_manager.shutdown()


def txn(producer_id: int, seq: int, n: int = 1) -> bytes:
    return record_batch(n, producer_id=producer_id, producer_epoch=0, base_sequence=seq,
                        is_transactional=True)  # fmt: skip


def plain() -> bytes:
    return record_batch(1)


def layout(leader: Leader) -> None:
    """0-1 producer 1 (committed at 4), 2-3 producer 2 (aborted at 5), 6 plain,
    7 producer 3 (open), 8 plain."""
    assert leader.append(txn(1, 0, 2)).base_offset == 0
    assert leader.append(txn(2, 0, 2)).base_offset == 2
    assert leader.marker(1, commit=True) == ErrorCode.NONE
    assert leader.marker(2, commit=False) == ErrorCode.NONE
    assert leader.append(plain()).base_offset == 6
    assert leader.append(txn(3, 0)).base_offset == 7
    assert leader.append(plain()).base_offset == 8


def test_read_committed_stops_at_the_lso_and_lists_the_aborted_transactions(
    leader: Leader,
) -> None:
    layout(leader)
    [[(_, committed)]] = leader.fetch(0, READ_COMMITTED)
    assert (committed.high_watermark, committed.last_stable_offset) == (9, 7)
    assert committed.aborted_transactions == [AbortedTransaction(2, 2)]
    lg = leader.r.log_manager.get_log(A)
    assert lg is not None
    region = committed.records
    assert region is not None and region.length == sum(
        h.size for _, _, h in lg.iter_batch_headers(0) if h.base_offset < 7
    )
    # from past the aborted transaction, none is listed
    [[(_, later)]] = leader.fetch(6, READ_COMMITTED)
    assert later.aborted_transactions == []
    [[(_, uncommitted)]] = leader.fetch(0, READ_UNCOMMITTED)
    assert uncommitted.aborted_transactions is None and uncommitted.last_stable_offset == 7
    # at the LSO a read_committed consumer gets nothing (and nothing to drop)
    [[(_, at_lso)]] = leader.fetch(7, READ_COMMITTED)
    assert at_lso.records is None and at_lso.aborted_transactions == []


def test_list_offsets_latest_read_committed_is_the_lso(leader: Leader) -> None:
    layout(leader)
    rm = leader.r.rm
    committed = rm.fetch_offset_for_timestamp(A, LATEST_TIMESTAMP, isolation_level=READ_COMMITTED)
    uncommitted = rm.fetch_offset_for_timestamp(A, LATEST_TIMESTAMP, isolation_level=0)
    assert committed is not None and committed.offset == 7
    assert uncommitted is not None and uncommitted.offset == 9


def test_a_read_committed_long_poll_counts_only_stable_bytes(leader: Leader) -> None:
    assert leader.append(txn(1, 0)).base_offset == 0
    got = leader.fetch(0, READ_COMMITTED, max_wait_ms=500)
    assert got == []
    leader.append(txn(1, 1))  # more of the open transaction: still nothing stable
    assert got == [] and leader.r.fetch.num_delayed == 1
    assert leader.marker(1, commit=True) == ErrorCode.NONE
    [[(_, result)]] = got
    assert result.last_stable_offset == 3 and result.records is not None
    # read_uncommitted is answered at once
    assert leader.fetch(0, READ_UNCOMMITTED, max_wait_ms=500) != []


def test_markers_checked_against_the_producer_state(leader: Leader) -> None:
    leader.append(txn(1, 0))
    assert leader.marker(1, commit=True, coordinator_epoch=3) == ErrorCode.NONE
    leader.append(txn(1, 1))
    assert leader.marker(1, commit=False, coordinator_epoch=2) == (
        ErrorCode.TRANSACTION_COORDINATOR_FENCED
    )
    partition = leader.r.rm.partition_for(A)
    assert partition is not None
    [state] = partition.active_producers()
    assert (state.producer_id, state.epoch, state.last_seq) == (1, 0, 1)
    assert (state.coordinator_epoch, state.current_txn_first_offset) == (3, 2)
