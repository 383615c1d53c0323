"""A follower partition's fetch state table: Truncating -> Fetching, paused when fenced,
delayed (not a state) after retriable errors."""

from __future__ import annotations

import pytest

from broker.replication.fetch_state import (
    TRANSITIONS,
    FetchEvent,
    FetchState,
    IllegalFetchTransition,
    PartitionFetchState,
    initial_state,
    transition,
)


def move(state: PartitionFetchState, event: FetchEvent, now: int = 1_000) -> PartitionFetchState:
    return transition(state, event, now_ms=now, backoff_ms=200)


def test_a_new_follower_truncates_first() -> None:
    state = initial_state(leader_id=2, leader_epoch=7)
    assert (state.leader_id, state.leader_epoch, state.state) == (2, 7, FetchState.TRUNCATING)
    assert state.is_ready(0)


def test_truncation_rounds_then_fetching() -> None:
    state = initial_state(2, 7)
    state = move(state, FetchEvent.TRUNCATION_INCOMPLETE)
    assert state.state is FetchState.TRUNCATING and state.is_ready(1_000)
    state = move(state, FetchEvent.TRUNCATED)
    assert state.state is FetchState.FETCHING
    for event in (FetchEvent.FETCHED, FetchEvent.OUT_OF_RANGE_RESOLVED):
        state = move(state, event)
        assert state.state is FetchState.FETCHING and state.delayed_until_ms == 0


@pytest.mark.parametrize("start", [FetchState.TRUNCATING, FetchState.FETCHING])
def test_a_retriable_error_keeps_the_state_and_delays_it(start: FetchState) -> None:
    state = move(PartitionFetchState(2, 7, start), FetchEvent.RETRIABLE_ERROR, now=1_000)
    assert state.state is start
    assert not state.is_ready(1_199) and state.is_ready(1_200)


@pytest.mark.parametrize("start", [FetchState.TRUNCATING, FetchState.FETCHING])
def test_fencing_pauses_until_the_next_leader_and_isr(start: FetchState) -> None:
    state = move(PartitionFetchState(2, 7, start), FetchEvent.FENCED)
    assert state.state is FetchState.PAUSED
    assert not state.is_ready(10**12)


def test_a_paused_partition_takes_no_event() -> None:
    paused = PartitionFetchState(2, 7, FetchState.PAUSED)
    for event in FetchEvent:
        with pytest.raises(IllegalFetchTransition):
            move(paused, event)


def test_fetching_never_goes_back_to_truncating_by_itself() -> None:
    # only a new LeaderAndIsr (initial_state) starts a truncation again
    targets = {to for (frm, _), to in TRANSITIONS.items() if frm is FetchState.FETCHING}
    assert FetchState.TRUNCATING not in targets
    with pytest.raises(IllegalFetchTransition):
        move(PartitionFetchState(2, 7, FetchState.FETCHING), FetchEvent.TRUNCATED)


def test_an_event_that_changes_nothing_keeps_the_state_object() -> None:
    fetching = move(initial_state(2, 7), FetchEvent.TRUNCATED)
    assert move(fetching, FetchEvent.FETCHED) is fetching
    delayed = move(fetching, FetchEvent.RETRIABLE_ERROR, now=1_000)
    assert delayed is not fetching and delayed.delayed_until_ms == 1_200
    assert move(delayed, FetchEvent.FETCHED).delayed_until_ms == 0
