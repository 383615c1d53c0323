"""The four leader election strategies, as tables of cases."""

from __future__ import annotations

import pytest

from config.effective import ConfigLayers
from controller.election_strategies import (
    Election,
    controlled_shutdown_leader,
    offline_partition_leader,
    preferred_replica_leader,
    reassign_partition_leader,
    unclean_leader_election_enabled,
)

OFFLINE_CASES = [
    # assignment, isr, live, unclean, expected
    ((1, 2, 3), (1, 2, 3), {1, 2, 3}, False, Election(1, (1, 2, 3))),
    ((1, 2, 3), (1, 2, 3), {2, 3}, False, Election(2, (2, 3))),
    # assignment order wins over ISR order
    ((3, 1, 2), (1, 2, 3), {1, 2, 3}, False, Election(3, (1, 2, 3))),
    ((1, 2, 3), (3,), {1, 2, 3}, False, Election(3, (3,))),
    ((1, 2, 3), (1,), {2, 3}, False, Election(None, (1,))),
    ((1, 2, 3), (1,), {2, 3}, True, Election(2, (2,), unclean=True)),
    ((1, 2, 3), (1,), set(), True, Election(None, (1,))),
    ((1,), (), {1}, False, Election(None, ())),
]


@pytest.mark.parametrize(("assignment", "isr", "live", "unclean", "expected"), OFFLINE_CASES)
def test_offline_partition_leader(
    assignment: tuple[int, ...],
    isr: tuple[int, ...],
    live: set[int],
    unclean: bool,
    expected: Election,
) -> None:
    assert offline_partition_leader(assignment, isr, live, unclean) == expected


REASSIGN_CASES = [
    ((4, 5, 6), (1, 4, 5), {4, 5, 6}, Election(4, (1, 4, 5))),
    ((4, 5, 6), (1, 5), {4, 5, 6}, Election(5, (1, 5))),
    ((4, 5, 6), (1, 2), {4, 5, 6}, Election(None, (1, 2))),
    ((4, 5, 6), (4, 5), {6}, Election(None, (4, 5))),
]


@pytest.mark.parametrize(("reassignment", "isr", "live", "expected"), REASSIGN_CASES)
def test_reassign_partition_leader(
    reassignment: tuple[int, ...], isr: tuple[int, ...], live: set[int], expected: Election
) -> None:
    assert reassign_partition_leader(reassignment, isr, live) == expected


PREFERRED_CASES = [
    ((1, 2, 3), (2, 1, 3), {1, 2, 3}, Election(1, (2, 1, 3))),
    ((1, 2, 3), (2, 3), {1, 2, 3}, Election(None, (2, 3))),  # preferred not in ISR
    ((1, 2, 3), (1, 2, 3), {2, 3}, Election(None, (1, 2, 3))),  # preferred dead
    ((), (1,), {1}, Election(None, (1,))),
]


@pytest.mark.parametrize(("assignment", "isr", "live", "expected"), PREFERRED_CASES)
def test_preferred_replica_leader(
    assignment: tuple[int, ...], isr: tuple[int, ...], live: set[int], expected: Election
) -> None:
    assert preferred_replica_leader(assignment, isr, live) == expected


SHUTDOWN_CASES = [
    ((1, 2, 3), (1, 2, 3), {1, 2, 3}, {1}, Election(2, (2, 3))),
    ((1, 2, 3), (1, 3), {1, 2, 3}, {1}, Election(3, (3,))),
    ((1, 2, 3), (1,), {1, 2, 3}, {1}, Election(None, ())),
    ((1, 2, 3), (1, 2, 3), {1, 2, 3}, {1, 2}, Election(3, (3,))),
    ((1, 2, 3), (1, 2, 3), {1, 3}, {1}, Election(3, (2, 3))),  # dead 2 is not chosen
]


@pytest.mark.parametrize(("assignment", "isr", "live", "shutting_down", "expected"), SHUTDOWN_CASES)
def test_controlled_shutdown_leader(
    assignment: tuple[int, ...],
    isr: tuple[int, ...],
    live: set[int],
    shutting_down: set[int],
    expected: Election,
) -> None:
    assert controlled_shutdown_leader(assignment, isr, live, shutting_down) == expected


UNCLEAN_CONFIG_CASES = [
    # static, layers (cluster default, this broker, topic), expected
    (False, [], False),
    (True, [], True),
    (False, [{"unclean.leader.election.enable": "true"}], True),
    (True, [{}, {}, {"unclean.leader.election.enable": "false"}], False),
    (False, [{"unclean.leader.election.enable": "true"}, {}, {}], True),
    (True, [{"unclean.leader.election.enable": "false"}, {"x": "y"}], False),
    (False, [{}, {}, {"unclean.leader.election.enable": " TRUE "}], True),
    (
        False,
        [{"unclean.leader.election.enable": "true"}, {}, {"unclean.leader.election.enable": "yes"}],
        True,
    ),
]


@pytest.mark.parametrize(("static", "layers", "expected"), UNCLEAN_CONFIG_CASES)
def test_unclean_leader_election_enabled(
    static: bool, layers: list[dict[str, str]], expected: bool
) -> None:
    default, broker, topic = [*layers, {}, {}, {}][:3]
    config_layers = ConfigLayers(
        topic=topic,
        dynamic_broker=broker,
        dynamic_default=default,
        static={"unclean.leader.election.enable": "true" if static else "false"},
    )
    assert unclean_leader_election_enabled(config_layers) is expected
