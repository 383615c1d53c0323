"""DelayedFetch: a fetch waiting until ``min_bytes`` are readable or ``max_wait_ms`` passes.

Created when a fetch's first read found fewer than ``min_bytes`` (and no error). It is
watched under every partition of the fetch; an append or a high-watermark move (a
follower's fetch, an ISR shrink) on one of them checks it again: a consumer reads below
the high watermark, a follower to the log end. It completes when, as Kafka decides:

- a partition is gone, no longer led here, or its leader epoch moved past the one the
  request carried (the client must learn of it now, not at the timeout);
- a fetch offset is no longer inside the log (truncated, or retention passed it);
- the bytes readable from the fetch offsets, each capped at its partition_max_bytes,
  add up to ``min_bytes`` (a partition the leader's replication throttle holds back
  from a follower counts none: its answer would carry none, as in Kafka);

or at the timeout. Either way the response is a fresh read of every partition, so it
carries what arrived up to the moment of completion -- except a timeout that nothing
woke in between, when the first read found nothing to send: every change a read could
report wakes the operation (appends, high-watermark moves, role changes), so that first
read's answer is sent as it was. This halves what an idle follower of thousands of
partitions costs its leader per round. (A log start moved by retention meanwhile wakes
nothing; the next round's answer carries it.)

Measuring readable bytes asks the log for the region it would send (an index lookup and
a scan of batch headers; no record bytes), and only for partitions whose end offset has
moved past the fetch offset. A follower's fetch with ``min_bytes`` of 1 (the replica
fetchers' default) skips even that: below the log end there is always a whole batch to
send, so any move of the end completes it. That check runs on every append and every
high-watermark move for every waiting follower, so it reads each offset once and decides
the request-wide questions (follower or consumer, one byte or more) at construction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from broker.partition import Partition, PartitionError
from protocol.values import NO_LEADER_EPOCH, READ_COMMITTED, READ_UNCOMMITTED, TopicPartition
from storage import FileRegion, StorageError
from storage.txn_index import AbortedTransaction
from timer import DelayedOperation


@dataclass(frozen=True, slots=True)
class FetchParams:
    """The request-wide settings of a fetch. ``replica_id`` >= 0 is a follower broker
    (reads to the log end), -1 a consumer (reads below the high watermark)."""

    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int = 0

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0


@dataclass(slots=True)
class PartitionFetchInfo:
    """One partition of a fetch. ``log_start_offset`` is the fetching follower's own
    (-1 from consumers).

    (Not frozen, though never changed after it is made: a frozen dataclass takes several
    times as long to construct, and one is made per partition of every fetch.)
    """

    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1


@dataclass(slots=True)
class FetchPartitionResult:
    """One partition's answer. ``records`` None means nothing to send (the handler puts
    empty bytes on the wire, never null); ``aborted_transactions``: those of the region,
    for a read_committed consumer (None otherwise).

    (Not frozen, though never changed after it is made: a frozen dataclass takes several
    times as long to construct, and one is made per partition of every fetch.)
    """

    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: FileRegion | None = None
    aborted_transactions: list[AbortedTransaction] | None = None


FetchResults = list[tuple[TopicPartition, FetchPartitionResult]]
FetchInfos = Sequence[tuple[TopicPartition, PartitionFetchInfo]]


class DelayedFetch(DelayedOperation):
    """Event-loop only (see timer.delayed_operation)."""

    def __init__(
        self,
        params: FetchParams,
        infos: FetchInfos,
        partition_for: Callable[[TopicPartition], Partition | None],
        read: Callable[[FetchParams, FetchInfos], FetchResults],
        on_done: Callable[[FetchResults], None],
        *,
        held_back: Callable[[TopicPartition, Partition], bool],
        unchanged: FetchResults | None = None,
    ) -> None:
        super().__init__(params.max_wait_ms)
        #: the first read's answer when it found nothing to send, kept for a timeout
        #: with no wake-up in between (see on_complete)
        self._unchanged = unchanged
        self.params = params
        self.infos = list(infos)
        self._partition_for = partition_for
        self._read = read
        self._on_done = on_done
        self._held_back = held_back
        self._from_follower = params.is_from_follower
        self._committed = not self._from_follower and params.isolation_level == READ_COMMITTED
        # a follower asking for at most one byte is satisfied by any offset past its own
        self._one_offset_enough = self._from_follower and params.min_bytes <= 1

    def _readable_bytes(self, partition: Partition, info: PartitionFetchInfo) -> int | None:
        """Bytes readable for ``info`` (or, for a follower asking for at most one byte,
        1 when there are some), or None when the fetch must complete now."""
        epoch = info.current_leader_epoch
        if not partition.is_leader or epoch not in (NO_LEADER_EPOCH, partition.leader_epoch):
            return None  # not leading, or fenced either way (see leader_epoch_error)
        lg = partition.log
        assert lg is not None  # a leader has its log
        offset, log_end = info.fetch_offset, lg.log_end_offset
        if offset > log_end or offset < lg.log_start_offset:
            return None
        if self._from_follower:
            end = log_end
        else:  # a read_committed consumer counts only the bytes below the LSO
            end = lg.last_stable_offset if self._committed else lg.high_watermark
        if end <= offset:
            return 0
        if self._one_offset_enough:
            # a batch holds the offsets from fetch_offset to the log end, and the read
            # sends at least one batch: one byte is there, all that min_bytes asks
            return 1 if info.partition_max_bytes > 0 else 0
        result = partition.read(
            offset,
            info.partition_max_bytes,
            up_to_high_watermark=not self._from_follower,
            isolation_level=READ_COMMITTED if self._committed else READ_UNCOMMITTED,
        )
        return min(len(result.region or ()), info.partition_max_bytes)

    def try_complete(self) -> bool:
        self._unchanged = None  # a partition moved: the answer is read afresh
        accumulated = 0
        for tp, info in self.infos:
            partition = self._partition_for(tp)
            if partition is None:
                return self.force_complete()
            try:
                readable = self._readable_bytes(partition, info)
            except (PartitionError, StorageError):
                return self.force_complete()
            if readable is None:
                return self.force_complete()
            if readable and self._from_follower and self._held_back(tp, partition):
                continue  # the replication throttle leaves it out of the answer
            accumulated += readable
            if readable and accumulated >= self.params.min_bytes:
                # enough: the rest need not be measured (the answer reads them all
                # afresh); a follower of thousands of partitions is woken in one step
                return self.force_complete()
        if accumulated >= self.params.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        unchanged = self._unchanged
        if unchanged is not None:
            # Timed out and never woken: no partition had an append, a high-watermark
            # move or a role change, so a second read would answer what the first did.
            self._on_done(unchanged)
            return
        self._on_done(self._read(self.params, self.infos))

    def on_expiration(self) -> None:
        """The timeout's response is the read on_complete made; nothing more to do."""


class DelayedSessionFetch(DelayedFetch):
    """A follower's fetch in a fetch session (``broker.fetch_session_news``), watched under
    its session's key alone rather than under every partition of the session: each
    change of one of them marks it and checks that key. The first check measures the
    partitions the request read and those marked since (``news(False)``), later ones
    only the partitions marked since the check before (``fresh()``) when one byte is
    all the fetch waits for (the others may add up to min_bytes: all are measured); the
    answer reads the read and marked ones afresh and takes the marks (``news(True)``).
    So a session of thousands of partitions costs a wake-up what changed, not its
    size."""

    def __init__(
        self,
        params: FetchParams,
        infos: FetchInfos,
        partition_for: Callable[[TopicPartition], Partition | None],
        read: Callable[[FetchParams, FetchInfos], FetchResults],
        on_done: Callable[[FetchResults], None],
        *,
        held_back: Callable[[TopicPartition, Partition], bool],
        unchanged: FetchResults | None,
        news: Callable[[bool], FetchInfos],
        fresh: Callable[[], FetchInfos],
    ) -> None:
        super().__init__(
            params, infos, partition_for, read, on_done, held_back=held_back, unchanged=unchanged
        )
        self._news = news
        self._fresh = fresh
        self._looked = False

    def try_complete(self) -> bool:
        if self._looked and self._one_offset_enough:
            self.infos = list(self._fresh())
        else:
            self._fresh()  # (taken: this look covers them)
            self.infos = list(self._news(False))
            self._looked = True
        return super().try_complete()

    def on_complete(self) -> None:
        if self._unchanged is None:
            self.infos = list(self._news(True))
        super().on_complete()
