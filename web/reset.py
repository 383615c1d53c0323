"""How the console spells an offset reset, read into ``client.offset_reset``'s target
(pure; the planner itself is ``client.offset_reset.plan``, which the command-line tool
shares).

The console offers Kafka's reset kinds under short names, the planner's own::

    earliest     the log start offset
    latest       the log end offset
    offset N     N, clamped into [log start, log end]
    timestamp T  the first offset whose timestamp is at or after T (ms since the epoch, or
                 an ISO-8601 date-time, UTC unless it names a zone); the log end when no
                 record is that recent
    shift N      the committed offset + N (N may be negative), clamped likewise; a
                 partition without a committed offset cannot be shifted
"""

from __future__ import annotations

import datetime as dt
from typing import Final

from client.offset_reset import ResetError, ResetTarget

KINDS: Final = ("earliest", "latest", "offset", "timestamp", "shift")


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


def parse_spec(kind: str, value: str) -> ResetTarget:
    if kind not in KINDS:
        raise ResetError(f"reset kind {kind!r} is not one of {', '.join(KINDS)}")
    if kind in ("earliest", "latest"):
        return ResetTarget(kind)
    if kind == "timestamp":
        return ResetTarget(kind, parse_timestamp(value))
    try:
        return ResetTarget(kind, int(value.strip()))
    except ValueError:
        raise ResetError(f"a reset to {kind} needs a whole number, not {value!r}") from None
