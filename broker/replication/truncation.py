"""Where a follower truncates its log before fetching from a new leader (KIP-101, KIP-279).

A follower may hold records its new leader never had: an old leader appended them and
lost leadership before any follower copied them. Cutting the follower's log at its high
watermark, as Kafka once did, loses committed records in some failure sequences and keeps
divergent ones in others; the leader-epoch cache answers the question exactly instead.

The exchange, one round per OffsetForLeaderEpoch request::

    follower asks:  "where does epoch A end?"    A = the latest epoch in its own cache
    leader answers: (E, O)   E = the largest epoch <= A the leader knows, O = its end
                             (the start of the leader's next epoch, or its log end)

What the follower does with an answer, given its own cache's end of E (the largest
epoch e <= E it knows, and that epoch's end o):

- e == E: both logs agree up to min(O, o); truncate there (never above the log end) and
  start fetching;
- e < E: the follower never saw epoch E, so its records from o on came from epochs the
  leader's log does not share; truncate to min(O, o) and ask again with the follower's
  latest epoch now (it is at most e), until the epochs agree (KIP-279: a chain of leader
  changes can leave the logs diverging several epochs back);
- E undefined (-1, -1): the leader knows no epochs at all (a log written before epochs,
  or emptied); fall back to the follower's high watermark.

A follower with no epoch of its own asks nothing and truncates to its high watermark.

Pure functions over plain numbers: the fetcher gathers the inputs and applies the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The "no epoch" / "no offset" values of OffsetForLeaderEpoch and the epoch cache.
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True, slots=True)
class TruncationDecision:
    """Truncate the log to ``offset`` (nothing happens when it is at or above the log
    end); ``complete``: fetching may start, else ask the leader again."""

    offset: int
    complete: bool


def truncation_without_epochs(high_watermark: int, log_end_offset: int) -> TruncationDecision:
    """A follower whose cache is empty: nothing to compare, the high watermark is all
    it can trust."""
    return TruncationDecision(min(high_watermark, log_end_offset), complete=True)


def decide_truncation(
    *,
    leader_epoch: int,
    leader_end_offset: int,
    follower_epoch: int,
    follower_end_offset: int,
    log_end_offset: int,
    high_watermark: int,
) -> TruncationDecision:
    """One OffsetForLeaderEpoch answer, ``(leader_epoch, leader_end_offset)``, against
    the follower's own end of that epoch, ``(follower_epoch, follower_end_offset)``
    (its cache's answer for ``leader_epoch``; (-1, -1) when it knows no epoch that old
    or young enough). See the module doc for the rules."""
    if leader_end_offset == UNDEFINED_OFFSET or leader_epoch == UNDEFINED_EPOCH:
        if leader_end_offset != UNDEFINED_OFFSET:
            # An answer without an epoch (an old leader's): its end offset still holds.
            return TruncationDecision(min(leader_end_offset, log_end_offset), complete=True)
        return truncation_without_epochs(high_watermark, log_end_offset)
    if follower_end_offset == UNDEFINED_OFFSET or follower_epoch == UNDEFINED_EPOCH:
        # Every epoch the follower knows is newer than the leader's: nothing of ours is
        # known to agree past the leader's end of its epoch.
        return TruncationDecision(min(leader_end_offset, log_end_offset), complete=True)
    offset = min(leader_end_offset, follower_end_offset, log_end_offset)
    return TruncationDecision(offset, complete=follower_epoch == leader_epoch)
