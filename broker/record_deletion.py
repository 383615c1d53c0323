"""DeleteRecords: the rules that move a partition's log start offset for a client.

A DeleteRecords request names, per partition, an offset below which the records may go
(-1: the high watermark). The leader checks it, moves its log start offset there, and the
records below it are gone for readers at once: a fetch below the new log start is
OFFSET_OUT_OF_RANGE and ListOffsets EARLIEST answers the new start. The disk space comes
back later, when the retention task deletes the segments wholly below the log start.

Validation on the leader, in Kafka's order (:func:`deletion_offset`):

=========================================  =====================================
the topic is internal                       INVALID_TOPIC_EXCEPTION
cleanup.policy has no ``delete``            POLICY_VIOLATION (compact-only topics
                                            keep every key's last value)
offset -1                                   the high watermark
offset < 0 (other than -1)                  OFFSET_OUT_OF_RANGE
offset > the high watermark                 OFFSET_OUT_OF_RANGE (nobody may delete
                                            records not yet acknowledged)
=========================================  =====================================

An offset at or below the current log start is accepted and moves nothing.

The followers learn the leader's log start from their fetch responses and move theirs up
to it (as far as their high watermark); each follower fetch tells the leader the
follower's log start in turn. The *low watermark* (:func:`low_watermark`) is the smallest
log start over the leader and every follower on a live broker: once it has passed the
requested offset, every live replica has dropped the records, and the request answers
with it. A replica on a dead broker is not waited for (it follows when it comes back),
and one that has not fetched since this broker became leader has an unknown log start
(-1), which holds the low watermark down until it fetches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from protocol.errors import ErrorCode
from protocol.values import INTERNAL_TOPICS

#: The offset a request gives to delete everything below the high watermark.
HIGH_WATERMARK = -1


class DeletionRefused(Exception):
    """The request for one partition is refused with ``error_code``."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def deletion_offset(topic: str, requested: int, *, high_watermark: int, deletes: bool) -> int:
    """The new log start a request for ``requested`` asks of a leader whose high watermark
    is ``high_watermark`` and whose cleanup.policy deletes (``deletes``) or only compacts;
    :class:`DeletionRefused` when the rules of the module doc refuse it."""
    if topic in INTERNAL_TOPICS:
        raise DeletionRefused(
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"cannot delete records of internal topic {topic}"
        )
    if not deletes:
        raise DeletionRefused(
            ErrorCode.POLICY_VIOLATION,
            f"records of {topic} cannot be deleted: its cleanup.policy does not include delete",
        )
    offset = high_watermark if requested == HIGH_WATERMARK else requested
    if offset < 0 or offset > high_watermark:
        raise DeletionRefused(
            ErrorCode.OFFSET_OUT_OF_RANGE,
            f"cannot delete records of {topic} below {requested}: outside "
            f"[0, high watermark {high_watermark}]",
        )
    return offset


def low_watermark(
    leader_log_start: int,
    follower_log_starts: Mapping[int, int],
    is_alive: Callable[[int], bool],
) -> int:
    """The smallest log start offset over the leader (``leader_log_start``) and each
    follower (broker id -> its log start as its last fetch told, -1 when unknown) whose
    broker ``is_alive``."""
    lowest = leader_log_start
    for broker_id, start in follower_log_starts.items():
        if start < lowest and is_alive(broker_id):
            lowest = start
    return lowest
