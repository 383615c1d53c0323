"""The positions a replica fetcher asks its leader for, kept up to date by changes.

A fetcher of thousands of partitions runs a turn per answer of its leader (twice a
second when idle, once per append under load). Recomputing every partition's position
(leader epoch, log end, log start) and comparing it with what the fetch session holds on
each turn costs in proportion to the partitions followed, though a turn usually moves a
handful. :class:`FetchPositions` keeps:

- ``wanted``: the position of every partition ready to fetch (FETCHING, not backing
  off), as of the last :meth:`FetchPositions.refresh`;
- the partitions *touched* since (:meth:`FetchPositions.touch`: the fetcher calls it for
  every partition it adds, removes, moves to another state, or applies an answer to):
  only those are looked at again, plus the few that wait (truncating, paused or backing
  off, whose readiness comes with time);
- the partitions whose wanted position changed (:meth:`FetchPositions.take_changed`),
  the candidates of an incremental session request
  (:meth:`~broker.replication.fetch_session.FollowerSession.build_changes`).

Every :data:`SWEEP_MS` every partition is looked at again, for what no touch covers (the
local log start moved by retention). Event-loop only.
"""

from __future__ import annotations

from collections.abc import Mapping

from broker.partition import Partition, PartitionError
from broker.replication.fetch_state import PartitionFetchState
from protocol.errors import ErrorCode
from protocol.values import TopicPartition

#: (leader epoch, fetch offset, log start offset) of one partition
Position = tuple[int, int, int]

#: Every partition's position is recomputed at least this often.
SWEEP_MS = 10_000


class FetchPositions:
    """The fetcher's wanted positions (see the module doc)."""

    def __init__(self) -> None:
        self.wanted: dict[TopicPartition, Position] = {}
        self._touched: set[TopicPartition] = set()
        self._waiting: set[TopicPartition] = set()
        self._changed: set[TopicPartition] = set()
        self._last_sweep_ms: int | None = None

    def touch(self, tp: TopicPartition) -> None:
        """``tp``'s state, log or membership may have changed."""
        self._touched.add(tp)

    def touched_since_refresh(self, tp: TopicPartition | tuple[str, int]) -> bool:
        return tp in self._touched

    def refresh(
        self,
        partitions: Mapping[TopicPartition, tuple[Partition, PartitionFetchState]],
        now_ms: int,
    ) -> list[TopicPartition]:
        """Bring ``wanted`` up to date with ``partitions``; returns those ready to
        truncate. Raises PartitionError for a partition without a log (the fetcher backs
        off)."""
        if self._last_sweep_ms is None or now_ms - self._last_sweep_ms >= SWEEP_MS:
            self._last_sweep_ms = now_ms
            look = set(partitions)
            look.update(self.wanted)
            look.update(self._waiting)
        else:
            look = self._touched
            look.update(self._waiting)
        self._touched = set()
        wanted, waiting, changed = self.wanted, self._waiting, self._changed
        truncating: list[TopicPartition] = []
        for tp in look:
            entry = partitions.get(tp)
            if entry is None:
                waiting.discard(tp)
                if wanted.pop(tp, None) is not None:
                    changed.add(tp)
                continue
            partition, state = entry
            if state.is_fetching and state.is_ready(now_ms):
                waiting.discard(tp)
                lg = partition.log
                if lg is None:
                    self._touched.add(tp)
                    raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{tp} has no log")
                position = (state.leader_epoch, lg.log_end_offset, lg.log_start_offset)
                if wanted.get(tp) != position:
                    wanted[tp] = position
                    changed.add(tp)
                continue
            waiting.add(tp)
            if wanted.pop(tp, None) is not None:
                changed.add(tp)
            if state.is_truncating and state.is_ready(now_ms):
                truncating.append(tp)
        return truncating

    def take_changed(self) -> set[TopicPartition]:
        """The partitions whose wanted position changed since the last call."""
        changed, self._changed = self._changed, set()
        return changed

    def mark_changed(self, tps: set[TopicPartition]) -> None:
        """Put ``tps`` back among the changed (a request that left them out)."""
        self._changed |= tps
