"""What clients change in a led partition's log: Produce appends and DeleteRecords.

A produce is appended only by the leader (Produce carries no leader epoch), and an
acks=all produce only while the ISR holds min.insync.replicas (NOT_ENOUGH_REPLICAS,
nothing appended). The records arrive checked against the Produce rules by the handler
(:mod:`broker.produce_records`), their headers parsed; records it refused carry their
error here, raised only after the role and ISR checks, so a partition led elsewhere
answers NOT_LEADER_OR_FOLLOWER whatever its bytes are (as Kafka orders the checks).

DeleteRecords moves the leader's log start (:mod:`broker.record_deletion` has the rules);
the low watermark over the live replicas tells when every follower moved too.
"""

from __future__ import annotations

from collections.abc import Callable

from broker import record_deletion
from broker.partition_core import PartitionCore, PartitionError
from broker.produce_records import ProducedRecords, RefusedRecords
from protocol.errors import ErrorCode
from protocol.values import NO_LEADER_EPOCH
from storage import AppendInfo
from storage.errors import RecordTooLargeError


class LeaderWrites(PartitionCore):
    """Appends and log-start moves on a led partition."""

    def delete_records_on_leader(self, requested_offset: int) -> int:
        """Move the leader's log start up to ``requested_offset`` (-1: the high
        watermark) by the rules of :mod:`broker.record_deletion`; returns the offset the
        log start must reach on every live replica. Raises PartitionError (role, policy,
        range) or StorageError (disk)."""
        lg = self._leader_log(NO_LEADER_EPOCH)
        try:
            offset = record_deletion.deletion_offset(
                self.tp.topic,
                requested_offset,
                high_watermark=lg.high_watermark,
                deletes=lg.config.deletes,
            )
        except record_deletion.DeletionRefused as exc:
            raise PartitionError(exc.error_code, f"{self.tp}: {exc}") from None
        lg.increment_log_start_offset(offset)
        return offset

    def low_watermark(self, is_alive: Callable[[int], bool]) -> int:
        """As leader: the smallest log start over this replica and the followers on live
        brokers (``is_alive(broker_id)``); NOT_LEADER_OR_FOLLOWER otherwise."""
        lg = self._leader_log(NO_LEADER_EPOCH)
        starts = {replica: state.log_start_offset for replica, state in self.followers.items()}
        return record_deletion.low_watermark(lg.log_start_offset, starts, is_alive)

    # -- produce -----------------------------------------------------------------------

    def append_records_to_leader(
        self,
        records: ProducedRecords,
        *,
        required_acks: int,
        min_insync_replicas: int,
        from_coordinator: bool = False,
    ) -> AppendInfo:
        """Append one partition's records of a Produce request as leader, as the handler
        checked them (``from_coordinator``: transaction markers of WriteTxnMarkers).
        Raises PartitionError (role, ISR, then the records' refusal), storage's
        RecordError (sequence, epoch, size, marker fencing) or StorageError (disk)."""
        lg = self._leader_log(NO_LEADER_EPOCH)
        if required_acks == -1 and len(self.isr) < min_insync_replicas:
            raise PartitionError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"{self.tp}: ISR {list(self.isr)} is smaller than min.insync.replicas "
                f"{min_insync_replicas}",
            )
        if isinstance(records, RefusedRecords):
            error = records.error
            raise PartitionError(error.error_code, f"{self.tp}: {error}")
        try:
            info = lg.append(records, self.leader_epoch, from_coordinator=from_coordinator)
        except RecordTooLargeError as exc:  # the topic's limit: a validation error too
            raise PartitionError(exc.error_code, str(exc)) from None
        self.maybe_increment_high_watermark()
        return info
