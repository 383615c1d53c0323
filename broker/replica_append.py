"""The produce side of the ReplicaManager: appends as leader and the acks=all wait.

:meth:`ProduceAppends.append_records` appends each partition's records as leader and
answers through its callback: at once for acks 0 and 1 (and for acks=all when nothing
was appended), else from a DelayedProduce in the produce purgatory once every appended
partition's high watermark passed its records, or at the request's timeout.

New records may answer waiting fetches; waiting produces and DeleteRecords wait on the
high watermark, which an append moves only when the leader is alone in its ISR, so an
append wakes only the fetches unless its high watermark moved.

This is the hot path of every Produce request, tuned by measurement: attribute reads
are hoisted, the min.insync.replicas lookup is made only for acks=all, and an acks=all
produce that can settle nothing yet parks without a first try. The records arrive
checked by the handler (:mod:`broker.produce_records`); nothing here parses them.

Failed appends are counted per topic (Kafka's FailedProduceRequestsPerSec), and records
refused by validation by their bytes (BytesRejectedPerSec).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from broker.delayed.produce import (
    DelayedProduce,
    ProduceCallback,
    ProducePartitionResult,
    ProducePartitionStatus,
)
from broker.partition import PartitionError
from broker.produce_records import ProducedRecords, RefusedRecords
from broker.replica_table import ReplicaTable
from protocol.errors import ErrorCode
from protocol.values import INTERNAL_TOPICS, TopicPartition
from storage import RecordError, RecordValidationError, StorageError

log = logging.getLogger(__name__)


class ProduceAppends(ReplicaTable):
    """Produce appends and the DelayedProduce of acks=all."""

    def append_records(
        self,
        entries: Mapping[TopicPartition, ProducedRecords],
        *,
        required_acks: int,
        timeout_ms: int,
        on_done: ProduceCallback,
        internal_topics_allowed: bool = False,
        from_coordinator: bool = False,
    ) -> None:
        """Append each partition's records as leader, then call ``on_done`` with every
        partition's result: at once for acks 0 and 1 (and for acks=all when nothing was
        appended), else from a DelayedProduce once the high watermarks pass the appends
        or ``timeout_ms`` runs out. ``from_coordinator``: the records are transaction
        markers (WriteTxnMarkers), which the log checks against the producer state."""
        if required_acks not in (-1, 0, 1):
            on_done({tp: ProducePartitionResult(ErrorCode.INVALID_REQUIRED_ACKS) for tp in entries})
            return
        results: dict[TopicPartition, ProducePartitionResult] = {}
        required: dict[TopicPartition, int] = {}
        unacknowledged = 0  # appends whose high watermark is below their end
        appended: list[TopicPartition] = []
        moved: list[TopicPartition] = []
        for tp, records in entries.items():
            result, next_offset, high_watermark_moved, acknowledged = self._append_one(
                tp, records, required_acks, internal_topics_allowed, from_coordinator
            )
            results[tp] = result
            if next_offset is not None:
                required[tp] = next_offset
                unacknowledged += not acknowledged
                # New records may answer waiting fetches. Waiting produces and
                # DeleteRecords wait on the high watermark, which an append moves only
                # when the leader is alone in its ISR: checking them after every append
                # would test each waiting produce again for nothing (Kafka checks only
                # the fetches unless the high watermark moved, as here).
                # Checked once every partition is appended: a waiting fetch (a follower's
                # session holding many of them) then takes them all in one answer.
                (moved if high_watermark_moved else appended).append(tp)
        if appended:
            self._wake_fetches_of(appended)
        for tp in moved:
            self._complete_delayed(tp)
        if required_acks != -1 or not required:
            on_done(results)
            return
        statuses = {
            tp: ProducePartitionStatus(required.get(tp, -1), result, tp in required)
            for tp, result in results.items()
        }
        operation = DelayedProduce(
            timeout_ms, statuses, self._partitions.get, self.min_insync_replicas, on_done
        )
        keys = list(required)
        if unacknowledged == len(required):
            # Every append waits for followers: each partition is led here with its high
            # watermark below the append's end, and nothing run since can move a high
            # watermark (only a follower's fetch does) or change a role. The
            # DelayedProduce's first test would find just that and settle nothing (the
            # usual acks=all produce, which parks without it).
            self.produce_purgatory.watch(operation, keys)
        else:
            self.produce_purgatory.try_complete_else_watch(operation, keys)

    def _append_one(
        self,
        tp: TopicPartition,
        records: ProducedRecords,
        required_acks: int,
        internal_topics_allowed: bool,
        from_coordinator: bool = False,
    ) -> tuple[ProducePartitionResult, int | None, bool, bool]:
        """One partition's append: its result; when something was appended (or was a
        duplicate), the offset after it; whether the high watermark moved; and whether
        it reached that offset (an acks=all answer for the partition is there)."""
        if tp.topic in INTERNAL_TOPICS and not internal_topics_allowed:
            refused = _failed(ErrorCode.INVALID_TOPIC_EXCEPTION, f"cannot append to {tp.topic}")
            return refused, None, False, False
        try:
            partition = self._leader_or_error(tp)
            high_watermark = partition.high_watermark
            # only acks=all checks the ISR's size: other acks spare the config lookup
            min_isr = self.min_insync_replicas(tp.topic) if required_acks == -1 else 1
            info = partition.append_records_to_leader(
                records,
                required_acks=required_acks,
                min_insync_replicas=min_isr,
                from_coordinator=from_coordinator,
            )
        except PartitionError as exc:
            rejected = exc.error_code in _VALIDATION_ERRORS
            self._count_failed_append(tp, _size(records) if rejected else 0)
            return _failed(exc.error_code, str(exc)), None, False, False
        except RecordValidationError as exc:  # some records named (KIP-467)
            self._count_failed_append(tp, _size(records))
            result = ProducePartitionResult(
                exc.error_code, error_message=str(exc), record_errors=tuple(exc.record_errors)
            )
            return result, None, False, False
        except RecordError as exc:
            self._count_failed_append(tp, _size(records))
            return _failed(exc.error_code, str(exc)), None, False, False
        except StorageError as exc:
            log.error("%s: append failed: %s", tp, exc)
            self._count_failed_append(tp)
            return _failed(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)), None, False, False
        if self.metrics is not None and not info.duplicate:
            self.metrics.topic_bytes_in.labels(topic=tp.topic).inc(info.valid_bytes)
            self.metrics.topic_messages_in.labels(topic=tp.topic).inc(info.records_count)
        result = ProducePartitionResult(
            ErrorCode.NONE, info.first_offset, info.log_append_time, info.log_start_offset
        )
        next_offset = info.last_offset + 1
        after = partition.high_watermark
        return result, next_offset, after != high_watermark, after >= next_offset

    def _count_failed_append(self, tp: TopicPartition, rejected_bytes: int = 0) -> None:
        if self.metrics is not None:
            self.metrics.failed_produce_requests.labels(topic=tp.topic).inc()
            if rejected_bytes:
                self.metrics.topic_bytes_rejected.labels(topic=tp.topic).inc(rejected_bytes)


#: append errors that refuse the records themselves (Kafka counts their bytes as rejected)
_VALIDATION_ERRORS = frozenset(
    {
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.INVALID_RECORD,
        ErrorCode.INVALID_TIMESTAMP,
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
    }
)


def _failed(error_code: int, message: str) -> ProducePartitionResult:
    return ProducePartitionResult(error_code, error_message=message)


def _size(records: ProducedRecords) -> int:
    """The bytes a partition's records take in the request (counted when refused)."""
    return records.size if isinstance(records, RefusedRecords) else len(records.buffer)
