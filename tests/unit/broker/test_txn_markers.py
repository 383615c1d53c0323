"""The marker channel against a fake sender: one request per destination broker, retries
after a failed send or a retriable partition error, leader changes followed, fencing,
deleted topics, and cancellation when the transaction's partition moves away."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from broker.txn.markers import MarkerChannel, MarkerOutcome, PendingMarkers
from protocol.errors import ErrorCode
from protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from protocol.values import TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
DEADLINE_S = 5.0

Resp = WriteTxnMarkersResponse


@dataclass
class FakeSender:
    """Answers each request from ``errors`` (tp -> error codes to answer in turn, then
    NONE); ``unreachable`` brokers fail the send whole."""

    errors: dict[TopicPartition, list[int]] = field(default_factory=dict)
    unreachable: set[int] = field(default_factory=set)
    sent: list[tuple[int, WriteTxnMarkersRequest]] = field(default_factory=list)
    closed: bool = False

    async def send(self, broker_id: int, request: WriteTxnMarkersRequest) -> Resp:
        self.sent.append((broker_id, request))
        if broker_id in self.unreachable:
            raise ConnectionError(f"broker {broker_id} is down")
        results = []
        for marker in request.markers:
            topics = []
            for topic in marker.topics:
                parts = []
                for p in topic.partition_indexes:
                    queue = self.errors.get(TopicPartition(topic.name, p), [])
                    error = queue.pop(0) if queue else ErrorCode.NONE
                    parts.append(
                        Resp.WritableTxnMarkerPartitionResult(partition_index=p, error_code=error)
                    )
                topics.append(Resp.WritableTxnMarkerTopicResult(name=topic.name, partitions=parts))
            results.append(
                Resp.WritableTxnMarkerResult(producer_id=marker.producer_id, topics=topics)
            )
        return Resp(markers=results)

    async def close(self) -> None:
        self.closed = True

    def partitions_sent_to(self, broker_id: int) -> list[TopicPartition]:
        return [
            TopicPartition(t.name, p)
            for b, req in self.sent
            if b == broker_id
            for m in req.markers
            for t in m.topics
            for p in t.partition_indexes
        ]


def pending(tps: set[TopicPartition], pid: int = 7, txn_partition: int = 0) -> PendingMarkers:
    return PendingMarkers("tx", pid, 2, True, coordinator_epoch=5, txn_partition=txn_partition,
                          remaining=set(tps))  # fmt: skip


def channel(
    sender: FakeSender, leaders: dict[TopicPartition, int], topics: set[str] | None = None
) -> MarkerChannel:
    existing = {"a", "b"} if topics is None else topics
    return MarkerChannel(leaders.get, existing.__contains__, sender, retry_backoff_ms=10)


async def outcome(markers: PendingMarkers) -> MarkerOutcome:
    return await asyncio.wait_for(markers.done, DEADLINE_S)


async def test_markers_go_to_each_leader_in_one_request_per_broker() -> None:
    sender = FakeSender()
    ch = channel(sender, {A0: 1, A1: 2, B0: 1})
    first, second = pending({A0, A1}), pending({B0}, pid=8)
    ch.add(first)
    ch.add(second)
    assert await outcome(first) is MarkerOutcome.WRITTEN
    assert await outcome(second) is MarkerOutcome.WRITTEN
    assert sorted(sender.partitions_sent_to(1)) == [A0, B0]
    assert sender.partitions_sent_to(2) == [A1]
    to_1 = [req for b, req in sender.sent if b == 1]
    assert len(to_1) == 1 and len(to_1[0].markers) == 2  # both transactions, one request
    marker = to_1[0].markers[0]
    assert (marker.producer_epoch, marker.transaction_result, marker.coordinator_epoch) == (
        2, True, 5,
    )  # fmt: skip
    await ch.close()
    assert sender.closed


async def test_a_failed_send_is_retried_and_a_leader_change_followed() -> None:
    sender = FakeSender(unreachable={1})
    leaders = {A0: 1}
    ch = channel(sender, leaders)
    markers = pending({A0})
    ch.add(markers)

    async def moved() -> None:
        while len(sender.sent) < 2:  # failed at least twice on the old leader
            await asyncio.sleep(0.005)
        leaders[A0] = 3

    await asyncio.wait_for(moved(), DEADLINE_S)
    assert await outcome(markers) is MarkerOutcome.WRITTEN
    assert sender.partitions_sent_to(3) == [A0]
    assert ch.retries >= 2
    await ch.close()


async def test_retriable_partition_errors_are_retried() -> None:
    sender = FakeSender(
        errors={A0: [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS]}
    )
    ch = channel(sender, {A0: 1, A1: 1})
    markers = pending({A0, A1})
    ch.add(markers)
    assert await outcome(markers) is MarkerOutcome.WRITTEN
    assert sender.partitions_sent_to(1).count(A0) == 3
    assert sender.partitions_sent_to(1).count(A1) == 1
    await ch.close()


async def test_a_partition_without_leader_waits_for_one() -> None:
    sender = FakeSender()
    leaders: dict[TopicPartition, int] = {}
    ch = channel(sender, leaders)
    markers = pending({A0})
    ch.add(markers)

    async def retried_twice() -> None:
        while ch.retries < 2:
            await asyncio.sleep(0.005)

    await asyncio.wait_for(retried_twice(), DEADLINE_S)
    assert not markers.done.done() and ch.queued() == 1 and sender.sent == []
    leaders[A0] = 2
    assert await outcome(markers) is MarkerOutcome.WRITTEN
    assert ch.queued() == 0
    await ch.close()


async def test_fencing_errors_give_the_transaction_up() -> None:
    for error in (ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH):
        sender = FakeSender(errors={A0: [error]})
        ch = channel(sender, {A0: 1, A1: 1})
        markers = pending({A0, A1})
        ch.add(markers)
        assert await outcome(markers) is MarkerOutcome.FENCED
        await ch.close()


async def test_a_deleted_topic_needs_no_marker() -> None:
    sender = FakeSender(errors={B0: [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]})
    ch = channel(sender, {A0: 1}, topics={"a"})
    markers = pending({A0, B0})
    ch.add(markers)
    assert await outcome(markers) is MarkerOutcome.WRITTEN
    assert sender.partitions_sent_to(1) == [A0]
    await ch.close()


async def test_markers_of_a_partition_that_moved_away_are_cancelled() -> None:
    sender = FakeSender(unreachable={1})
    ch = channel(sender, {A0: 1})
    here, elsewhere = pending({A0}, txn_partition=3), pending({A0}, pid=8, txn_partition=4)
    ch.add(here)
    ch.add(elsewhere)
    ch.cancel_partition(3)
    assert await outcome(here) is MarkerOutcome.CANCELLED
    assert not elsewhere.done.done()
    await ch.close()
    assert await outcome(elsewhere) is MarkerOutcome.CANCELLED
