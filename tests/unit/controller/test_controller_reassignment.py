"""Partition reassignment's pure decisions: the replica sets (RS, adding, removing) while a
partition moves, Kafka's validation of a target, cancelling, replacing a reassignment
in progress, the phase a partition is in and the steps of each phase, and what happens
to the leader when it completes."""

from __future__ import annotations

import pytest

from controller.reassignment_rules import (
    PHASE_STEPS,
    LeaderMove,
    Phase,
    ReplicaAssignment,
    Step,
    leader_move,
    phase_of,
    plan_reassignment,
    unneeded_replicas,
    validate_target,
)
from protocol import ErrorCode

RA = ReplicaAssignment


@pytest.mark.parametrize(
    ("origin", "target", "expected"),
    [
        # moving entirely: targets first, then the originals being removed
        ((1, 2), (3, 4), RA((3, 4, 1, 2), adding=(3, 4), removing=(1, 2))),
        # overlapping: the shared replica is neither added nor removed
        ((1, 2, 3), (2, 3, 4), RA((2, 3, 4, 1), adding=(4,), removing=(1,))),
        # growing the replication factor
        ((1,), (1, 2), RA((1, 2), adding=(2,), removing=())),
        # shrinking it
        ((1, 2, 3), (1, 2), RA((1, 2, 3), adding=(), removing=(3,))),
        # reordering only: nothing moves, the preferred leader changes
        ((1, 2), (2, 1), RA((2, 1))),
    ],
)
def test_reassign_to_takes_the_union_with_adding_and_removing(
    origin: tuple[int, ...], target: tuple[int, ...], expected: ReplicaAssignment
) -> None:
    moving = RA(origin).reassign_to(target)
    assert moving == expected
    assert moving.origin_replicas == tuple(r for r in expected.replicas if r in origin)
    assert moving.target_replicas == target
    assert moving.is_being_reassigned == (set(origin) != set(target))


def test_completed_assignment_is_the_target_alone() -> None:
    moving = RA((1, 2)).reassign_to((3, 4))
    assert moving.completed() == RA((3, 4))
    assert not moving.completed().is_being_reassigned


def test_a_new_target_during_a_reassignment_starts_from_the_original_replicas() -> None:
    first = RA((1, 2)).reassign_to((3, 4))
    second = first.reassign_to((1, 5))
    assert second == RA((1, 5, 2), adding=(5,), removing=(2,))
    # 3 and 4 were being added and are in neither set now: stopped at once
    assert unneeded_replicas(first, second) == (3, 4)


def test_cancelling_reverts_to_the_original_replicas() -> None:
    moving = RA((1, 2)).reassign_to((3, 4))
    cancelled = plan_reassignment(moving, None)
    assert cancelled == RA((1, 2))
    assert unneeded_replicas(moving, cancelled) == (3, 4)


def test_cancelling_keeps_the_original_replicas_in_the_moving_order() -> None:
    # ORS is read back from RS (targets first), so a shared replica moved up front stays
    # there, as in Kafka: the same set, perhaps another preferred leader
    moving = RA((1, 2)).reassign_to((2, 3))
    cancelled = plan_reassignment(moving, None)
    assert cancelled == RA((2, 1))
    assert unneeded_replicas(moving, cancelled) == (3,)


def test_cancelling_without_a_reassignment_is_no_reassignment_in_progress() -> None:
    assert plan_reassignment(RA((1, 2)), None) is None


def test_plan_with_a_target_reassigns() -> None:
    assert plan_reassignment(RA((1, 2)), (2, 3)) == RA((2, 3, 1), adding=(3,), removing=(1,))


@pytest.mark.parametrize(
    ("target", "live", "fragment"),
    [
        ((), {1, 2, 3}, "Empty replica list"),
        ((2, 2), {1, 2, 3}, "Duplicate replica ids"),
        ((2, -1), {1, 2, 3}, "Invalid broker id"),
        ((3, 4), {1, 2, 3}, "not alive"),
    ],
)
def test_invalid_targets_are_invalid_replica_assignment(
    target: tuple[int, ...], live: set[int], fragment: str
) -> None:
    error = validate_target(RA((1, 2)), target, live)
    assert error is not None
    assert error.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert error.message is not None and fragment in error.message


def test_only_added_replicas_must_be_alive() -> None:
    # broker 1 is down, but it is an original replica being removed, not added
    assert validate_target(RA((1, 2)), (2, 3), live_brokers={2, 3}) is None


def test_liveness_is_not_checked_for_requests_in_zookeeper() -> None:
    assert validate_target(RA((1, 2)), (3, 9), live_brokers=None) is None
    error = validate_target(RA((1, 2)), (3, 3), live_brokers=None)
    assert error is not None and error.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


@pytest.mark.parametrize(
    ("assignment", "isr", "phase"),
    [
        (RA((1, 2)).reassign_to((3, 4)), (1, 2), Phase.START),
        (RA((1, 2)).reassign_to((3, 4)), (1, 2, 3), Phase.START),
        (RA((1, 2)).reassign_to((3, 4)), (1, 2, 3, 4), Phase.COMPLETE),
        # the removed replicas need not be in sync
        (RA((1, 2)).reassign_to((2, 3)), (2, 3), Phase.COMPLETE),
        # shrinking only: the targets are in sync already
        (RA((1, 2, 3)).reassign_to((1, 2)), (1, 2, 3), Phase.COMPLETE),
        # nothing moving is complete at once
        (RA((1, 2)), (), Phase.COMPLETE),
    ],
)
def test_phase_waits_for_every_target_replica_in_the_isr(
    assignment: ReplicaAssignment, isr: tuple[int, ...], phase: Phase
) -> None:
    assert phase_of(assignment, isr) is phase


def test_phase_table_orders_kafkas_steps() -> None:
    assert PHASE_STEPS[Phase.START] == (Step.BUMP_EPOCH_AND_SEND, Step.START_ADDING)
    complete = PHASE_STEPS[Phase.COMPLETE]
    # the leader moves into the targets before the removed replicas stop, and the topic
    # znode shows the target only after they stopped
    assert complete.index(Step.ONLINE_ADDING) < complete.index(Step.MOVE_LEADER)
    assert complete.index(Step.MOVE_LEADER) < complete.index(Step.STOP_REMOVING)
    assert complete.index(Step.STOP_REMOVING) < complete.index(Step.WRITE_TARGET)
    assert complete.index(Step.WRITE_TARGET) < complete.index(Step.FORGET)
    assert complete[-1] is Step.UPDATE_METADATA


@pytest.mark.parametrize(
    ("target", "leader", "alive", "move"),
    [
        ((3, 4), 1, True, LeaderMove.ELECT),  # the leader is being removed
        ((1, 3), 1, True, LeaderMove.BUMP_EPOCH),  # it stays: replicas learn the new RS
        ((1, 3), 1, False, LeaderMove.ELECT),  # it stays but is down
        ((1, 3), -1, False, LeaderMove.ELECT),  # no leader
    ],
)
def test_leader_move_on_completion(
    target: tuple[int, ...], leader: int, alive: bool, move: LeaderMove
) -> None:
    assert leader_move(target, leader, alive) is move
