"""Where a follower truncates before fetching (KIP-101/KIP-279): the decision for one
OffsetForLeaderEpoch answer, over plain numbers."""

from __future__ import annotations

from broker.replication.truncation import (
    TruncationDecision,
    decide_truncation,
    truncation_without_epochs,
)


def decide(
    leader: tuple[int, int], follower: tuple[int, int], leo: int, hw: int = 0
) -> TruncationDecision:
    return decide_truncation(
        leader_epoch=leader[0],
        leader_end_offset=leader[1],
        follower_epoch=follower[0],
        follower_end_offset=follower[1],
        log_end_offset=leo,
        high_watermark=hw,
    )


def test_same_epoch_truncates_to_the_leaders_end_of_it() -> None:
    # we wrote epoch 5 up to 120, the leader's epoch 5 ended at 100: 100 on diverged
    assert decide((5, 100), (5, 120), leo=120) == TruncationDecision(100, complete=True)


def test_a_leader_ahead_in_our_epoch_truncates_nothing() -> None:
    # the leader's epoch 5 reaches past our log end: never truncate above the end
    assert decide((5, 150), (5, 120), leo=120) == TruncationDecision(120, complete=True)


def test_an_older_epoch_we_also_have_ends_where_either_log_leaves_it() -> None:
    # asked for 7 (ours), the leader knows only up to 4 (ending at 90); our epoch 4
    # ended at 95: records from 90 on were written by epochs the leader never had
    assert decide((4, 90), (4, 95), leo=130) == TruncationDecision(90, complete=True)
    assert decide((4, 95), (4, 90), leo=130) == TruncationDecision(90, complete=True)


def test_an_epoch_we_never_had_cuts_at_our_older_epochs_end_and_asks_again() -> None:
    # The leader answers epoch 4, which we never saw: our largest epoch below it, 2,
    # ended at 60; what follows came from epochs the leader's log does not share.
    decision = decide((4, 90), (2, 60), leo=130)
    assert decision == TruncationDecision(60, complete=False)
    # ...and not above the leader's end of its epoch either
    assert decide((4, 50), (2, 60), leo=130) == TruncationDecision(50, complete=False)


def test_kip_279_rounds_converge() -> None:
    """Our cache (1, 0) (3, 40) (6, 70), LEO 100; the leader's (1, 0) (2, 30) (7, 80).
    Round 1 asks 6: the leader answers (2, 80); our largest <= 2 is 1, ending at 40
    (our epoch 3 starts there): cut to 40, not done. Round 2 asks 1 (our latest now):
    the leader answers (1, 30); ours is (1, 40): cut to 30, done."""
    first = decide((2, 80), (1, 40), leo=100)
    assert first == TruncationDecision(40, complete=False)
    second = decide((1, 30), (1, 40), leo=first.offset)
    assert second == TruncationDecision(30, complete=True)


def test_a_leader_without_epochs_falls_back_to_the_high_watermark() -> None:
    assert decide((-1, -1), (5, 120), leo=120, hw=80) == TruncationDecision(80, complete=True)


def test_an_answer_without_an_epoch_still_bounds_by_its_end_offset() -> None:
    assert decide((-1, 70), (5, 120), leo=120, hw=10) == TruncationDecision(70, complete=True)


def test_no_follower_epoch_at_or_below_the_answer_trusts_the_leaders_end() -> None:
    assert decide((3, 70), (-1, -1), leo=120) == TruncationDecision(70, complete=True)


def test_a_follower_without_epochs_truncates_to_its_high_watermark() -> None:
    assert truncation_without_epochs(40, 55) == TruncationDecision(40, complete=True)
    assert truncation_without_epochs(60, 55) == TruncationDecision(55, complete=True)
