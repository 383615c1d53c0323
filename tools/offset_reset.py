"""Where ``consumer-groups --reset-offsets`` moves a group's offsets (pure).

A reset is one *spec* applied to a set of partitions::

    --to-earliest          the log start offset
    --to-latest            the log end offset
    --to-offset N          N, clamped into [log start, log end]
    --shift-by N           the committed offset + N (N may be negative), clamped likewise;
                           a partition without a committed offset cannot be shifted
    --to-datetime T        the first offset whose timestamp is at or after T
                           (YYYY-MM-DDTHH:mm:SS[.sss][Z|+hh:mm], local time without a
                           zone); the log end when no record is that recent
    --by-duration D        as --to-datetime, at now - D (ISO-8601 PnDTnHnMnS)

A spec's ``target`` is what ``client.offset_reset.plan`` (the planner the web console
shares) computes the new offsets from, out of what the cluster said (log start and end,
committed offsets, offsets by time), so that the tool's I/O only gathers those figures.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from client.offset_reset import ResetTarget

KINDS: Final = (
    "to-earliest",
    "to-latest",
    "to-offset",
    "shift-by",
    "to-datetime",
    "by-duration",
)

_DURATION: Final = re.compile(
    r"^P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)


@dataclass(frozen=True)
class ResetSpec:
    kind: str
    #: the offset (to-offset), the shift (shift-by), or the timestamp in ms (to-datetime,
    #: by-duration, resolved against the clock when parsed); 0 for the others
    value: int = 0

    @property
    def needs_timestamps(self) -> bool:
        return self.kind in ("to-datetime", "by-duration")

    @property
    def target(self) -> ResetTarget:
        """What the planner computes the new offsets from."""
        return ResetTarget(TARGETS[self.kind], self.value)


#: each flag's planner target (client.offset_reset)
TARGETS: Final = {
    "to-earliest": "earliest",
    "to-latest": "latest",
    "to-offset": "offset",
    "shift-by": "shift",
    "to-datetime": "timestamp",
    "by-duration": "timestamp",
}


def parse_datetime(text: str) -> int:
    """Epoch milliseconds of Kafka's reset datetime format; ValueError when malformed."""
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"Error parsing timestamp {text!r}: expected YYYY-MM-DDTHH:mm:SS.sss"
        ) from None
    if when.tzinfo is None:
        when = when.astimezone()  # local time, as Kafka's tool reads it
    return int(when.timestamp() * 1000)


def parse_duration_ms(text: str) -> int:
    """Milliseconds of an ISO-8601 duration (PnDTnHnMn.nS); ValueError when malformed."""
    m = _DURATION.match(text)
    if m is None or text in ("P", "PT"):
        raise ValueError(f"Error parsing duration {text!r}: expected ISO-8601 PnDTnHnMnS")
    parts = {k: float(v) for k, v in m.groupdict().items() if v is not None}
    delta = dt.timedelta(
        days=parts.get("days", 0),
        hours=parts.get("hours", 0),
        minutes=parts.get("minutes", 0),
        seconds=parts.get("seconds", 0),
    )
    return int(delta.total_seconds() * 1000)


def parse_spec(options: Mapping[str, str | bool | None], now_ms: int) -> ResetSpec:
    """The one spec among ``options`` (kind -> the flag's value: True for the valueless
    ones, None when absent); ValueError unless exactly one is given."""
    given = [k for k in KINDS if options.get(k) not in (None, False)]
    if len(given) != 1:
        raise ValueError(
            "Option --reset-offsets needs exactly one of "
            + ", ".join(f"--{k}" for k in KINDS)
            + (f" (given: {', '.join('--' + k for k in given)})" if given else "")
        )
    (kind,) = given
    raw = options[kind]
    if kind in ("to-earliest", "to-latest"):
        return ResetSpec(kind)
    text = str(raw)
    if kind in ("to-offset", "shift-by"):
        try:
            return ResetSpec(kind, int(text))
        except ValueError:
            raise ValueError(f"--{kind} needs a whole number, not {text!r}") from None
    if kind == "to-datetime":
        return ResetSpec(kind, parse_datetime(text))
    return ResetSpec(kind, now_ms - parse_duration_ms(text))


def parse_topic_partitions(text: str) -> tuple[str, list[int] | None]:
    """``T`` (every partition) or ``T:0,1,2``; ValueError when malformed."""
    topic, sep, rest = text.partition(":")
    if not topic:
        raise ValueError(f"--topic {text!r} names no topic")
    if not sep:
        return topic, None
    try:
        partitions = sorted({int(p) for p in rest.split(",") if p.strip()})
    except ValueError:
        raise ValueError(f"--topic {text!r}: partitions must be numbers") from None
    if not partitions:
        raise ValueError(f"--topic {text!r} lists no partition")
    return topic, partitions
