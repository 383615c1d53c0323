"""DeleteRecords on the leader side: move log starts, then wait for the followers.

:meth:`RecordDeletion.delete_records` moves each led partition's log start
(``broker.record_deletion`` has the rules) and writes the log-start-offset checkpoint;
the answer waits in a DelayedDeleteRecords until the low watermark -- the smallest log
start over the replicas on live brokers -- has passed the requested offset. Each
follower fetch carries the follower's log start (the fetch side checks the purgatory
when it moved), and a follower's broker leaving the live brokers
(:meth:`RecordDeletion.live_brokers_changed`) may complete the wait too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from broker.delayed.delete_records import (
    DelayedDeleteRecords,
    DeleteRecordsCallback,
    DeleteRecordsPartitionResult,
    DeleteRecordsPartitionStatus,
)
from broker.partition import PartitionError
from broker.replica_table import ReplicaTable
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from storage import StorageError

log = logging.getLogger(__name__)


class RecordDeletion(ReplicaTable):
    """DeleteRecords and its DelayedDeleteRecords."""

    async def delete_records(
        self,
        offsets: Mapping[TopicPartition, int],
        *,
        timeout_ms: int,
        on_done: DeleteRecordsCallback,
    ) -> None:
        """DeleteRecords (Kafka's deleteRecords): move each partition's log start as
        leader (``broker.record_deletion`` has the rules), write the log-start-offset
        checkpoint (a worker thread) so that a restart keeps the new starts, then call
        ``on_done`` with every partition's result: at once when every low watermark is
        there already (or nothing moved), else from a DelayedDeleteRecords once the live
        followers followed, or at ``timeout_ms``."""
        results: dict[TopicPartition, DeleteRecordsPartitionResult] = {}
        required: dict[TopicPartition, int] = {}
        for tp, offset in offsets.items():
            try:
                partition = self._leader_or_error(tp)
                required[tp] = partition.delete_records_on_leader(offset)
                self._wake_fetches(tp)  # the followers learn the new log start
                lw = partition.low_watermark(self.is_alive_broker)
            except PartitionError as exc:
                results[tp] = DeleteRecordsPartitionResult(exc.error_code)
                continue
            except StorageError as exc:
                log.error("%s: deleting records failed: %s", tp, exc)
                results[tp] = DeleteRecordsPartitionResult(ErrorCode.KAFKA_STORAGE_ERROR)
                continue
            results[tp] = DeleteRecordsPartitionResult(ErrorCode.NONE, lw)
            log.info("%s: log start offset moved to %d by DeleteRecords", tp, required[tp])
        if required:
            await self._run_blocking(self.log_manager.checkpoint_log_start_offsets)
        if all(results[tp].low_watermark >= offset for tp, offset in required.items()):
            on_done(results)
            return
        statuses = {
            tp: DeleteRecordsPartitionStatus(required.get(tp, -1), result, tp in required)
            for tp, result in results.items()
        }
        operation = DelayedDeleteRecords(
            timeout_ms, statuses, self.partition_for, self.is_alive_broker, on_done
        )
        self.delete_records_purgatory.try_complete_else_watch(operation, list(required))

    def live_brokers_changed(self) -> None:
        """The metadata cache's live brokers changed: a follower on a broker that died no
        longer holds back the low watermark of the DeleteRecords waiting on its leader."""
        if self.delete_records_purgatory.num_delayed:
            for partition in self.leader_partitions():
                self.delete_records_purgatory.check_and_complete(partition.tp)
