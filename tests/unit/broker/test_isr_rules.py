"""The pure rules of broker.isr: when a follower is caught up, the high watermark over
the maximal ISR, who may join the ISR and who must leave it, and the pending change."""

from __future__ import annotations

import pytest

from broker.isr import (
    UNKNOWN_OFFSET,
    FetchClock,
    FollowerState,
    IsrChange,
    IsrState,
    after_fetch,
    high_watermark,
    may_join_isr,
    out_of_sync_replicas,
    reset_for_leadership,
)


def fetched(state: FollowerState, offset: int, leader_end: int, now: int) -> FollowerState:
    return after_fetch(
        state,
        fetch_offset=offset,
        follower_log_start_offset=0,
        leader_end_offset=leader_end,
        now_ms=now,
    )


# -- the caught-up rule -------------------------------------------------------------------


def test_fetch_at_the_leaders_end_is_caught_up_now() -> None:
    state = fetched(FollowerState(), 10, 10, now=500)
    assert (state.log_end_offset, state.last_caught_up_ms) == (10, 500)
    assert (state.last_fetch_ms, state.last_fetch_leader_end_offset) == (500, 10)


def test_fetch_reaching_the_previous_fetchs_end_is_caught_up_as_of_that_fetch() -> None:
    first = fetched(FollowerState(), 5, 10, now=100)  # behind: not caught up
    assert first.last_caught_up_ms == 0
    # the leader moved on to 20 meanwhile; the follower now holds what it had at 100
    second = fetched(first, 10, 20, now=300)
    assert second.last_caught_up_ms == 100
    # keeping pace with a leader that keeps appending keeps it caught up
    third = fetched(second, 20, 30, now=600)
    assert third.last_caught_up_ms == 300


def test_fetch_behind_both_ends_leaves_the_caught_up_time() -> None:
    first = fetched(FollowerState(last_caught_up_ms=50), 10, 10, now=100)
    second = fetched(first, 8, 20, now=400)  # below both 10 and 20 (a truncated follower)
    assert second.last_caught_up_ms == 100 and second.log_end_offset == 8


def test_caught_up_time_never_moves_back() -> None:
    state = FollowerState(last_caught_up_ms=900, last_fetch_leader_end_offset=5, last_fetch_ms=200)
    assert fetched(state, 5, 9, now=1000).last_caught_up_ms == 900


def test_first_fetch_after_leadership_below_the_end_is_not_caught_up() -> None:
    fresh = reset_for_leadership(None, new_leader=True, in_isr=False, now_ms=1000)
    assert fetched(fresh, 0, 10, now=1100).last_caught_up_ms == 0


@pytest.mark.parametrize(
    ("state", "leader_end", "now", "expected"),
    [
        (FollowerState(log_end_offset=10, last_caught_up_ms=0), 10, 99_999, True),  # idle
        (FollowerState(log_end_offset=5, last_caught_up_ms=1000), 10, 2000, True),
        (FollowerState(log_end_offset=5, last_caught_up_ms=1000), 10, 2001, False),
    ],
)
def test_is_caught_up_by_end_or_by_time(
    state: FollowerState, leader_end: int, now: int, expected: bool
) -> None:
    assert state.is_caught_up(leader_end, now, max_lag_ms=1000) is expected


# -- leadership resets ----------------------------------------------------------------------


def test_new_leader_forgets_offsets_and_counts_isr_members_caught_up_now() -> None:
    known = FollowerState(7, 2, 9, 300, 300)
    in_isr = reset_for_leadership(known, new_leader=True, in_isr=True, now_ms=5000)
    assert in_isr == FollowerState(UNKNOWN_OFFSET, UNKNOWN_OFFSET, UNKNOWN_OFFSET, 0, 5000)
    outside = reset_for_leadership(known, new_leader=True, in_isr=False, now_ms=5000)
    assert outside.last_caught_up_ms == 0 and outside.log_end_offset == UNKNOWN_OFFSET


def test_continuing_leader_keeps_offsets_and_restarts_fetch_history() -> None:
    known = FollowerState(7, 2, 9, 300, 300)
    kept = reset_for_leadership(known, new_leader=False, in_isr=True, now_ms=5000)
    assert (kept.log_end_offset, kept.log_start_offset) == (7, 2)
    assert (kept.last_fetch_leader_end_offset, kept.last_fetch_ms) == (UNKNOWN_OFFSET, 0)
    assert kept.last_caught_up_ms == 5000


# -- the high watermark ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "leader_end", "followers", "expected"),
    [
        (0, 10, [], 10),  # the leader alone: its log end at once
        (0, 10, [10, 10], 10),
        (0, 10, [4, 10], 4),  # the slowest ISR member decides
        (6, 10, [4, 10], 6),  # never backwards (a member that rejoined behind it)
        (3, 10, [UNKNOWN_OFFSET, 10], 3),  # an unknown follower holds it
        (0, 10, [12], 10),  # never above the leader's log end
    ],
)
def test_high_watermark(current: int, leader_end: int, followers: list[int], expected: int) -> None:
    assert high_watermark(current, leader_end, followers) == expected


# -- joining and leaving -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("follower_end", "hw", "epoch_start", "expected"),
    [
        (10, 10, 10, True),
        (12, 10, 12, True),
        (9, 10, 5, False),  # misses acknowledged records
        (10, 10, 11, False),  # has not reached this leader's epoch
        (UNKNOWN_OFFSET, 0, 0, False),
    ],
)
def test_may_join_isr(follower_end: int, hw: int, epoch_start: int, expected: bool) -> None:
    assert may_join_isr(follower_end, hw, epoch_start) is expected


def test_out_of_sync_replicas_are_the_lagging_followers_never_the_leader() -> None:
    followers = {
        2: FollowerState(log_end_offset=5, last_caught_up_ms=1000),  # lagging too long
        3: FollowerState(log_end_offset=5, last_caught_up_ms=1500),  # within the lag
        4: FollowerState(log_end_offset=10, last_caught_up_ms=0),  # at the end: idle
    }
    # 5 is in the ISR but no longer a replica: out of sync as well
    out = out_of_sync_replicas((1, 2, 3, 4, 5), 1, followers, 10, now_ms=2001, max_lag_ms=1000)
    assert out == (2, 5)
    assert out_of_sync_replicas((1,), 1, {}, 10, now_ms=10**9, max_lag_ms=1) == ()


# -- the ISR state -----------------------------------------------------------------------------


def test_maximal_isr_counts_a_pending_expansion_but_not_a_pending_shrink() -> None:
    committed = IsrState((1, 2))
    assert committed.maximal_isr == (1, 2) and not committed.in_flight
    expanding = committed.expand(3)
    assert expanding.in_flight and expanding.pending is not None
    assert expanding.pending.kind is IsrChange.EXPAND
    assert expanding.isr == (1, 2) and expanding.maximal_isr == (1, 2, 3)
    shrinking = committed.shrink([2])
    assert shrinking.pending is not None and shrinking.pending.proposed == (1,)
    assert shrinking.isr == shrinking.maximal_isr == (1, 2)


# -- a state linked to a follower's fetch session -----------------------------------------


def test_a_linked_state_counts_the_sessions_fetches() -> None:
    clock = FetchClock(last_fetch_ms=100)
    state = fetched(FollowerState(), 10, 10, now=100)
    state.clock = clock
    clock.last_fetch_ms = 40_000  # the session kept fetching; the partition was not read
    assert state.effective() == (40_000, 40_000)
    assert (state.last_fetch_ms, state.last_caught_up_ms) == (100, 100)  # its own times
    # after an append the follower is behind, caught up as of the session's last fetch
    assert state.is_caught_up(11, 40_000 + 30_000, 30_000)
    assert not state.is_caught_up(11, 40_000 + 30_001, 30_000)


def test_a_fetch_of_a_linked_state_applies_the_sessions_fetches_first() -> None:
    clock = FetchClock()
    state = fetched(FollowerState(), 10, 10, now=100)
    state.clock = clock
    clock.last_fetch_ms = 5_000
    # read at its old end once the leader appended: caught up at the previous fetch
    after = fetched(state, 10, 12, now=5_500)
    assert after.clock is None and after.last_caught_up_ms == 5_000
    assert after.last_fetch_ms == 5_500


def test_an_unlinked_state_keeps_what_the_session_counted_and_stops() -> None:
    clock = FetchClock()
    state = fetched(FollowerState(), 10, 10, now=100)
    state.clock = clock
    clock.last_fetch_ms = 2_000
    kept = state.unlinked()
    clock.last_fetch_ms = 9_000
    assert kept.clock is None and kept.effective() == (2_000, 2_000)
    assert FollowerState().unlinked() == FollowerState()
    assert reset_for_leadership(state, new_leader=False, in_isr=True, now_ms=50).clock is None
