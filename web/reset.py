"""Where an offset reset moves a consumer group's offsets (pure).

The console offers Kafka's reset kinds under short names::

    earliest     the log start offset
    latest       the log end offset
    offset N     N, clamped into [log start, log end]
    timestamp T  the first offset whose timestamp is at or after T (ms since the epoch, or
                 an ISO-8601 date-time, UTC unless it names a zone); the log end when no
                 record is that recent
    shift N      the committed offset + N (N may be negative), clamped likewise; a
                 partition without a committed offset cannot be shifted

``plan`` computes the new offsets from figures the caller gathered from the cluster, so
a preview (dry run) and the execution compute the same thing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from protocol.values import TopicPartition

KINDS: Final = ("earliest", "latest", "offset", "timestamp", "shift")


class ResetError(ValueError):
    """A reset that cannot be computed as asked (its message says why)."""


@dataclass(frozen=True)
class ResetSpec:
    kind: str
    #: the offset, the shift, or the timestamp in ms; 0 for earliest and latest
    value: int = 0


def parse_timestamp(text: str) -> int:
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ResetError(
            f"timestamp {text!r} is neither milliseconds nor YYYY-MM-DDTHH:MM[:SS]"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def parse_spec(kind: str, value: str) -> ResetSpec:
    if kind not in KINDS:
        raise ResetError(f"reset kind {kind!r} is not one of {', '.join(KINDS)}")
    if kind in ("earliest", "latest"):
        return ResetSpec(kind)
    if kind == "timestamp":
        return ResetSpec(kind, parse_timestamp(value))
    try:
        return ResetSpec(kind, int(value.strip()))
    except ValueError:
        raise ResetError(f"a reset to {kind} needs a whole number, not {value!r}") from None


def plan(
    spec: ResetSpec,
    partitions: Sequence[TopicPartition],
    *,
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    committed: Mapping[TopicPartition, int],
    by_time: Mapping[TopicPartition, int] | None = None,
) -> dict[TopicPartition, int]:
    """The new offset of each partition (sorted)."""

    def clamp(tp: TopicPartition, offset: int) -> int:
        return max(earliest[tp], min(latest[tp], offset))

    out: dict[TopicPartition, int] = {}
    for tp in sorted(partitions):
        if spec.kind == "earliest":
            out[tp] = earliest[tp]
        elif spec.kind == "latest":
            out[tp] = latest[tp]
        elif spec.kind == "offset":
            out[tp] = clamp(tp, spec.value)
        elif spec.kind == "shift":
            if tp not in committed:
                raise ResetError(
                    f"cannot shift {tp.topic}-{tp.partition}: the group has no committed offset"
                )
            out[tp] = clamp(tp, committed[tp] + spec.value)
        else:
            found = (by_time or {}).get(tp, -1)
            out[tp] = latest[tp] if found < 0 else clamp(tp, found)
    return out
