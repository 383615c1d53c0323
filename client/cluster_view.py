"""What the client knows of the cluster, built from one MetadataResponse (pure data).

A view is immutable: a refresh builds a new one. Partition leaders of -1 mean "no leader
now" (LEADER_NOT_AVAILABLE: an election is in progress or every replica is down).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from protocol import ErrorCode
from protocol.values import NO_LEADER


@dataclass(frozen=True, slots=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...] = ()
    error_code: int = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: dict[int, PartitionInfo]
    error_code: int = ErrorCode.NONE

    @property
    def replication_factor(self) -> int:
        """Replicas of partition 0 (Kafka's tool reports that one)."""
        first = self.partitions.get(0)
        return len(first.replicas) if first is not None else 0


@dataclass(frozen=True)
class ClusterView:
    brokers: dict[int, BrokerNode] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    controller_id: int = -1
    cluster_id: str | None = None

    @staticmethod
    def from_metadata(body: Any) -> ClusterView:
        """From a MetadataResponse body (any version)."""
        brokers = {
            b.node_id: BrokerNode(b.node_id, b.host, b.port, getattr(b, "rack", None))
            for b in body.brokers
        }
        topics = {}
        for t in body.topics:
            if t.name is None:
                continue
            parts = {
                p.partition_index: PartitionInfo(
                    partition=p.partition_index,
                    leader=p.leader_id,
                    leader_epoch=p.leader_epoch,
                    replicas=tuple(p.replica_nodes),
                    isr=tuple(p.isr_nodes),
                    offline=tuple(p.offline_replicas),
                    error_code=p.error_code,
                )
                for p in t.partitions
            }
            topics[t.name] = TopicInfo(t.name, t.topic_id, t.is_internal, parts, t.error_code)
        return ClusterView(brokers, topics, body.controller_id, body.cluster_id)

    def merged(self, newer: ClusterView) -> ClusterView:
        """``newer``'s brokers and controller, with its topics replacing ours of the same
        name (a refresh of some topics keeps what we knew of the others)."""
        topics = dict(self.topics)
        topics.update(newer.topics)
        return ClusterView(newer.brokers, topics, newer.controller_id, newer.cluster_id)

    def leader(self, topic: str, partition: int) -> int:
        """The leader's node id, or NO_LEADER when unknown."""
        t = self.topics.get(topic)
        if t is None:
            return NO_LEADER
        p = t.partitions.get(partition)
        if p is None:
            return NO_LEADER
        return p.leader if p.leader in self.brokers else NO_LEADER

    def partitions(self, topic: str) -> list[int]:
        t = self.topics.get(topic)
        return sorted(t.partitions) if t is not None else []

    def by_leader(self, topic: str, partitions: list[int]) -> dict[int, list[int]]:
        """Group ``partitions`` by leader; those without one are under NO_LEADER."""
        out: dict[int, list[int]] = {}
        for p in partitions:
            out.setdefault(self.leader(topic, p), []).append(p)
        return out
