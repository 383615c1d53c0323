"""The WriteTxnMarkers and DescribeProducers handlers over real logs: markers answered per
partition (led, unknown, fenced), a marker on __consumer_offsets ending the group
store's pending transactional offsets, and the producer state a replica reports."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.apis import describe_producers, write_txn_markers
from broker.apis.services import ReplicaAccess
from broker.produce_records import check_produce_records
from protocol import ErrorCode, Request, Response
from protocol.messages import (
    DescribeProducersRequest,
    RequestHeader,
    WriteTxnMarkersRequest,
)
from protocol.values import TopicPartition
from tests.records import record_batch
from tests.unit.broker.broker_helpers import LocalReplicas, local_replicas, partition_state

TOPIC = "payments"
OFFSETS = TopicPartition("__consumer_offsets", 0)


class RecordingGroupStore:
    def __init__(self) -> None:
        self.completed: list[tuple[int, int, bool]] = []

    def complete_txn_offsets(self, partition: int, producer_id: int, commit: bool) -> None:
        self.completed.append((partition, producer_id, commit))


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[LocalReplicas]:
    r = local_replicas(tmp_path)
    r.become(
        {TOPIC: uuid.uuid4(), OFFSETS.topic: uuid.uuid4()},
        partition_state(TopicPartition(TOPIC, 0)),
        partition_state(OFFSETS),
    )
    yield r
    r.log_manager.shutdown()


def services(r: LocalReplicas, store: RecordingGroupStore) -> ReplicaAccess:
    return r.services(group_store=store).replicas


def request(api_key: int, version: int, body: Any) -> Request:
    header = RequestHeader(api_key=api_key, api_version=version, correlation_id=1, client_id="t")
    return Request(header, body)


def begin(r: LocalReplicas, tp: TopicPartition, producer_id: int, seq: int = 0) -> None:
    batch = record_batch(1, producer_id=producer_id, producer_epoch=0, base_sequence=seq,
                         is_transactional=True)  # fmt: skip
    done: list[object] = []
    r.rm.append_records(
        {tp: check_produce_records(batch, 9)},
        required_acks=1,
        timeout_ms=0,
        on_done=done.append,
        internal_topics_allowed=True,
    )
    assert done


def marker(
    producer_id: int, commit: bool, epoch: int, parts: dict[str, list[int]]
) -> WriteTxnMarkersRequest.WritableTxnMarker:
    return WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=producer_id,
        producer_epoch=0,
        transaction_result=commit,
        topics=[
            WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
            for t, ps in parts.items()
        ],
        coordinator_epoch=epoch,
    )


async def answer(ctx: ReplicaAccess, body: WriteTxnMarkersRequest) -> dict[Any, int]:
    result = await write_txn_markers.handle(ctx, request(27, 1, body))
    response = await asyncio.wait_for(result, 5) if isinstance(result, asyncio.Future) else result
    return {
        (m.producer_id, t.name, p.partition_index): p.error_code
        for m in response.body.markers
        for t in m.topics
        for p in t.partitions
    }


async def test_markers_are_answered_per_partition(replicas: LocalReplicas) -> None:
    store = RecordingGroupStore()
    ctx = services(replicas, store)
    begin(replicas, TopicPartition(TOPIC, 0), 7)
    begin(replicas, OFFSETS, 8)
    body = WriteTxnMarkersRequest(
        markers=[
            marker(7, True, 2, {TOPIC: [0, 5], "unknown": [0]}),
            marker(8, False, 2, {OFFSETS.topic: [0]}),
        ]
    )
    assert await answer(ctx, body) == {
        (7, TOPIC, 0): ErrorCode.NONE,
        (7, TOPIC, 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (7, "unknown", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (8, OFFSETS.topic, 0): ErrorCode.NONE,
    }
    assert store.completed == [(0, 8, False)]  # only the offsets partition's marker
    log = replicas.log_manager.get_log(TopicPartition(TOPIC, 0))
    assert log is not None and log.last_stable_offset == log.log_end_offset == 2
    # a marker of an older coordinator epoch is fenced, and nothing is written
    begin(replicas, TopicPartition(TOPIC, 0), 7, seq=1)
    stale = WriteTxnMarkersRequest(markers=[marker(7, False, 1, {TOPIC: [0]})])
    assert await answer(ctx, stale) == {(7, TOPIC, 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED}
    assert log.log_end_offset == 3 and log.last_stable_offset == 2


async def test_markers_are_appended_before_the_handler_returns(replicas: LocalReplicas) -> None:
    ctx = services(replicas, RecordingGroupStore())
    begin(replicas, TopicPartition(TOPIC, 0), 7)
    log = replicas.log_manager.get_log(TopicPartition(TOPIC, 0))
    assert log is not None and log.log_end_offset == 1
    body = WriteTxnMarkersRequest(markers=[marker(7, True, 2, {TOPIC: [0]})])
    result = await write_txn_markers.handle(ctx, request(27, 1, body))
    assert log.log_end_offset == 2  # appended in the handler's own step, no task between
    assert isinstance(result, asyncio.Future)
    response: Response = await asyncio.wait_for(result, 5)
    assert [
        p.error_code for m in response.body.markers for t in m.topics for p in t.partitions
    ] == [ErrorCode.NONE]


async def test_describe_producers(replicas: LocalReplicas) -> None:
    ctx = services(replicas, RecordingGroupStore())
    begin(replicas, TopicPartition(TOPIC, 0), 7)
    body = DescribeProducersRequest(
        topics=[
            DescribeProducersRequest.TopicRequest(name=TOPIC, partition_indexes=[0, 3]),
            DescribeProducersRequest.TopicRequest(name="unknown", partition_indexes=[0]),
        ]
    )
    response = await describe_producers.handle(ctx, request(61, 0, body))
    [known, unknown] = response.body.topics
    [p0, p3] = known.partitions
    assert p0.error_code == ErrorCode.NONE
    [state] = p0.active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence) == (7, 0, 0)
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, 0)
    assert p3.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert unknown.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
