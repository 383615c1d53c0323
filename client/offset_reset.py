"""Where an offset reset moves a consumer group's offsets (pure): the one planner that
``consumer-groups --reset-offsets`` (``tools.offset_reset``) and the web console
(``web.reset``) share. Each spells the targets its own way and parses times its own way;
both hand this module a ``ResetTarget``::

    earliest     the log start offset
    latest       the log end offset
    offset N     N, clamped into [log start, log end]
    shift N      the committed offset + N (N may be negative), clamped likewise; a
                 partition without a committed offset cannot be shifted (ResetError)
    timestamp T  the offset ListOffsets found for T (ms since the epoch), clamped; the
                 log end where no record is that recent (ListOffsets answered -1)

``plan`` computes the new offsets from figures the caller gathered from the cluster (log
start and end offsets, committed offsets, offsets by time), so that a preview (dry run)
and the execution compute the same thing, and the I/O stays with the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from protocol.values import TopicPartition

TARGETS: Final = ("earliest", "latest", "offset", "shift", "timestamp")


class ResetError(ValueError):
    """A reset that cannot be computed as asked (its message says why)."""


@dataclass(frozen=True)
class ResetTarget:
    #: one of TARGETS
    kind: str
    #: the offset, the shift, or the timestamp in ms; 0 for earliest and latest
    value: int = 0

    def __post_init__(self) -> None:
        if self.kind not in TARGETS:
            raise ResetError(f"reset target {self.kind!r} is not one of {', '.join(TARGETS)}")


def plan(
    target: ResetTarget,
    partitions: Sequence[TopicPartition],
    *,
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    committed: Mapping[TopicPartition, int],
    by_time: Mapping[TopicPartition, int] | None = None,
) -> dict[TopicPartition, int]:
    """The new offset of each partition, in partition order."""

    def clamp(tp: TopicPartition, offset: int) -> int:
        return max(earliest[tp], min(latest[tp], offset))

    out: dict[TopicPartition, int] = {}
    for tp in sorted(partitions):
        if target.kind == "earliest":
            out[tp] = earliest[tp]
        elif target.kind == "latest":
            out[tp] = latest[tp]
        elif target.kind == "offset":
            out[tp] = clamp(tp, target.value)
        elif target.kind == "shift":
            if tp not in committed:
                raise ResetError(
                    f"Cannot shift offset for partition {tp.topic}-{tp.partition} "
                    "since there is no current committed offset"
                )
            out[tp] = clamp(tp, committed[tp] + target.value)
        else:
            found = (by_time or {}).get(tp, -1)
            out[tp] = latest[tp] if found < 0 else clamp(tp, found)
    return out
