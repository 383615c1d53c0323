"""Partition reassignment as pure decisions: the replica sets, validation, the phase table.

A reassignment moves partition P from its original replicas (ORS) to target replicas
(TRS). While it runs, P is assigned the union, ``RS = TRS + (ORS - TRS)`` (target order
first, so the preferred leader is already the target's), and the topic znode records
``adding = TRS - ORS`` and ``removing = ORS - TRS`` next to it. That triple is a
``ReplicaAssignment``; ORS and TRS are recovered from it, so a controller that takes over
resumes every reassignment from the topic znodes alone.

It runs in two phases, chosen by ``phase_of`` from the assignment and the ISR:

- START: some target replica is not yet in the ISR. The RS with its adding/removing sets
  is written, the leader epoch bumped and LeaderAndIsr sent to every replica of RS, and
  the adding replicas are started (NewReplica -> OnlineReplica) so they fetch from the
  leader. The controller then waits for the ISR to grow.
- COMPLETE: every target replica is in the ISR. Leadership moves into TRS if needed, the
  removing replicas are taken offline (out of the ISR) and deleted, RS = TRS is written
  with no adding/removing, and the request in /admin/reassign_partitions is cleared.

``PHASE_STEPS`` lists the steps of each phase in the order the controller performs them
(controller.reassigner carries them out). A new target for a partition that is already
moving replaces the old one: the union is taken over the *original* replicas again, and
replicas that were being added but are in neither set any more are stopped at once.
Cancelling (no target) is a reassignment back to ORS.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from protocol import ErrorCode


@dataclass(frozen=True)
class ReplicaAssignment:
    """A partition's replicas (RS) and, while it moves, the replicas being added and
    removed. Invariant: ``adding`` and ``removing`` are disjoint subsets of ``replicas``."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        """ORS: what the partition had before the reassignment began."""
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """TRS: what the partition will have when the reassignment completes."""
        return tuple(r for r in self.replicas if r not in self.removing)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """The assignment while moving from this one's ORS to ``target``."""
        origin = self.origin_replicas
        full = tuple(dict.fromkeys([*target, *origin]))
        return ReplicaAssignment(
            full,
            tuple(r for r in full if r not in origin),
            tuple(r for r in full if r not in target),
        )

    def completed(self) -> ReplicaAssignment:
        """The assignment once the reassignment is done: RS = TRS, nothing moving."""
        return ReplicaAssignment(self.target_replicas)


@dataclass(frozen=True)
class ReassignmentError:
    """Why a partition's reassignment was refused: a Kafka error code and message."""

    error_code: int
    message: str | None = None


def validate_target(
    current: ReplicaAssignment, target: Sequence[int], live_brokers: Collection[int] | None
) -> ReassignmentError | None:
    """INVALID_REPLICA_ASSIGNMENT for an empty list, duplicates, negative ids, or a new
    replica on a broker that is not alive (Kafka's checks); None when acceptable.
    ``live_brokers`` None skips the liveness check (requests in ZooKeeper)."""
    if not target:
        return ReassignmentError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Empty replica list specified in partition reassignment.",
        )
    if len(set(target)) != len(target):
        return ReassignmentError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Duplicate replica ids in partition reassignment replica list: {list(target)}",
        )
    if any(r < 0 for r in target):
        return ReassignmentError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Invalid broker id in replica list: {list(target)}",
        )
    adding = current.reassign_to(target).adding
    if live_brokers is not None and not set(adding) <= set(live_brokers):
        return ReassignmentError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Replica assignment has brokers that are not alive. Replica list: {list(adding)}, "
            f"live broker list: {sorted(live_brokers)}",
        )
    return None


def plan_reassignment(
    current: ReplicaAssignment, target: Sequence[int] | None
) -> ReplicaAssignment | None:
    """The assignment to move to. ``target`` None cancels: back to ORS when a
    reassignment is in progress, None (NO_REASSIGNMENT_IN_PROGRESS) when not."""
    if target is None:
        if not current.is_being_reassigned:
            return None
        return current.reassign_to(current.origin_replicas)
    return current.reassign_to(target)


def unneeded_replicas(current: ReplicaAssignment, new: ReplicaAssignment) -> tuple[int, ...]:
    """Replicas of ``current`` that ``new`` no longer has at all (adding replicas of a
    reassignment that was replaced or cancelled): they are stopped and deleted at once."""
    return tuple(r for r in current.replicas if r not in new.replicas)


class Phase(enum.Enum):
    START = "start"
    COMPLETE = "complete"


class Step(enum.Enum):
    """One thing the controller does for a reassigning partition (see PHASE_STEPS)."""

    #: bump the leader epoch; LeaderAndIsr with RS to ORS (is_new false) and adding (true)
    BUMP_EPOCH_AND_SEND = "bump leader epoch, LeaderAndIsr to RS"
    #: adding replicas NonExistent -> NewReplica
    START_ADDING = "adding replicas -> NewReplica"
    #: adding replicas -> OnlineReplica
    ONLINE_ADDING = "adding replicas -> OnlineReplica"
    #: RS = TRS in memory; a leader outside TRS (or dead) is replaced, else the epoch bumped
    MOVE_LEADER = "RS = TRS in memory, leader into TRS"
    #: removing replicas -> Offline (out of the ISR) -> deletion -> NonExistent
    STOP_REMOVING = "removing replicas -> Offline -> NonExistent"
    #: the topic znode: RS = TRS, no adding/removing
    WRITE_TARGET = "write RS = TRS"
    #: drop the partition from /admin/reassign_partitions and stop tracking it
    FORGET = "clear the reassignment request"
    #: UpdateMetadata for the partition to every live broker
    UPDATE_METADATA = "UpdateMetadata"


#: the steps of each phase, in order. START runs each time the partition's target is set
#: (the assignment itself is written first, by the caller, for both phases); COMPLETE
#: once every target replica is in the ISR.
PHASE_STEPS: dict[Phase, tuple[Step, ...]] = {
    Phase.START: (Step.BUMP_EPOCH_AND_SEND, Step.START_ADDING),
    Phase.COMPLETE: (
        Step.ONLINE_ADDING,
        Step.MOVE_LEADER,
        Step.STOP_REMOVING,
        Step.WRITE_TARGET,
        Step.FORGET,
        Step.UPDATE_METADATA,
    ),
}


def phase_of(assignment: ReplicaAssignment, isr: Collection[int]) -> Phase:
    """COMPLETE once every target replica is in the ISR (at once when nothing moves)."""
    if not assignment.is_being_reassigned:
        return Phase.COMPLETE
    return Phase.COMPLETE if set(assignment.target_replicas) <= set(isr) else Phase.START


class LeaderMove(enum.Enum):
    #: the leader is outside TRS or not alive: reassignment election among TRS
    ELECT = "elect a leader from the target replicas"
    #: the leader stays: bump its epoch so the replicas learn the smaller replica set
    BUMP_EPOCH = "keep the leader, bump the leader epoch"


def leader_move(target: Collection[int], leader: int, leader_alive: bool) -> LeaderMove:
    """What COMPLETE does with the current leader once RS = TRS."""
    if leader in target and leader_alive:
        return LeaderMove.BUMP_EPOCH
    return LeaderMove.ELECT
