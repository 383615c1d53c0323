"""Replica assignment the way Kafka assigns it when no rack information is used.

Goals (Kafka's AdminUtils.assignReplicasToBrokers, rack-unaware):

1. spread partition leaders (first replicas) evenly over the brokers: partition p's
   first replica is broker ``(start + p) mod n``;
2. spread each broker's followers over the other brokers, so losing one broker moves
   its load evenly: the k-th follower sits ``1 + (shift + k) mod (n - 1)`` places after
   the first replica, where ``shift`` grows by one each time p wraps around the brokers.

``start`` and the initial ``shift`` are random unless fixed: pass ``rng`` (a seeded
``random.Random``) for determinism, or ``start_index`` (CreatePartitions continues from
the index of the first replica of partition 0, as Kafka does). Brokers are taken in id
order. Pure functions; no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from protocol.errors import ErrorCode


class AssignmentError(ValueError):
    """A request that cannot be assigned; ``error_code`` is the Kafka error to return."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


def _follower_index(first: int, shift: int, k: int, n: int) -> int:
    return (first + 1 + (shift + k) % (n - 1)) % n


def assign_replicas(
    broker_ids: Sequence[int],
    num_partitions: int,
    replication_factor: int,
    *,
    start_index: int | None = None,
    start_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """partition id -> replica broker ids (first = preferred leader)."""
    if num_partitions <= 0:
        raise AssignmentError(
            ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        )
    if replication_factor <= 0:
        raise AssignmentError(
            ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
        )
    brokers = sorted(broker_ids)
    n = len(brokers)
    if replication_factor > n:
        raise AssignmentError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {replication_factor} larger than available brokers: {n}.",
        )
    rng = rng or random.Random()
    if start_index is None or start_index < 0:
        start = rng.randrange(n)
        shift = rng.randrange(n)
    else:
        start = shift = start_index
    out: dict[int, list[int]] = {}
    for p in range(start_partition, start_partition + num_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        followers = (_follower_index(first, shift, k, n) for k in range(replication_factor - 1))
        out[p] = [brokers[first], *(brokers[i] for i in followers)]
    return out


def start_index_for_new_partitions(
    broker_ids: Sequence[int], existing: Mapping[int, Sequence[int]]
) -> int | None:
    """Kafka continues an existing topic from the index, among live brokers, of partition
    0's first replica (None, meaning random, when that broker is not live)."""
    first = existing.get(0)
    brokers = sorted(broker_ids)
    if not first or first[0] not in brokers:
        return None
    return brokers.index(first[0])


def check_manual_assignment(
    assignment: Mapping[int, Sequence[int]],
    live_brokers: Sequence[int] | None,
    *,
    first_partition: int = 0,
    replication_factor: int | None = None,
) -> None:
    """Validate a replica assignment given in a request (CreateTopics assignments,
    CreatePartitions new assignments): partitions numbered consecutively from
    ``first_partition``, no duplicate replicas, a consistent replication factor, live
    brokers only (when ``live_brokers`` is given: Kafka checks it when adding partitions,
    not when creating a topic)."""
    if not assignment:
        raise AssignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Replica assignment is empty.")
    expected = list(range(first_partition, first_partition + len(assignment)))
    if sorted(assignment) != expected:
        raise AssignmentError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Partitions should be a consecutive integer sequence from "
            f"{first_partition}, got {sorted(assignment)}.",
        )
    for p, replicas in sorted(assignment.items()):
        if not replicas:
            raise AssignmentError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Partition {p} has no replicas."
            )
        if len(set(replicas)) != len(replicas):
            raise AssignmentError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate brokers not allowed in replica assignment: {list(replicas)} "
                f"for partition id {p}.",
            )
        if replication_factor is None:
            replication_factor = len(replicas)
        elif len(replicas) != replication_factor:
            raise AssignmentError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"All partitions should have the same number of replicas ({replication_factor}),"
                f" partition {p} has {len(replicas)}.",
            )
        unknown = [] if live_brokers is None else sorted(set(replicas) - set(live_brokers))
        if unknown:
            raise AssignmentError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Unknown broker(s) in replica assignment: {unknown}.",
            )
