"""Partition: one partition hosted by this broker, as the controller last described it.

A Partition exists for every partition this broker holds a replica of (LeaderAndIsr
created it). It carries the controller's view -- leader, leader epoch, ISR, replicas,
partition epoch -- and, once the replica is local, the partition's :class:`storage.Log`.
The ReplicaManager owns every Partition and is the only caller.

The offsets a reader sees (Kafka's names)::

    log_start_offset <= last_stable_offset <= high_watermark <= log_end_offset

As leader, the partition tracks its followers from their fetches (``broker.isr`` has
the rules): each follower fetch records the follower's log end offset and when it was
last caught up (:meth:`Partition.update_follower_fetch_state`); the high watermark is
the smallest log end offset over the maximal ISR, so a record is below it only once
every in-sync replica holds it (consumers read below it, acks=all waits for it). The
leader changes the ISR itself -- a follower that caught up joins
(:meth:`Partition.maybe_expand_isr`), one that lagged more than replica.lag.time.max.ms
leaves (:meth:`Partition.maybe_shrink_isr`) -- by writing the partition state znode
through an :class:`~broker.isr.IsrWriter`, conditionally on the zkVersion it holds
(the partition epoch), one write in flight at a time. A write that succeeds commits
the new ISR and its zkVersion; one refused because the controller changed the znode
leaves the ISR as it was, since a LeaderAndIsr carrying the controller's state follows.
There are no transactions: the last stable offset equals the high watermark.

Errors for a request leave as :class:`PartitionError` carrying the Kafka error code; the
ReplicaManager turns them into that partition's error in the response.

Not safe across tasks beyond the event loop: every method runs on the loop's thread
(an IsrWriter calls back on the loop too).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from broker import delete_records
from broker import isr as isr_rules
from broker.isr import (
    FollowerState,
    IsrChange,
    IsrState,
    IsrWriteOutcome,
    IsrWriter,
    IsrWriteResult,
    PendingIsrChange,
)
from broker.produce_records import validate_produce_records
from protocol.errors import ErrorCode
from protocol.primitives import ZERO_UUID
from protocol.records.batch import InvalidBatch
from protocol.records.validation import ValidatedRecords
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
from timer.clock import Clock, SystemClock
from zk.model import LeaderAndIsr

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


#: Told of every ISR change this leader wrote to ZooKeeper (the ReplicaManager queues
#: the change notification and wakes the operations waiting on the partition).
IsrChangeListener = Callable[["Partition", IsrChange], None]


class Partition:
    def __init__(
        self,
        tp: TopicPartition,
        local_broker_id: int,
        log_manager: LogManager,
        *,
        clock: Clock | None = None,
        isr_writer: IsrWriter | None = None,
        on_isr_change: IsrChangeListener | None = None,
    ) -> None:
        """Without an ``isr_writer`` the leader never changes its ISR (tests of the
        other parts; a broker always has one)."""
        self.tp = tp
        self.local_broker_id = local_broker_id
        self._log_manager = log_manager
        self._clock: Clock = clock or SystemClock()
        self._isr_writer = isr_writer
        self._on_isr_change = on_isr_change
        self.log: Log | None = None
        self.topic_id: uuid.UUID | None = None
        self.leader_id = -1
        self.leader_epoch = -1
        #: First offset written in the current leader epoch (-1 when not leader).
        self.leader_epoch_start_offset = -1
        self.partition_epoch = -1
        self.controller_epoch = -1
        self._isr_state = IsrState()
        self.replicas: tuple[int, ...] = ()
        #: As leader: what each follower's fetches told (every assigned replica but us).
        self.followers: dict[int, FollowerState] = {}

    # -- role changes (LeaderAndIsr) ---------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id and self.log is not None

    @property
    def isr(self) -> tuple[int, ...]:
        """The committed ISR: as written in the partition state znode."""
        return self._isr_state.isr

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The committed ISR with a pending expansion's new member (see broker.isr)."""
        return self._isr_state.maximal_isr

    @property
    def is_under_replicated(self) -> bool:
        return self.is_leader and len(self.isr) < len(self.replicas)

    def is_under_min_isr(self, min_insync_replicas: int) -> bool:
        return self.is_leader and len(self.isr) < min_insync_replicas

    @property
    def is_offline(self) -> bool:
        """A local replica whose log failed on disk."""
        return self.log is not None and self.log.failed is not None

    def _apply(self, state: PartitionStateLike, topic_id: uuid.UUID | None) -> None:
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.controller_epoch = state.controller_epoch
        self._isr_state = IsrState(tuple(state.isr))  # a write in flight no longer applies
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

        Follower states restart (``broker.isr.reset_for_leadership``): a new leader
        knows no follower's offsets yet, and counts the ISR members as caught up now; a
        leader continuing into a new epoch keeps what it knew of the replicas still
        assigned. The high watermark is never lowered; it moves up at once when the ISR
        is this broker alone.

        No disk work when the log is already open (the ReplicaManager opens it in a
        worker thread first): the epoch changes the cache in memory, and the caller
        writes the checkpoint off the loop (``Log.flush_epoch_cache``)."""
        was_leader = self.is_leader
        lg = self._ensure_log(topic_id if topic_id is not None else self.topic_id)
        self._apply(state, topic_id)
        lg.epoch_cache.assign(state.leader_epoch, lg.log_end_offset)
        self.leader_epoch_start_offset = lg.log_end_offset
        now_ms = self._clock.monotonic_ms()
        self.followers = {
            replica: isr_rules.reset_for_leadership(
                self.followers.get(replica),
                new_leader=not was_leader,
                in_isr=replica in self.isr,
                now_ms=now_ms,
            )
            for replica in self.replicas
            if replica != self.local_broker_id
        }
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
        self.followers = {}  # a follower tracks nobody
        log.info("%s: follower of %d at epoch %d", self.tp, self.leader_id, self.leader_epoch)
        return changed

    def stop_leading(self) -> None:
        """StopReplica without deletion: keep the log, serve nothing as leader."""
        self.leader_id = -1
        self.leader_epoch_start_offset = -1
        self.followers = {}
        self._isr_state = IsrState(self.isr)

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

    # -- offsets -----------------------------------------------------------------------

    def _leader_log(self, current_leader_epoch: int, require_leader: bool = True) -> Log:
        """The log to serve from after the epoch and role checks (Kafka's localLogWithEpoch).

        Every produce and fetch passes here: a request at this broker's own epoch skips
        the epoch rule (which answers NONE for it), and the role is read without the
        :attr:`is_leader` property call."""
        local_epoch = self.leader_epoch
        if current_leader_epoch != local_epoch and (
            error := leader_epoch_error(current_leader_epoch, local_epoch)
        ):
            raise PartitionError(
                error,
                f"{self.tp}: request epoch {current_leader_epoch}, broker epoch {local_epoch}",
            )
        if self.log is None or (require_leader and self.leader_id != self.local_broker_id):
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

    #: No transactions yet: nothing is unstable, so the LSO is the high watermark (the
    #: same property, not one that calls it: every fetch answer reads both).
    last_stable_offset = high_watermark

    def maybe_increment_high_watermark(self) -> bool:
        """As leader, move the high watermark up to the smallest log end offset of the
        maximal ISR (``broker.isr.high_watermark``). True when it moved: the caller
        then completes the produces and fetches waiting on this partition.

        Runs on every follower fetch and every append: :attr:`is_leader` and
        :attr:`maximal_isr` are read here without their property calls."""
        lg = self.log
        if lg is None or self.leader_id != self.local_broker_id:
            return False
        followers = self.followers
        follower_ends = [
            followers[replica].log_end_offset
            for replica in self._isr_state.maximal_isr
            if replica in followers
        ]
        current = lg.high_watermark
        new = isr_rules.high_watermark(current, lg.log_end_offset, follower_ends)
        if new <= current:
            return False
        lg.update_high_watermark(new)
        return True

    # -- followers and the ISR (leader) ---------------------------------------------------

    def check_follower(self, replica_id: int) -> None:
        """A follower fetch must come from an assigned replica (Kafka's
        followerReplicaOrThrow): NOT_LEADER_OR_FOLLOWER otherwise."""
        if replica_id not in self.followers:
            raise PartitionError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"{self.tp}: broker {replica_id} is not a follower of this leader "
                f"(replicas {list(self.replicas)})",
            )

    def update_follower_fetch_state(
        self,
        replica_id: int,
        *,
        fetch_offset: int,
        follower_log_start_offset: int,
        leader_end_offset: int,
        now_ms: int,
    ) -> FollowerState:
        """Record a follower's fetch at ``fetch_offset``, read when the leader's log end
        offset was ``leader_end_offset`` (the caller read it successfully first). The
        caller then asks :meth:`maybe_expand_isr` and :meth:`maybe_increment_high_watermark`.
        Returns what the leader knew of the follower before this fetch."""
        self.check_follower(replica_id)
        before = self.followers[replica_id]
        self.followers[replica_id] = isr_rules.after_fetch(
            before,
            fetch_offset=fetch_offset,
            follower_log_start_offset=follower_log_start_offset,
            leader_end_offset=leader_end_offset,
            now_ms=now_ms,
        )
        return before

    def maybe_expand_isr(self, replica_id: int) -> bool:
        """Add ``replica_id`` to the ISR when it caught up (``broker.isr.may_join_isr``)
        and no other ISR write is in flight. True when the write was submitted."""
        if replica_id in self._isr_state.isr:  # the usual case, first: nothing to do
            return False
        state = self.followers.get(replica_id)
        if (
            state is None
            or not self.is_leader
            or self._isr_state.in_flight
            or not isr_rules.may_join_isr(
                state.log_end_offset, self.high_watermark, self.leader_epoch_start_offset
            )
        ):
            return False
        return self._submit_isr(self._isr_state.expand(replica_id))

    def maybe_shrink_isr(self, now_ms: int, max_lag_ms: int) -> bool:
        """Remove the ISR followers not caught up within ``max_lag_ms`` (the periodic
        ISR expiration). True when the write was submitted."""
        lg = self.log
        if lg is None or not self.is_leader or self._isr_state.in_flight:
            return False
        out = isr_rules.out_of_sync_replicas(
            self.isr, self.local_broker_id, self.followers, lg.log_end_offset, now_ms, max_lag_ms
        )
        if not out:
            return False
        for replica in out:
            state = self.followers.get(replica)
            log.info(
                "%s: shrinking the ISR: follower %d caught up at %s (log end %s, leader's %d)",
                self.tp,
                replica,
                state.last_caught_up_ms if state else "never",
                state.log_end_offset if state else "unknown",
                lg.log_end_offset,
            )
        return self._submit_isr(self._isr_state.shrink(out))

    def follower_lags(self) -> dict[int, int]:
        """As leader: per follower, how many offsets it is behind the leader's log end
        (a follower that has not fetched since this leadership began lags by the whole
        log)."""
        lg = self.log
        if lg is None or not self.is_leader:
            return {}
        leo, start = lg.log_end_offset, lg.log_start_offset
        return {
            replica: leo - (state.log_end_offset if state.log_end_offset >= 0 else start)
            for replica, state in self.followers.items()
        }

    def _submit_isr(self, proposed: IsrState) -> bool:
        """Make ``proposed`` (a pending change) current and write it."""
        writer, pending = self._isr_writer, proposed.pending
        if writer is None or pending is None:
            return False
        self._isr_state = proposed
        state = LeaderAndIsr(
            self.local_broker_id, self.leader_epoch, pending.proposed, self.partition_epoch
        )

        def done(result: IsrWriteResult) -> None:
            self._isr_written(pending, result)

        writer.submit(self.tp, state, self.controller_epoch, done)
        return True

    def _isr_written(self, pending: PendingIsrChange, result: IsrWriteResult) -> None:
        """The write of ``pending`` ended (on the loop). It is applied only while it is
        still the change in flight: a LeaderAndIsr since then set the state itself."""
        current = self._isr_state.pending is pending
        if result.outcome is IsrWriteOutcome.WRITTEN:
            if current:
                log.info(
                    "%s: ISR %s -> %s (partition epoch %d)",
                    self.tp,
                    list(self.isr),
                    list(pending.proposed),
                    result.zk_version,
                )
                self._isr_state = IsrState(pending.proposed)
                self.partition_epoch = result.zk_version
                self.maybe_increment_high_watermark()
            if self._on_isr_change is not None:  # ZooKeeper changed either way
                self._on_isr_change(self, pending.kind)
            return
        if not current:
            return
        self._isr_state = IsrState(self.isr)
        if result.outcome is IsrWriteOutcome.CONFLICT:
            log.info(
                "%s: ISR change to %s not written: the partition state is no longer at "
                "zkVersion %d (the controller's LeaderAndIsr will follow)",
                self.tp,
                list(pending.proposed),
                self.partition_epoch,
            )
        else:
            log.warning("%s: ISR change to %s failed; will retry", self.tp, list(pending.proposed))

    # -- DeleteRecords (leader) ----------------------------------------------------------

    def delete_records_on_leader(self, requested_offset: int) -> int:
        """Move the leader's log start up to ``requested_offset`` (-1: the high
        watermark) by the rules of :mod:`broker.delete_records`; returns the offset the
        log start must reach on every live replica. Raises PartitionError (role, policy,
        range) or StorageError (disk)."""
        lg = self._leader_log(NO_LEADER_EPOCH)
        try:
            offset = delete_records.deletion_offset(
                self.tp.topic,
                requested_offset,
                high_watermark=lg.high_watermark,
                deletes=lg.config.deletes,
            )
        except delete_records.DeletionRefused as exc:
            raise PartitionError(exc.error_code, f"{self.tp}: {exc}") from None
        lg.increment_log_start_offset(offset)
        return offset

    def low_watermark(self, is_alive: Callable[[int], bool]) -> int:
        """As leader: the smallest log start over this replica and the followers on live
        brokers (``is_alive(broker_id)``); NOT_LEADER_OR_FOLLOWER otherwise."""
        lg = self._leader_log(NO_LEADER_EPOCH)
        starts = {replica: state.log_start_offset for replica, state in self.followers.items()}
        return delete_records.low_watermark(lg.log_start_offset, starts, is_alive)

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
        OFFSET_OUT_OF_RANGE outside [log start, log end].

        A fetch offset already at the end its reader may see (the log end, or the high
        watermark for a consumer) asks the log nothing: it is how a caught-up follower
        fetches, once per append."""
        lg = self._leader_log(current_leader_epoch)
        hw, leo, start = lg.high_watermark, lg.log_end_offset, lg.log_start_offset
        if fetch_offset < start or fetch_offset > leo:
            raise PartitionError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"{self.tp}: fetch offset {fetch_offset} is outside [{start}, {leo}]",
            )
        if fetch_offset == leo or (up_to_high_watermark and fetch_offset >= hw):
            return LogReadResult(None, hw, self.last_stable_offset, start, leo)
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
