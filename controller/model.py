"""Value types of the controller's own: a replica as the replica state machine sees it.

The metadata values that ZooKeeper stores (leadership, brokers, assignments) are in
``zk.model``.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.values import TopicPartition


@dataclass(frozen=True, order=True)
class PartitionReplica:
    """One replica of one partition: ``replica`` is the broker id that hosts it."""

    tp: TopicPartition
    replica: int

    def __str__(self) -> str:
        return f"[{self.tp}, replica {self.replica}]"
