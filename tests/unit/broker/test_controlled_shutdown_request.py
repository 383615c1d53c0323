"""The stopping broker's side of a controlled shutdown: what each answer leads to."""

from __future__ import annotations

from broker.controlled_shutdown import Step, next_step
from protocol.errors import ErrorCode


def test_an_answer_with_nothing_left_is_the_end() -> None:
    assert next_step(ErrorCode.NONE, 0) is Step.DONE


def test_partitions_left_or_a_passing_error_are_asked_again() -> None:
    assert next_step(ErrorCode.NONE, 2) is Step.RETRY  # a follower may join the ISR
    assert next_step(ErrorCode.NOT_CONTROLLER, 0) is Step.RETRY  # another controller may
    assert next_step(ErrorCode.BROKER_NOT_AVAILABLE, 0) is Step.RETRY


def test_nobody_left_to_take_over_ends_the_asking_at_once() -> None:
    assert next_step(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, 3) is Step.GIVE_UP
