"""The group state table: Kafka's valid previous states, and nothing else."""

from __future__ import annotations

import pytest

from broker.group.model import GroupMetadata, GroupState
from broker.group.states import (
    CR,
    PR,
    ST,
    VALID_PREVIOUS,
    D,
    E,
    IllegalStateTransition,
    can_transition,
    transition,
)

ALLOWED = {
    (PR, E), (E, PR), (ST, PR), (CR, PR), (PR, CR), (CR, ST),
    (E, D), (PR, D), (CR, D), (ST, D), (D, D),
}  # fmt: skip


def test_every_state_has_its_previous_states() -> None:
    assert set(VALID_PREVIOUS) == set(GroupState)


@pytest.mark.parametrize("source", list(GroupState))
@pytest.mark.parametrize("target", list(GroupState))
def test_a_transition_is_allowed_exactly_when_listed(
    source: GroupState, target: GroupState
) -> None:
    assert can_transition(source, target) is ((source, target) in ALLOWED)


def test_transition_stamps_the_time_of_the_change() -> None:
    group = GroupMetadata("g")
    transition(group, PR, 1234)
    assert (group.state, group.current_state_timestamp) == (PR, 1234)


def test_a_transition_outside_the_table_raises_and_leaves_the_group_as_it_was() -> None:
    group = GroupMetadata("g", state=ST, current_state_timestamp=5)
    with pytest.raises(IllegalStateTransition):
        transition(group, E, 9)
    assert (group.state, group.current_state_timestamp) == (ST, 5)
