"""The follower's side of a partition: what the replica fetcher changes in its log.

A follower copies its leader's log: batches fetched from the leader are appended with
the leader's offsets and epochs, the high watermark and the log start follow the
leader's as far as this log reaches, and the log is cut where it diverged from the
leader's (the fetcher finds that point with OffsetForLeaderEpoch). Every method first
checks that this broker follows the partition and that its log is usable
(NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR), so a fetch answer arriving after a role
change cannot write into a led log.
"""

from __future__ import annotations

from broker.partition_core import PartitionCore, PartitionError
from protocol.errors import ErrorCode
from protocol.records.validation import ValidatedRecords
from storage import AppendInfo, Log


class FollowerLog(PartitionCore):
    """The replica fetcher's writes to a followed partition's log."""

    def _follower_log(self) -> Log:
        """The log a fetcher may change: this broker follows and the log is usable."""
        if self.log is None or self.is_leader:
            raise PartitionError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"{self.tp}: broker {self.local_broker_id} is not a follower",
            )
        if self.log.failed is not None:
            raise PartitionError(ErrorCode.KAFKA_STORAGE_ERROR, self.log.failed)
        return self.log

    def append_records_as_follower(self, records: bytes | bytearray | memoryview) -> AppendInfo:
        """Append batches fetched from the leader with their offsets and epochs (the
        epoch cache and producer state follow them). Raises PartitionError (role),
        RecordError (bad batches) or StorageError (disk)."""
        return self._follower_log().append_as_follower(records)

    def apply_fetched(
        self,
        records: ValidatedRecords | None,
        leader_high_watermark: int,
        leader_log_start_offset: int,
    ) -> int:
        """One partition of a Fetch response: its checked batches appended (when there
        are any), then the high watermark and log start follow the leader's, as the three
        methods around do one by one, with one role check. Returns the log end offset
        after."""
        lg = self._follower_log()
        if records is not None:
            lg.append_as_follower(records)
        leo = lg.log_end_offset
        lg.update_high_watermark(min(leader_high_watermark, leo))
        target = min(leader_log_start_offset, lg.high_watermark)
        if target > lg.log_start_offset:
            lg.increment_log_start_offset(target)
        return leo

    def update_follower_high_watermark(self, leader_high_watermark: int) -> int:
        """A follower's high watermark is the leader's, as far as this log reaches."""
        lg = self._follower_log()
        return lg.update_high_watermark(min(leader_high_watermark, lg.log_end_offset))

    def update_follower_log_start_offset(self, leader_log_start_offset: int) -> int:
        """Follow the leader's log start (retention, DeleteRecords) up to this replica's
        high watermark, never down."""
        lg = self._follower_log()
        target = min(leader_log_start_offset, lg.high_watermark)
        if target > lg.log_start_offset:
            lg.increment_log_start_offset(target)
        return lg.log_start_offset

    def truncate_to(self, offset: int) -> bool:
        """Cut the follower's log at ``offset`` (records, epochs from there on, producer
        state, recovery point); see :meth:`storage.Log.truncate_to`."""
        return self._follower_log().truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the follower's log and start it at ``offset`` (the leader's log start,
        when this replica fell behind it)."""
        self._follower_log().truncate_fully_and_start_at(offset)
