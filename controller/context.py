"""ControllerContext: everything the active controller knows, in memory and pure.

It is filled from ZooKeeper when a broker becomes controller and then kept current by
the controller's event handlers; it never performs I/O. Keys: partitions by
TopicPartition, replicas by PartitionReplica, brokers by id. Not safe across tasks or
threads: only the controller's single event-processing task touches it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator

from controller.model import PartitionReplica
from controller.reassignment_rules import ReplicaAssignment
from controller.states import PartitionState, ReplicaState
from protocol.values import TopicPartition
from zk.model import BrokerInfo, LeaderIsrAndControllerEpoch, TopicAssignment


class ControllerContext:
    def __init__(self) -> None:
        self.epoch = 0
        #: zkVersion of /controller_epoch after our election: every write checks it.
        self.epoch_zk_version = 0
        self.live_brokers: dict[int, BrokerInfo] = {}
        #: brokers in a controlled shutdown: alive, but no longer given leadership.
        self.shutting_down: set[int] = set()
        self.topic_ids: dict[str, uuid.UUID] = {}
        #: topic -> partition -> assigned replicas (AR), preferred replica first
        self.assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        self.leadership: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.partition_states: dict[TopicPartition, PartitionState] = {}
        self.replica_states: dict[PartitionReplica, ReplicaState] = {}
        #: topics queued for deletion (/admin/delete_topics), until their deletion completes
        self.topics_to_delete: set[str] = set()
        #: queued topics whose partitions already went Offline -> NonExistent
        self.topics_with_deletion_started: set[str] = set()
        #: queued topics that cannot proceed now (a replica's broker is down, or a
        #: partition is being reassigned); deletion resumes when the obstacle goes
        self.topics_ineligible_for_deletion: set[str] = set()
        #: broker -> partitions whose replica there sits on a failed log directory
        #: (LeaderAndIsr answered KAFKA_STORAGE_ERROR); forgotten when the broker restarts
        self.replicas_on_offline_dirs: dict[int, set[TopicPartition]] = {}
        #: partitions being reassigned: their full assignment (``replicas`` equals the
        #: partition's entry in ``assignments``), adding and removing replicas included
        self.reassignments: dict[TopicPartition, ReplicaAssignment] = {}

    # -- brokers --------------------------------------------------------------------------

    def add_live_brokers(self, brokers: Iterable[BrokerInfo]) -> None:
        for b in brokers:
            self.live_brokers[b.id] = b

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for bid in broker_ids:
            self.live_brokers.pop(bid, None)
            self.shutting_down.discard(bid)
            self.replicas_on_offline_dirs.pop(bid, None)

    def live_broker_ids(self) -> set[int]:
        """Brokers that may take leadership: registered and not shutting down."""
        return set(self.live_brokers) - self.shutting_down

    def live_or_shutting_down_ids(self) -> set[int]:
        return set(self.live_brokers)

    def is_replica_online(self, broker_id: int, include_shutting_down: bool = False) -> bool:
        if include_shutting_down:
            return broker_id in self.live_brokers
        return broker_id in self.live_brokers and broker_id not in self.shutting_down

    def eligible_replicas(self, tp: TopicPartition) -> set[int]:
        """The brokers that may lead ``tp``: live, not shutting down, and not holding it on
        a failed log directory."""
        return {
            b for b in self.live_broker_ids() if tp not in self.replicas_on_offline_dirs.get(b, ())
        }

    def broker_epoch(self, broker_id: int) -> int:
        b = self.live_brokers.get(broker_id)
        return b.epoch if b is not None else -1

    # -- topics and assignments -----------------------------------------------------------

    def set_topic(self, assignment: TopicAssignment) -> None:
        self.topic_ids[assignment.topic] = assignment.topic_id
        self.assignments[assignment.topic] = dict(assignment.partitions)
        for p, replicas in assignment.partitions.items():
            full = ReplicaAssignment(
                replicas,
                assignment.adding_replicas.get(p, ()),
                assignment.removing_replicas.get(p, ()),
            )
            self.set_full_assignment(TopicPartition(assignment.topic, p), full)

    def set_partition_replicas(self, tp: TopicPartition, replicas: tuple[int, ...]) -> None:
        self.assignments.setdefault(tp.topic, {})[tp.partition] = tuple(replicas)

    def set_full_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        """A partition's replicas with its adding/removing replicas (a reassignment)."""
        self.set_partition_replicas(tp, assignment.replicas)
        if assignment.is_being_reassigned:
            self.reassignments[tp] = assignment
        else:
            self.reassignments.pop(tp, None)

    def full_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        return self.reassignments.get(tp) or ReplicaAssignment(self.partition_replicas(tp))

    def remove_topic(self, topic: str) -> None:
        """Forget a topic completely (after its deletion finished)."""
        for tp in list(self.partitions_for_topic(topic)):
            self.leadership.pop(tp, None)
            self.partition_states.pop(tp, None)
            self.reassignments.pop(tp, None)
        for pr in [pr for pr in self.replica_states if pr.tp.topic == topic]:
            del self.replica_states[pr]
        self.assignments.pop(topic, None)
        self.topic_ids.pop(topic, None)
        self.topics_to_delete.discard(topic)
        self.topics_with_deletion_started.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)

    def all_topics(self) -> set[str]:
        return set(self.assignments)

    def partitions_for_topic(self, topic: str) -> Iterator[TopicPartition]:
        for p in sorted(self.assignments.get(topic, {})):
            yield TopicPartition(topic, p)

    def all_partitions(self) -> list[TopicPartition]:
        return [tp for t in sorted(self.assignments) for tp in self.partitions_for_topic(t)]

    def partition_replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        return self.assignments.get(tp.topic, {}).get(tp.partition, ())

    def replicas_for_partitions(self, tps: Iterable[TopicPartition]) -> list[PartitionReplica]:
        return [PartitionReplica(tp, r) for tp in tps for r in self.partition_replicas(tp)]

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp in self.all_partitions() if broker_id in self.partition_replicas(tp)]

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[PartitionReplica]:
        ids = set(broker_ids)
        return [
            PartitionReplica(tp, r)
            for tp in self.all_partitions()
            for r in self.partition_replicas(tp)
            if r in ids
        ]

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return [
            tp
            for tp, st in sorted(self.leadership.items())
            if st.leader_and_isr.leader == broker_id
        ]

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_delete

    def replicas_for_topic(self, topic: str) -> list[PartitionReplica]:
        return self.replicas_for_partitions(self.partitions_for_topic(topic))

    def replicas_in_state(self, topic: str, state: ReplicaState) -> list[PartitionReplica]:
        return [pr for pr in self.replicas_for_topic(topic) if self.replica_state(pr) is state]

    def are_all_replicas_in_state(self, topic: str, state: ReplicaState) -> bool:
        return all(self.replica_state(pr) is state for pr in self.replicas_for_topic(topic))

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        return any(self.replica_state(pr) is state for pr in self.replicas_for_topic(topic))

    def is_topic_being_reassigned(self, topic: str) -> bool:
        return any(tp.topic == topic for tp in self.reassignments)

    # -- leadership and states ------------------------------------------------------------

    def put_leadership(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> None:
        self.leadership[tp] = state

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        return self.partition_states.get(tp, PartitionState.NON_EXISTENT)

    def replica_state(self, pr: PartitionReplica) -> ReplicaState:
        return self.replica_states.get(pr, ReplicaState.NON_EXISTENT)

    def partitions_in_states(self, *states: PartitionState) -> list[TopicPartition]:
        wanted = set(states)
        return sorted(tp for tp, s in self.partition_states.items() if s in wanted)

    def offline_partition_count(self) -> int:
        return len(self.partitions_in_states(PartitionState.OFFLINE))

    def reset(self) -> None:
        """Forget everything: called when this broker stops being the controller."""
        self.__init__()  # type: ignore[misc]
