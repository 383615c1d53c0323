"""MetadataCache: what this broker knows of the cluster, as the controller last told it.

The controller sends UpdateMetadata (6) to every live broker whenever brokers come or go
or partition leadership changes; the body carries the live brokers with their endpoints
and the state of the partitions that changed. The cache is the only reader of those
bodies. Metadata, DescribeCluster, CreateTopics (replica assignment over live brokers,
DelayedCreateTopics) and the data path's "who leads this partition" read it.

Invariants:

- Readers see whole snapshots: an update builds a new ``MetadataSnapshot`` and swaps it
  in, so a reader holding the old one never sees half an update (Kafka's copy-on-write
  ``metadataSnapshot``). Everything runs on the broker's event loop.
- A partition state whose leader is -2 (Kafka's LeaderDuringDelete) removes the
  partition; a topic left with no partitions is forgotten, id included.
- Topic ids come with UpdateMetadata v7+; a zero id never replaces a known one.
- An UpdateMetadata from an older controller epoch than the newest seen is refused by
  the handler before it reaches the cache (STALE_CONTROLLER_EPOCH).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from protocol.messages import UpdateMetadataRequest
from protocol.primitives import ZERO_UUID
from protocol.values import LEADER_DURING_DELETE


@dataclass(frozen=True, slots=True)
class CachedBroker:
    """A live broker: listener name -> (host, port), and its rack."""

    id: int
    endpoints: Mapping[str, tuple[str, int]]
    rack: str | None = None

    def endpoint(self, listener: str) -> tuple[str, int] | None:
        return self.endpoints.get(listener.upper())


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition's state as the controller published it."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    zk_version: int = 0
    controller_epoch: int = 0


@dataclass(frozen=True)
class MetadataSnapshot:
    """An immutable view of the cluster; replaced whole on each update."""

    brokers: Mapping[int, CachedBroker] = field(default_factory=dict)
    partitions: Mapping[str, Mapping[int, PartitionInfo]] = field(default_factory=dict)
    topic_ids: Mapping[str, uuid.UUID] = field(default_factory=dict)
    controller_id: int | None = None


class MetadataCache:
    """This broker's view of brokers, topics and partition leadership. Event-loop bound."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self._snapshot = MetadataSnapshot()
        #: number of UpdateMetadata requests applied (tests and metrics)
        self.updates = 0

    # -- updating ---------------------------------------------------------------------------

    @property
    def snapshot(self) -> MetadataSnapshot:
        return self._snapshot

    def update_metadata(
        self, body: UpdateMetadataRequest
    ) -> tuple[set[str], list[tuple[str, int]]]:
        """Apply an UpdateMetadata body (any version).

        Returns the topics whose partitions the update mentioned and the partitions it
        deleted (leader -2), so the caller can wake waiters and tell the ReplicaManager.
        """
        old = self._snapshot
        brokers = {b.id: _broker(b) for b in body.live_brokers or []}
        partitions: dict[str, dict[int, PartitionInfo]] = {
            t: dict(ps) for t, ps in old.partitions.items()
        }
        topic_ids = dict(old.topic_ids)
        touched: set[str] = set()
        deleted: list[tuple[str, int]] = []
        for topic, topic_id, state in _partition_states(body):
            touched.add(topic)
            if state.leader == LEADER_DURING_DELETE:
                if partitions.get(topic, {}).pop(state.partition_index, None) is not None:
                    deleted.append((topic, state.partition_index))
                if not partitions.get(topic):
                    partitions.pop(topic, None)
                    topic_ids.pop(topic, None)
                continue
            partitions.setdefault(topic, {})[state.partition_index] = PartitionInfo(
                leader=state.leader,
                leader_epoch=state.leader_epoch,
                isr=tuple(state.isr),
                replicas=tuple(state.replicas),
                offline_replicas=tuple(state.offline_replicas),
                zk_version=state.zk_version,
                controller_epoch=state.controller_epoch,
            )
            if topic_id is not None:
                topic_ids[topic] = topic_id
        controller_id = body.controller_id if body.controller_id >= 0 else None
        self._snapshot = MetadataSnapshot(
            brokers=MappingProxyType(brokers),
            partitions=MappingProxyType({t: MappingProxyType(ps) for t, ps in partitions.items()}),
            topic_ids=MappingProxyType(topic_ids),
            controller_id=controller_id,
        )
        self.updates += 1
        return touched, deleted

    # -- brokers ----------------------------------------------------------------------------

    @property
    def controller_id(self) -> int | None:
        return self._snapshot.controller_id

    def alive_brokers(self) -> list[CachedBroker]:
        """Live brokers in id order."""
        brokers = self._snapshot.brokers
        return [brokers[b] for b in sorted(brokers)]

    def alive_broker_ids(self) -> list[int]:
        return sorted(self._snapshot.brokers)

    def has_alive_broker(self, broker_id: int) -> bool:
        return broker_id in self._snapshot.brokers

    def broker(self, broker_id: int) -> CachedBroker | None:
        return self._snapshot.brokers.get(broker_id)

    def alive_endpoint(self, broker_id: int, listener: str) -> tuple[str, int] | None:
        broker = self._snapshot.brokers.get(broker_id)
        return None if broker is None else broker.endpoint(listener)

    # -- topics and partitions --------------------------------------------------------------

    def topic_names(self) -> list[str]:
        return sorted(self._snapshot.partitions)

    def contains_topic(self, topic: str) -> bool:
        return topic in self._snapshot.partitions

    def topic_id(self, topic: str) -> uuid.UUID:
        """The topic's id, or the zero UUID when unknown."""
        return self._snapshot.topic_ids.get(topic, ZERO_UUID)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        for name, tid in self._snapshot.topic_ids.items():
            if tid == topic_id:
                return name
        return None

    def partitions(self, topic: str) -> Mapping[int, PartitionInfo] | None:
        return self._snapshot.partitions.get(topic)

    def num_partitions(self, topic: str) -> int | None:
        parts = self._snapshot.partitions.get(topic)
        return None if parts is None else len(parts)

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        parts = self._snapshot.partitions.get(topic)
        return None if parts is None else parts.get(partition)

    def leader(self, topic: str, partition: int) -> int | None:
        """The partition's leader if it has a live one, else None."""
        info = self.partition(topic, partition)
        if info is None or info.leader < 0 or info.leader not in self._snapshot.brokers:
            return None
        return info.leader

    def has_leaders(self, topic: str, partitions: Iterable[int]) -> bool:
        """True when every listed partition of ``topic`` is known with a leader."""
        parts = self._snapshot.partitions.get(topic)
        if parts is None:
            return False
        for p in partitions:
            info = parts.get(p)
            if info is None or info.leader < 0:
                return False
        return True


def _broker(b: UpdateMetadataRequest.UpdateMetadataBroker) -> CachedBroker:
    endpoints: dict[str, tuple[str, int]] = {}
    for ep in b.endpoints:
        # v1-v2 have no listener name: the security protocol names it (PLAINTEXT = 0)
        listener = ep.listener or "PLAINTEXT"
        endpoints[listener.upper()] = (ep.host, ep.port)
    if not endpoints and b.v0_host:  # v0 has one plaintext host and port
        endpoints["PLAINTEXT"] = (b.v0_host, b.v0_port)
    return CachedBroker(b.id, MappingProxyType(endpoints), b.rack)


def _partition_states(
    body: UpdateMetadataRequest,
) -> Iterable[tuple[str, uuid.UUID | None, UpdateMetadataRequest.UpdateMetadataPartitionState]]:
    """(topic, topic id or None, partition state) for v0-4 (ungrouped) and v5+ bodies.
    Versions without topic ids decode the id as zero, which means none."""
    for state in body.ungrouped_partition_states:
        yield state.topic_name, None, state
    for topic_state in body.topic_states:
        topic_id = None if topic_state.topic_id == ZERO_UUID else topic_state.topic_id
        for state in topic_state.partition_states:
            yield topic_state.topic_name, topic_id, state
