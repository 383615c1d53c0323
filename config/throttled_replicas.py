"""The value of ``leader.replication.throttled.replicas`` / ``follower...``: which replicas
of a topic a replication throttle applies to.

The text is either ``*`` (every replica of the topic), or a comma-separated list of
``partition:brokerId`` pairs (``0:101,0:102,1:102``), or empty (none), as Kafka writes
it. The list is parsed by the key table (a LIST key: items stripped, empty items
dropped), so the validator sees the items; the broker then asks one question of a
parsed value: does it throttle partition ``p`` *on this broker*? The broker id in a pair
names the broker whose traffic is throttled, on either side: on the leader key, the
broker sending the data (the partition's leader), on the follower key the broker
fetching it. A broker therefore keeps, per topic, the partitions whose pairs name its
own id, and ``*`` covers them all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

#: the literal meaning "every replica of the topic"
ALL_REPLICAS: Final = "*"

_PAIR: Final = re.compile(r"[0-9]+:[0-9]+")

#: Kafka's wording for a value that is neither ``*`` nor a list of pairs
FORMAT_PROBLEM: Final = (
    "must be the literal '*' or a list of replicas in the following format: "
    "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
)


def check_throttled_replicas(value: Any) -> str | None:
    """The validator of both keys: None when ``value`` (the parsed list) is ``*`` alone or
    pairs only, else the problem."""
    items = [str(item).strip() for item in (value if isinstance(value, list) else [value])]
    if items == [ALL_REPLICAS] or all(_PAIR.fullmatch(item) for item in items):
        return None
    return FORMAT_PROBLEM


@dataclass(frozen=True, slots=True)
class ThrottledReplicas:
    """A parsed value, seen from broker ``broker_id``: ``every`` (``*``), or the
    partitions whose pairs name this broker."""

    every: bool
    partitions: frozenset[int]

    def throttles(self, partition: int) -> bool:
        return self.every or partition in self.partitions


NONE_THROTTLED: Final = ThrottledReplicas(False, frozenset())


def throttled_on(items: Sequence[str] | str | None, broker_id: int) -> ThrottledReplicas:
    """The partitions of the value (its list items, or its raw text) throttled on
    ``broker_id``; a value the validator refuses throttles nothing (it was written by a
    tool that did not check it, and a broker must keep serving)."""
    if items is None:
        return NONE_THROTTLED
    if isinstance(items, str):
        items = [item.strip() for item in items.split(",") if item.strip()]
    listed = list(items)
    if check_throttled_replicas(listed) is not None:
        return NONE_THROTTLED
    if listed == [ALL_REPLICAS]:
        return ThrottledReplicas(True, frozenset())
    mine = set()
    for item in listed:
        partition, broker = item.split(":")
        if int(broker) == broker_id:
            mine.add(int(partition))
    return ThrottledReplicas(False, frozenset(mine))


def format_pairs(pairs: Sequence[tuple[int, int]]) -> str:
    """``partition:broker`` pairs in the key's text form, sorted, without repeats."""
    return ",".join(f"{p}:{b}" for p, b in sorted(set(pairs)))
