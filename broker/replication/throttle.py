"""A replication throttle: which partitions it covers on this broker, its quota, its rule.

A broker has two, as Kafka's brokers do:

- the leader side (``leader.replication.throttled.replicas`` of each topic, bound
  ``leader.replication.throttled.rate``): the bytes this broker, as leader, sends to
  followers of its throttled partitions;
- the follower side (``follower.replication.throttled.replicas``, bound
  ``follower.replication.throttled.rate``): the bytes this broker's replica fetchers
  receive for their throttled partitions.

A partition is throttled on this broker when its topic's key lists it with this broker's
id, or is ``*`` (``config.throttled_replicas``). A throttled partition is left out
(the leader sends it no records; the follower does not ask for it) only while the side's
quota is exceeded, and only while the replica concerned is not in sync: a leader does
not throttle a follower that is in the ISR, a follower does not throttle itself while
it has caught up with the leader's high watermark. Throttling an in-sync replica would
make it fall out of the ISR and back, over and over; the throttle is meant for replicas
catching up (a reassignment's new ones). Those two decisions are the pure functions
:func:`leader_should_throttle` and :func:`follower_should_throttle`.

The rate bound and each topic's list are read when asked: the broker config is replaced
by dynamic updates (a new AlterConfigs value applies at the next fetch), and a topic's
overrides mapping is replaced whenever it changes, so a parsed list is remembered by
the identity of the mapping it was parsed from.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from broker.replication.quota import WindowedRate
from config.throttled_replicas import ThrottledReplicas, throttled_on
from protocol.values import TopicPartition
from timer.clock import Clock

#: topics whose parsed lists are remembered at once (cleared when full)
_PARSED_CAPACITY: Final = 10_000


class ThrottleSide(enum.Enum):
    """A side and its keys: (the topic key listing replicas, the broker key of the rate)."""

    LEADER = ("leader.replication.throttled.replicas", "leader.replication.throttled.rate")
    FOLLOWER = ("follower.replication.throttled.replicas", "follower.replication.throttled.rate")

    @property
    def replicas_key(self) -> str:
        return self.value[0]

    @property
    def rate_key(self) -> str:
        return self.value[1]


def leader_should_throttle(throttled: bool, follower_in_isr: bool, exceeded: bool) -> bool:
    """Whether a leader leaves a partition's records out of a follower's fetch answer."""
    return throttled and not follower_in_isr and exceeded


def follower_should_throttle(throttled: bool, in_sync: bool, exceeded: bool) -> bool:
    """Whether a follower leaves a partition out of its next fetch."""
    return throttled and not in_sync and exceeded


class ReplicationThrottle:
    """One side's throttle on broker ``broker_id``.

    ``rate()`` gives the side's bound in bytes/s as configured now; ``overrides(topic)``
    a topic's overrides as the broker holds them now."""

    def __init__(
        self,
        side: ThrottleSide,
        broker_id: int,
        clock: Clock,
        quota: WindowedRate,
        rate: Callable[[], int],
        overrides: Callable[[str], Mapping[str, str]],
    ) -> None:
        self.side = side
        self.broker_id = broker_id
        self.clock = clock
        self.quota = quota
        self._rate = rate
        self._overrides = overrides
        #: topic -> (the overrides mapping parsed, what it throttles here)
        self._parsed: dict[str, tuple[Mapping[str, str], ThrottledReplicas]] = {}
        #: every byte recorded, for the metrics' counter
        self.recorded_bytes = 0

    def is_throttled(self, tp: TopicPartition) -> bool:
        """Whether ``tp`` is among this side's throttled replicas on this broker."""
        overrides = self._overrides(tp.topic)
        known = self._parsed.get(tp.topic)
        if known is None or known[0] is not overrides:
            if len(self._parsed) >= _PARSED_CAPACITY:
                self._parsed.clear()
            known = (overrides, throttled_on(overrides.get(self.side.replicas_key), self.broker_id))
            self._parsed[tp.topic] = known
        return known[1].throttles(tp.partition)

    def held_back(
        self, tps: Iterable[TopicPartition], lags: Mapping[TopicPartition, int]
    ) -> set[TopicPartition]:
        """The follower side's choice: of the partitions ready to fetch, those to leave
        out now; ``lags`` holds each partition's distance to the leader's high watermark
        as last seen (none yet: not in sync)."""
        # the quota first: under it (the usual case) no partition is looked at
        if not self.quota_exceeded():
            return set()
        return {
            tp
            for tp in tps
            if self.is_throttled(tp)
            and follower_should_throttle(True, lags.get(tp, 1) <= 0, exceeded=True)
        }

    def quota_exceeded(self) -> bool:
        """Whether the bytes recorded lately are above the configured rate."""
        return self.quota.exceeded(self._rate(), self.clock.monotonic_ms())

    def record(self, size: int) -> None:
        """Count ``size`` bytes of throttled partitions sent (leader) or received."""
        if size > 0:
            self.quota.record(size, self.clock.monotonic_ms())
            self.recorded_bytes += size

    def throttled_rate(self) -> float:
        """The measured rate of throttled bytes, bytes/s (the metrics' gauge)."""
        return self.quota.rate(self.clock.monotonic_ms())
