"""Partition: one partition hosted by this broker, as the controller last described it.

A Partition exists for every partition this broker holds a replica of (LeaderAndIsr
created it). It carries the controller's view -- leader, leader epoch, ISR, replicas,
partition epoch -- and, once the replica is local, the partition's :class:`storage.Log`.
The ReplicaManager owns every Partition and is the only caller.

The offsets a reader sees (Kafka's names)::

    log_start_offset <= last_stable_offset <= high_watermark <= log_end_offset

Replication between brokers is not built yet, so the high watermark is the leader's log
end offset (it moves on every append) and the last stable offset equals the high
watermark (no transactions). A follower only records who leads and at what epoch; it
serves nothing until replica fetchers land.

Errors for a request leave as :class:`PartitionError` carrying the Kafka error code; the
ReplicaManager turns them into that partition's error in the response.

Not safe across tasks beyond the event loop: every method runs on the loop's thread.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from broker.produce_records import validate_produce_records
from protocol.errors import ErrorCode
from protocol.primitives import ZERO_UUID
from protocol.records.batch import InvalidBatch
from protocol.uuids import uuid_to_base64
from protocol.values import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    NO_LEADER_EPOCH,
    READ_COMMITTED,
    TopicPartition,
)
from storage import AppendInfo, FileRegion, Log, LogManager, TimestampOffset
from storage.errors import OffsetOutOfRangeError, RecordTooLargeError

log = logging.getLogger(__name__)


class PartitionError(Exception):
    """A request on this partition fails with ``error_code`` (a Kafka error code)."""

    def __init__(self, error_code: int, message: str = "") -> None:
        super().__init__(message or ErrorCode(error_code).name)
        self.error_code = error_code


class PartitionStateLike(Protocol):
    """What a partition state of a LeaderAndIsr request carries (the request's struct),
    read only."""

    @property
    def topic_name(self) -> str: ...
    @property
    def partition_index(self) -> int: ...
    @property
    def controller_epoch(self) -> int: ...
    @property
    def leader(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def isr(self) -> Sequence[int]: ...
    @property
    def partition_epoch(self) -> int: ...
    @property
    def replicas(self) -> Sequence[int]: ...


def leader_epoch_error(current_leader_epoch: int, local_leader_epoch: int) -> int:
    """Fencing by the epoch a request carries (KIP-320): a client behind the broker's
    epoch is fenced, one ahead of it knows of a leader change this broker has not seen."""
    if current_leader_epoch in (NO_LEADER_EPOCH, local_leader_epoch):
        return ErrorCode.NONE
    if current_leader_epoch < local_leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.UNKNOWN_LEADER_EPOCH


def topic_id_text(topic_id: uuid.UUID | None) -> str | None:
    """The topic id as partition.metadata stores it (Kafka's base64url), None for none."""
    if topic_id is None or topic_id == ZERO_UUID:
        return None
    return uuid_to_base64(topic_id)


@dataclass(frozen=True, slots=True)
class LogReadResult:
    """One partition's part of a fetch: the region to send (None: nothing to send) and
    the offsets the response reports."""

    region: FileRegion | None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int


class Partition:
    def __init__(self, tp: TopicPartition, local_broker_id: int, log_manager: LogManager) -> None:
        self.tp = tp
        self.local_broker_id = local_broker_id
        self._log_manager = log_manager
        self.log: Log | None = None
        self.topic_id: uuid.UUID | None = None
        self.leader_id = -1
        self.leader_epoch = -1
        #: First offset written in the current leader epoch (-1 when not leader).
        self.leader_epoch_start_offset = -1
        self.partition_epoch = -1
        self.controller_epoch = -1
        self.isr: tuple[int, ...] = ()
        self.replicas: tuple[int, ...] = ()

    # -- role changes (LeaderAndIsr) ---------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id and self.log is not None

    @property
    def is_under_replicated(self) -> bool:
        return self.is_leader and len(self.isr) < len(self.replicas)

    @property
    def is_offline(self) -> bool:
        """A local replica whose log failed on disk."""
        return self.log is not None and self.log.failed is not None

    def _apply(self, state: PartitionStateLike, topic_id: uuid.UUID | None) -> None:
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.controller_epoch = state.controller_epoch
        self.isr = tuple(state.isr)
        self.replicas = tuple(state.replicas)
        if topic_id is not None and topic_id != ZERO_UUID:
            self.topic_id = topic_id

    def _ensure_log(self, topic_id: uuid.UUID | None) -> Log:
        """Open or create the local log (StorageError for a different topic id)."""
        if self.log is None:
            self.log = self._log_manager.get_or_create_log(self.tp, topic_id_text(topic_id))
        return self.log

    def make_leader(self, state: PartitionStateLike, topic_id: uuid.UUID | None) -> bool:
        """Become leader at ``state.leader_epoch``: open the log and start the epoch at
        the log end in the leader-epoch cache. Returns whether this broker was not
        already leading (Kafka's isNewLeader).

        No disk work when the log is already open (the ReplicaManager opens it in a
        worker thread first): the epoch changes the cache in memory, and the caller
        writes the checkpoint off the loop (``Log.flush_epoch_cache``)."""
        was_leader = self.is_leader
        lg = self._ensure_log(topic_id if topic_id is not None else self.topic_id)
        self._apply(state, topic_id)
        lg.epoch_cache.assign(state.leader_epoch, lg.log_end_offset)
        self.leader_epoch_start_offset = lg.log_end_offset
        self.maybe_increment_high_watermark()
        log.info(
            "%s: leader at epoch %d from offset %d, ISR %s",
            self.tp,
            self.leader_epoch,
            self.leader_epoch_start_offset,
            list(self.isr),
        )
        return not was_leader

    def make_follower(self, state: PartitionStateLike, topic_id: uuid.UUID | None) -> bool:
        """Follow ``state.leader``: open the log and record the leader and epoch. Nothing
        is truncated here: the replica fetcher finds where this log and the leader's
        agree (OffsetForLeaderEpoch) before it fetches, and cuts there."""
        changed = self.leader_id != state.leader
        self._ensure_log(topic_id if topic_id is not None else self.topic_id)
        self._apply(state, topic_id)
        self.leader_epoch_start_offset = -1
        log.info("%s: follower of %d at epoch %d", self.tp, self.leader_id, self.leader_epoch)
        return changed

    def stop_leading(self) -> None:
        """StopReplica without deletion: keep the log, serve nothing as leader."""
        self.leader_id = -1
        self.leader_epoch_start_offset = -1

    # -- follower (the replica fetcher's side) -------------------------------------------

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

    # -- offsets -----------------------------------------------------------------------

    def _leader_log(self, current_leader_epoch: int, require_leader: bool = True) -> Log:
        """The log to serve from after the epoch and role checks (Kafka's localLogWithEpoch)."""
        error = leader_epoch_error(current_leader_epoch, self.leader_epoch)
        if error:
            raise PartitionError(
                error,
                f"{self.tp}: request epoch {current_leader_epoch}, "
                f"broker epoch {self.leader_epoch}",
            )
        if self.log is None or (require_leader and not self.is_leader):
            raise PartitionError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"{self.tp}: broker {self.local_broker_id} is not the leader",
            )
        if self.log.failed is not None:
            raise PartitionError(ErrorCode.KAFKA_STORAGE_ERROR, self.log.failed)
        return self.log

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark if self.log is not None else -1

    @property
    def last_stable_offset(self) -> int:
        """No transactions yet: nothing is unstable, so the LSO is the high watermark."""
        return self.high_watermark

    def maybe_increment_high_watermark(self) -> bool:
        """Until followers replicate, the high watermark is the leader's log end."""
        lg = self.log
        if lg is None or not self.is_leader or lg.high_watermark == lg.log_end_offset:
            return False
        lg.update_high_watermark(lg.log_end_offset)
        return True

    # -- produce -----------------------------------------------------------------------

    def append_records_to_leader(
        self,
        records: bytes | bytearray | memoryview | None,
        *,
        api_version: int,
        required_acks: int,
        min_insync_replicas: int,
    ) -> AppendInfo:
        """Validate and append one partition's records of a Produce request as leader.
        Raises PartitionError (role, ISR, validation), storage's RecordError (sequence,
        epoch, size) or StorageError (disk)."""
        lg = self._leader_log(NO_LEADER_EPOCH)
        if required_acks == -1 and len(self.isr) < min_insync_replicas:
            raise PartitionError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"{self.tp}: ISR {list(self.isr)} is smaller than min.insync.replicas "
                f"{min_insync_replicas}",
            )
        try:
            validated = validate_produce_records(records, api_version)
        except InvalidBatch as exc:
            raise PartitionError(exc.error_code, f"{self.tp}: {exc}") from None
        try:
            info = lg.append(validated, self.leader_epoch)
        except RecordTooLargeError as exc:  # the topic's limit: a validation error too
            raise PartitionError(exc.error_code, str(exc)) from None
        self.maybe_increment_high_watermark()
        return info

    # -- fetch -------------------------------------------------------------------------

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        current_leader_epoch: int = NO_LEADER_EPOCH,
        up_to_high_watermark: bool = True,
        min_one_message: bool = True,
    ) -> LogReadResult:
        """The region from ``fetch_offset``: consumers read below the high watermark
        (READ_COMMITTED below the LSO, the same offset for now), replicas to the log end.
        OFFSET_OUT_OF_RANGE outside [log start, log end]."""
        lg = self._leader_log(current_leader_epoch)
        hw, leo, start = lg.high_watermark, lg.log_end_offset, lg.log_start_offset
        if fetch_offset < start or fetch_offset > leo:
            raise PartitionError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"{self.tp}: fetch offset {fetch_offset} is outside [{start}, {leo}]",
            )
        max_offset = hw if up_to_high_watermark else None
        try:
            region = lg.read(fetch_offset, max_bytes, max_offset, min_one_message)
        except OffsetOutOfRangeError as exc:  # retention moved the start meanwhile
            raise PartitionError(ErrorCode.OFFSET_OUT_OF_RANGE, str(exc)) from None
        return LogReadResult(region, hw, self.last_stable_offset, lg.log_start_offset, leo)

    # -- ListOffsets and OffsetForLeaderEpoch --------------------------------------------

    def fetch_offset_for_timestamp(
        self,
        timestamp: int,
        *,
        current_leader_epoch: int,
        isolation_level: int | None,
        require_leader: bool = True,
    ) -> TimestampOffset | None:
        """ListOffsets for one partition (Kafka's fetchOffsetForTimestamp). A consumer
        (``isolation_level`` given) is not answered offsets at or above what it may
        fetch: the high watermark, or the LSO for READ_COMMITTED; a replica or tool
        (None) sees to the log end. None: no such offset."""
        lg = self._leader_log(current_leader_epoch, require_leader)
        if isolation_level is None:
            last_fetchable = lg.log_end_offset
        elif isolation_level == READ_COMMITTED:
            last_fetchable = self.last_stable_offset
        else:
            last_fetchable = lg.high_watermark
        # A new leader whose epoch starts above the high watermark cannot answer yet.
        not_available = (
            isolation_level is not None and self.leader_epoch_start_offset > lg.high_watermark
        )
        if timestamp == LATEST_TIMESTAMP:
            if not_available:
                raise PartitionError(ErrorCode.OFFSET_NOT_AVAILABLE, f"{self.tp}: epoch above HW")
            return TimestampOffset(-1, last_fetchable, self.leader_epoch)
        found = lg.fetch_offset_by_timestamp(timestamp)
        if timestamp == EARLIEST_TIMESTAMP:
            return found
        if found is not None and found.offset < last_fetchable:
            return found
        if not_available:
            raise PartitionError(ErrorCode.OFFSET_NOT_AVAILABLE, f"{self.tp}: epoch above HW")
        return None

    def end_offset_for_epoch(
        self, leader_epoch: int, *, current_leader_epoch: int, require_leader: bool = True
    ) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= ``leader_epoch``, its end offset), or
        (-1, -1) when the cache knows none."""
        lg = self._leader_log(current_leader_epoch, require_leader)
        return lg.end_offset_for_epoch(leader_epoch)

    def __repr__(self) -> str:
        return (
            f"Partition({self.tp}, leader={self.leader_id}, epoch={self.leader_epoch}, "
            f"isr={list(self.isr)}, replicas={list(self.replicas)})"
        )
