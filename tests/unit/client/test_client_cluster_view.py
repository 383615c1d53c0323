"""ClusterView from a MetadataResponse: brokers, leaders, grouping, merging."""

from __future__ import annotations

import uuid

from client.cluster_view import ClusterView
from protocol import ErrorCode
from protocol.messages import MetadataResponse
from protocol.values import NO_LEADER

TID = uuid.uuid4()


def metadata(topics: list[tuple[str, list[tuple[int, int]]]], controller: int = 1) -> object:
    brokers = [
        MetadataResponse.MetadataResponseBroker(node_id=i, host="127.0.0.1", port=9092 + i)
        for i in (0, 1)
    ]
    return MetadataResponse(
        brokers=brokers,
        cluster_id="c1",
        controller_id=controller,
        topics=[
            MetadataResponse.MetadataResponseTopic(
                name=name,
                topic_id=TID,
                partitions=[
                    MetadataResponse.MetadataResponsePartition(
                        partition_index=p,
                        leader_id=leader,
                        replica_nodes=[0, 1],
                        isr_nodes=[leader] if leader >= 0 else [],
                        offline_replicas=[],
                    )
                    for p, leader in parts
                ],
            )
            for name, parts in topics
        ],
    )


def test_leaders_and_grouping() -> None:
    view = ClusterView.from_metadata(metadata([("t", [(0, 0), (1, 1), (2, -1), (3, 7)])]))
    assert view.controller_id == 1 and view.cluster_id == "c1"
    assert view.brokers[1].port == 9093
    assert view.leader("t", 0) == 0 and view.leader("t", 1) == 1
    assert view.leader("t", 2) == NO_LEADER
    assert view.leader("t", 3) == NO_LEADER  # a leader missing from the broker list
    assert view.leader("t", 9) == NO_LEADER and view.leader("nope", 0) == NO_LEADER
    assert view.by_leader("t", [0, 1, 2, 3]) == {0: [0], 1: [1], NO_LEADER: [2, 3]}
    t = view.topics["t"]
    assert t.topic_id == TID and t.replication_factor == 2 and t.error_code == ErrorCode.NONE
    assert view.partitions("t") == [0, 1, 2, 3]


def test_merge_keeps_other_topics_and_takes_newer_brokers() -> None:
    old = ClusterView.from_metadata(metadata([("a", [(0, 0)]), ("b", [(0, 0)])], controller=0))
    new = ClusterView.from_metadata(metadata([("a", [(0, 1)])], controller=1))
    merged = old.merged(new)
    assert merged.leader("a", 0) == 1 and merged.leader("b", 0) == 0
    assert merged.controller_id == 1
