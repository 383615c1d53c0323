"""DelayedProduce: an acks=all produce waiting for its offsets to be replicated.

The leader appended every partition of the request; the response must wait until each
partition's high watermark has reached the offset after its last appended record (the
ISR holds it), or until the request's ``timeout_ms``. Partitions that failed to append
are final from the start. Kafka's rule per partition, checked whenever the partition's
high watermark may have moved (``check_and_complete`` on its key):

=====================================  ===========================================
partition gone, or no longer leader     NOT_LEADER_OR_FOLLOWER
high watermark >= required offset       NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND
                                        when the ISR shrank below min.insync.replicas
timeout before that                     REQUEST_TIMED_OUT (set up front, cleared above)
=====================================  ===========================================

The high watermark moves when the ISR's followers fetch past the append (or when the ISR
shrinks to the replicas that hold it), so the ReplicaManager checks the partition's key
after every such move. min.insync.replicas is checked twice: before the append against
the ISR then (NOT_ENOUGH_REPLICAS, nothing appended; the Partition's check), and here
once the high watermark passed, against the ISR that acknowledged it -- a shrink during
the wait means fewer copies than the producer asked for. An ISR of the leader alone
moves the high watermark on the append itself: the first try completes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from timer import DelayedOperation


@dataclass(slots=True)
class ProducePartitionResult:
    """One partition's answer to a Produce request. ``record_errors``: the records of a
    batch refused for some invalid ones (KIP-467), as (index in the batch, why)."""

    error_code: int = ErrorCode.NONE
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: tuple[tuple[int, str | None], ...] = ()


@dataclass(slots=True)
class ProducePartitionStatus:
    """A partition of a waiting produce: ``required_offset`` is its last offset + 1."""

    required_offset: int
    result: ProducePartitionResult
    acks_pending: bool


class LeaderView(Protocol):
    """What DelayedProduce reads of a Partition."""

    @property
    def is_leader(self) -> bool: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def isr(self) -> tuple[int, ...]: ...


ProduceCallback = Callable[[dict[TopicPartition, ProducePartitionResult]], None]


class DelayedProduce(DelayedOperation):
    """Event-loop only (see timer.delayed_operation).

    Every follower fetch that moves a high watermark tries the produces waiting on the
    partition, so a try looks only at the partitions still waiting (``_waiting``, in
    request order; a partition leaves it once its outcome is set, never to return)."""

    def __init__(
        self,
        delay_ms: int,
        statuses: Mapping[TopicPartition, ProducePartitionStatus],
        partition_for: Callable[[TopicPartition], LeaderView | None],
        min_insync_replicas: Callable[[str], int],
        on_done: ProduceCallback,
    ) -> None:
        # The base named rather than super(): one call fewer per produce that waits.
        DelayedOperation.__init__(self, delay_ms)
        self.statuses = dict(statuses)
        self._partition_for = partition_for
        self._min_isr = min_insync_replicas
        self._on_done = on_done
        self._waiting = [(tp, s) for tp, s in self.statuses.items() if s.acks_pending]
        for _, status in self._waiting:
            status.result.error_code = ErrorCode.REQUEST_TIMED_OUT

    def try_complete(self) -> bool:
        still_waiting: list[tuple[TopicPartition, ProducePartitionStatus]] = []
        for entry in self._waiting:
            tp, status = entry
            partition = self._partition_for(tp)
            if partition is None or not partition.is_leader:
                status.acks_pending = False
                status.result.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif partition.high_watermark >= status.required_offset:
                status.acks_pending = False
                enough = len(partition.isr) >= self._min_isr(tp.topic)
                status.result.error_code = (
                    ErrorCode.NONE if enough else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                )
            else:
                still_waiting.append(entry)
        self._waiting = still_waiting
        if still_waiting:
            return False
        return self.force_complete()

    def on_complete(self) -> None:
        self._on_done({tp: s.result for tp, s in self.statuses.items()})

    def on_expiration(self) -> None:
        """Nothing beyond the REQUEST_TIMED_OUT already set on the pending partitions."""
