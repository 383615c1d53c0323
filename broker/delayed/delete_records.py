"""DelayedDeleteRecords: a DeleteRecords response waiting for every live replica.

The leader moved its log start offset for each partition of the request; the response
waits until each partition's low watermark (:func:`broker.record_deletion.low_watermark`:
the smallest log start over the leader and its followers on live brokers) has reached
the requested offset, or until the request's ``timeout_ms``. Partitions refused up front
are final from the start. Kafka's rule per waiting partition, checked whenever its low
watermark may have moved (``check_and_complete`` on its key):

=====================================  ===========================================
partition gone                          UNKNOWN_TOPIC_OR_PARTITION
its log failed on disk                  KAFKA_STORAGE_ERROR
no longer leader here                   NOT_LEADER_OR_FOLLOWER
low watermark >= requested offset       NONE, with the low watermark
timeout before that                     REQUEST_TIMED_OUT (set up front, cleared
                                        above), with the last low watermark seen
=====================================  ===========================================

The low watermark moves when a follower's fetch reports a higher log start (it applied
the leader's from an earlier fetch response), when a follower's broker dies (it no
longer counts), or with a new leadership; the ReplicaManager checks the partition's key
on each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from timer import DelayedOperation


@dataclass(slots=True)
class DeleteRecordsPartitionResult:
    """One partition's answer: its low watermark (-1 when unknown) and error."""

    error_code: int = ErrorCode.NONE
    low_watermark: int = -1


@dataclass(slots=True)
class DeleteRecordsPartitionStatus:
    """A partition of a waiting request: its low watermark must reach ``required_offset``."""

    required_offset: int
    result: DeleteRecordsPartitionResult
    pending: bool


class LowWatermarkView(Protocol):
    """What DelayedDeleteRecords reads of a Partition."""

    @property
    def is_leader(self) -> bool: ...

    @property
    def is_offline(self) -> bool: ...

    def low_watermark(self, is_alive: Callable[[int], bool]) -> int: ...


DeleteRecordsCallback = Callable[[dict[TopicPartition, DeleteRecordsPartitionResult]], None]


class DelayedDeleteRecords(DelayedOperation):
    """Event-loop only (see timer.delayed_operation)."""

    def __init__(
        self,
        delay_ms: int,
        statuses: Mapping[TopicPartition, DeleteRecordsPartitionStatus],
        partition_for: Callable[[TopicPartition], LowWatermarkView | None],
        is_alive: Callable[[int], bool],
        on_done: DeleteRecordsCallback,
    ) -> None:
        super().__init__(delay_ms)
        self.statuses = dict(statuses)
        self._partition_for = partition_for
        self._is_alive = is_alive
        self._on_done = on_done
        for status in self.statuses.values():
            if status.pending:
                status.result.error_code = ErrorCode.REQUEST_TIMED_OUT

    def _check(self, tp: TopicPartition, status: DeleteRecordsPartitionStatus) -> None:
        partition = self._partition_for(tp)
        if partition is None:
            status.pending = False
            status.result = DeleteRecordsPartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        elif partition.is_offline:
            status.pending = False
            status.result = DeleteRecordsPartitionResult(ErrorCode.KAFKA_STORAGE_ERROR)
        elif not partition.is_leader:
            status.pending = False
            status.result = DeleteRecordsPartitionResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        else:
            status.result.low_watermark = partition.low_watermark(self._is_alive)
            if status.result.low_watermark >= status.required_offset:
                status.pending = False
                status.result.error_code = ErrorCode.NONE

    def try_complete(self) -> bool:
        for tp, status in self.statuses.items():
            if status.pending:
                self._check(tp, status)
        if any(s.pending for s in self.statuses.values()):
            return False
        return self.force_complete()

    def on_complete(self) -> None:
        self._on_done({tp: s.result for tp, s in self.statuses.items()})

    def on_expiration(self) -> None:
        """Nothing beyond the REQUEST_TIMED_OUT already set on the pending partitions."""
