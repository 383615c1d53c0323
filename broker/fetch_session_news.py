"""What a follower's fetch session must read on its next round: the partitions with news.

A follower of thousands of partitions fetches them all in one incremental fetch session
(``broker.fetch_session``), twice a second when idle and once per append under load.
Reading every partition of the session on each round costs the leader work in proportion
to the session's size, although a caught-up follower of a partition nothing happened to
learns nothing from its read. So a follower's session (a *privileged* one) reads only:

- the partitions its request names (the follower's position or limits moved);
- the partitions *marked* since the last read: :meth:`NewsIndex.changed` marks a
  partition in every follower session holding it, and the ReplicaManager calls it for
  every change a read could report (an append, a high watermark or last stable offset
  move, an ISR or role change, a log start moved by DeleteRecords) -- the same places
  that check the fetch purgatory;
- the partitions left *unsettled* by their last read: an error, records sent, a follower
  behind the leader's log end (the answer carried records or the throttle held them
  back) or outside the ISR (each fetch may let it join). A settled partition's follower
  state is linked to the session's :class:`~broker.isr.FetchClock` instead (``broker.isr``
  explains why its caught-up time stays right unread);
- every partition once per :data:`SWEEP_MS`, for what no mark covers (a log start moved
  by retention, a log that failed on disk).

A session's waiting fetch is watched in the fetch purgatory under the session's
:class:`SessionKey` alone, which every mark of one of its partitions checks: the
long-poll wakes at once on an append to any partition of the session, and each wake-up
measures only the partitions marked since the one before (``fresh``): a round of
thousands of high watermark moves, each marking a partition, costs its waiting fetches
one look per mark, not one per mark and marked partition.

Event-loop only. Invariant: a partition of a follower session is marked, unsettled, or
its follower is at the leader's log end with the last values the leader sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from broker.delayed.fetch import FetchInfos, PartitionFetchInfo
from broker.isr import FetchClock
from protocol.values import TopicPartition

#: Every partition of a follower session is read at least this often.
SWEEP_MS = 10_000


@dataclass(frozen=True, slots=True)
class SessionKey:
    """The fetch purgatory key a follower session's waiting fetch is watched under."""

    session_id: int


@dataclass(eq=False, slots=True)
class SessionNews:
    """A follower session's marked and unsettled partitions (see the module doc)."""

    key: SessionKey
    last_sweep_ms: int
    clock: FetchClock = field(default_factory=FetchClock)
    marked: set[TopicPartition] = field(default_factory=set)
    unsettled: set[TopicPartition] = field(default_factory=set)
    #: the marks since a waiting fetch last looked (see the module doc)
    fresh: list[TopicPartition] = field(default_factory=list)

    def due(
        self,
        named: Iterable[TopicPartition],
        partitions: Mapping[TopicPartition, object],
        now_ms: int,
    ) -> list[TopicPartition]:
        """The partitions an incremental round reads (in the session's order on a sweep);
        the marks are taken."""
        self.fresh.clear()
        if now_ms - self.last_sweep_ms >= SWEEP_MS:
            self.last_sweep_ms = now_ms
            self.marked.clear()
            return list(partitions)
        due = dict.fromkeys(named)
        for tp in self.marked:
            due[tp] = None
        for tp in self.unsettled:
            due[tp] = None
        self.marked.clear()
        return [tp for tp in due if tp in partitions]

    def with_marked(
        self,
        read: FetchInfos,
        info_for: Callable[[TopicPartition], PartitionFetchInfo | None],
        *,
        take: bool,
    ) -> FetchInfos:
        """``read`` and the partitions marked since it (for a waiting fetch's checks and
        answer); ``take`` clears the marks, for the answer."""
        marked = self.marked
        if not marked:
            return read
        seen = {tp for tp, _ in read}
        extra = []
        for tp in marked:
            info = info_for(tp)
            if info is not None and tp not in seen:
                extra.append((tp, info))
        if take:
            marked.clear()
            self.fresh.clear()
        return [*read, *extra]

    def take_fresh(
        self, info_for: Callable[[TopicPartition], PartitionFetchInfo | None]
    ) -> FetchInfos:
        """The partitions marked since the last call, for a waiting fetch to measure."""
        fresh = self.fresh
        if not fresh:
            return []
        infos = []
        for tp in dict.fromkeys(fresh):
            info = info_for(tp)
            if info is not None:
                infos.append((tp, info))
        fresh.clear()
        return infos

    def settled(self, read: Iterable[TopicPartition], unsettled: Iterable[TopicPartition]) -> None:
        """After an answer: of the partitions ``read``, those in ``unsettled`` are read
        again next round, the rest only once marked."""
        again = set(unsettled)
        for tp in read:
            if tp in again:
                self.unsettled.add(tp)
            else:
                self.unsettled.discard(tp)


class NewsIndex:
    """The follower sessions holding each partition, to mark its changes in them."""

    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, list[SessionNews]] = {}

    def __len__(self) -> int:
        return len(self._by_partition)

    def add(self, news: SessionNews, tps: Iterable[TopicPartition]) -> None:
        index = self._by_partition
        for tp in tps:
            holders = index.get(tp)
            if holders is None:
                index[tp] = [news]
            elif news not in holders:
                holders.append(news)

    def remove(self, news: SessionNews, tps: Iterable[TopicPartition]) -> None:
        index = self._by_partition
        for tp in tps:
            holders = index.get(tp)
            if holders is not None and news in holders:
                holders.remove(news)
                if not holders:
                    del index[tp]
            news.marked.discard(tp)
            news.unsettled.discard(tp)
            # (a forgotten partition left in ``fresh`` is skipped: no info for it)

    def changed(self, tp: TopicPartition) -> list[SessionKey]:
        """Mark ``tp`` in every follower session holding it; their keys, to wake their
        waiting fetches."""
        holders = self._by_partition.get(tp)
        if not holders:
            return []
        for news in holders:
            news.marked.add(tp)
            news.fresh.append(tp)
        return [news.key for news in holders]
