"""client.delete_records over a fake cluster: one request per leader, a partition whose
leader moved sent again to the new one after a refresh, unknown partitions answered
UNKNOWN_TOPIC_OR_PARTITION without a request, and errors of the brokers passed on."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from client import delete_records
from client.client import ClientConfig, KafkaClient
from client.cluster_view import BrokerNode, ClusterView, PartitionInfo, TopicInfo
from protocol import ApiKey, ErrorCode
from protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse
from protocol.values import TopicPartition
from timer.clock import MockClock

pytestmark = pytest.mark.timeout(10)

R = DeleteRecordsResponse


def view(leaders: dict[int, int]) -> ClusterView:
    """Topic ``t`` with partition -> leader; brokers 1 and 2."""
    parts = {p: PartitionInfo(p, leader, 0, (1, 2), (1, 2)) for p, leader in leaders.items()}
    brokers = {b: BrokerNode(b, "127.0.0.1", 9000 + b) for b in (1, 2)}
    return ClusterView(brokers, {"t": TopicInfo("t", uuid.uuid4(), False, parts)})


class FakeCluster:
    """Answers DeleteRecords as ``answers[broker][partition]`` (error, low watermark); the
    views are what each metadata refresh returns in turn (the last one repeats)."""

    def __init__(
        self, views: list[ClusterView], answers: dict[int, dict[int, tuple[int, int]]]
    ) -> None:
        self.views = views
        self.answers = answers
        self.sent: list[tuple[int, list[tuple[int, int]]]] = []
        self.client = KafkaClient(
            "127.0.0.1:1", ClientConfig(retries=3, retry_backoff_s=0.001), clock=MockClock()
        )
        self.client.refresh_metadata = self.refresh  # type: ignore[method-assign]
        self.client.request = self.request  # type: ignore[method-assign]

    async def refresh(self, topics: Any = None, **kw: Any) -> ClusterView:
        self.client.view = self.views.pop(0) if len(self.views) > 1 else self.views[0]
        return self.client.view

    async def request(self, node_id: int | None, api_key: int, body: Any, **kw: Any) -> Any:
        assert node_id is not None
        assert api_key == ApiKey.DELETE_RECORDS and isinstance(body, DeleteRecordsRequest)
        asked = [(p.partition_index, p.offset) for t in body.topics for p in t.partitions]
        self.sent.append((node_id, asked))
        partitions = [
            R.DeleteRecordsPartitionResult(
                partition_index=p,
                error_code=self.answers[node_id][p][0],
                low_watermark=self.answers[node_id][p][1],
            )
            for p, _ in asked
        ]
        return R(
            throttle_time_ms=0, topics=[R.DeleteRecordsTopicResult(name="t", partitions=partitions)]
        )


async def test_one_request_per_leader_and_a_moved_leader_is_asked_again() -> None:
    nl = ErrorCode.NOT_LEADER_OR_FOLLOWER
    fake = FakeCluster(
        [view({0: 1, 1: 2}), view({0: 2, 1: 2})],
        {1: {0: (nl, -1)}, 2: {0: (0, 5), 1: (0, 7)}},
    )
    results = await delete_records(
        fake.client, {TopicPartition("t", 0): 5, TopicPartition("t", 1): -1}
    )
    assert {tp.partition: (r.error_code, r.low_watermark) for tp, r in results.items()} == {
        0: (ErrorCode.NONE, 5),
        1: (ErrorCode.NONE, 7),
    }
    assert sorted(fake.sent[:2]) == [(1, [(0, 5)]), (2, [(1, -1)])]
    assert fake.sent[2:] == [(2, [(0, 5)])]


async def test_unknown_partitions_are_answered_without_asking() -> None:
    fake = FakeCluster([view({0: 1})], {})
    results = await delete_records(
        fake.client, {TopicPartition("t", 9): 1, TopicPartition("other", 0): 1}
    )
    assert {r.error_code for r in results.values()} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert fake.sent == []


async def test_the_brokers_errors_are_final_and_a_leader_that_never_settles_is_reported() -> None:
    nl = ErrorCode.NOT_LEADER_OR_FOLLOWER
    fake = FakeCluster(
        [view({0: 1, 1: 1})], {1: {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1), 1: (nl, -1)}}
    )
    results = await delete_records(
        fake.client, {TopicPartition("t", 0): 99, TopicPartition("t", 1): 1}
    )
    assert results[TopicPartition("t", 0)].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert results[TopicPartition("t", 1)].error_code == nl
    assert len(fake.sent) == 4  # the first try and the client's three retries
