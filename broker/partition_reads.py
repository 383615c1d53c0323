"""The leader's reads of a partition: Fetch, ListOffsets and OffsetForLeaderEpoch.

A consumer reads below the high watermark (READ_COMMITTED below the last stable offset,
which stops at the first open transaction, and with the aborted transactions of the
region it returns listed for the consumer to drop), a follower to the log end. Every read
first passes the leader's epoch fencing and role check
(:meth:`~broker.partition_core.PartitionCore._leader_log`); ListOffsets and
OffsetForLeaderEpoch from the debugging replica id may also be served by a follower
(``require_leader=False``).

:meth:`LeaderReads.read` runs for every partition of every fetch, consumers' and
followers': a fetch offset already at the end its reader may see answers from the
offsets without asking the log, which is how a caught-up follower fetches.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from broker.legacy_offsets import capped_at_high_watermark, offset_points, offsets_before
from broker.partition_core import PartitionCore, PartitionError
from protocol.errors import ErrorCode
from protocol.values import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    NO_LEADER_EPOCH,
    READ_COMMITTED,
    READ_UNCOMMITTED,
)
from storage import FileRegion, Log, TimestampOffset
from storage.errors import OffsetOutOfRangeError
from storage.producer_state import ProducerStateEntry
from storage.txn_index import AbortedTransaction


@dataclass(slots=True)
class LogReadResult:
    """One partition's part of a fetch: the region to send (None: nothing to send) and
    the offsets the response reports.

    (Not frozen, though never changed after it is made: a frozen dataclass takes several
    times as long to construct, and one is made per partition of every fetch.)
    """

    region: FileRegion | None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int
    aborted_transactions: list[AbortedTransaction] | None = None


class LeaderReads(PartitionCore):
    """Reads served by the leader (and, for tools, by a follower)."""

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        current_leader_epoch: int = NO_LEADER_EPOCH,
        up_to_high_watermark: bool = True,
        min_one_message: bool = True,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> LogReadResult:
        """The region from ``fetch_offset``: consumers read below the high watermark
        (READ_COMMITTED below the LSO, with the aborted transactions of the region
        listed), replicas to the log end. OFFSET_OUT_OF_RANGE outside [log start, log
        end].

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
        committed = up_to_high_watermark and isolation_level == READ_COMMITTED
        if committed:
            return self._read_committed(lg, fetch_offset, max_bytes, min_one_message)
        if fetch_offset == leo or (up_to_high_watermark and fetch_offset >= hw):
            return LogReadResult(None, hw, self.last_stable_offset, start, leo)
        max_offset = hw if up_to_high_watermark else None
        try:
            region = lg.read(fetch_offset, max_bytes, max_offset, min_one_message)
        except OffsetOutOfRangeError as exc:  # retention moved the start meanwhile
            raise PartitionError(ErrorCode.OFFSET_OUT_OF_RANGE, str(exc)) from None
        return LogReadResult(region, hw, self.last_stable_offset, lg.log_start_offset, leo)

    def _read_committed(
        self, lg: Log, fetch_offset: int, max_bytes: int, min_one_message: bool
    ) -> LogReadResult:
        """A read_committed consumer's read: below the LSO, listing the aborted
        transactions with data in the region returned (none when it is empty)."""
        hw, leo, lso = lg.high_watermark, lg.log_end_offset, lg.last_stable_offset
        if fetch_offset >= lso:
            return LogReadResult(None, hw, lso, lg.log_start_offset, leo, [])
        try:
            region = lg.read(
                fetch_offset, max_bytes, lso, min_one_message, isolation_level=READ_COMMITTED
            )
            aborted = [] if region is None else lg.aborted_transactions(fetch_offset, region)
        except OffsetOutOfRangeError as exc:  # retention moved the start meanwhile
            raise PartitionError(ErrorCode.OFFSET_OUT_OF_RANGE, str(exc)) from None
        return LogReadResult(region, hw, lso, lg.log_start_offset, leo, aborted)

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

    def active_producers(self) -> list[ProducerStateEntry]:
        """DescribeProducers: this replica's producer state, one entry per producer id
        (a follower answers too: ``--broker-id`` asks a chosen replica, as in Kafka)."""
        lg = self._leader_log(NO_LEADER_EPOCH, require_leader=False)
        return list(lg.producer_state.producers.values())

    def in_transaction(self, producer_id: int, epoch: int) -> bool:
        """Whether the producer has a transaction open on this leader at ``epoch`` (a
        transactional batch of it then needs no KIP-890 question)."""
        lg = self._leader_log(NO_LEADER_EPOCH, require_leader=True)
        entry = lg.producer_state.producers.get(producer_id)
        return entry is not None and entry.epoch == epoch and entry.current_txn_first_offset >= 0

    def legacy_offsets_for_timestamp(
        self, timestamp: int, max_num_offsets: int, *, from_consumer: bool, require_leader: bool
    ) -> list[int]:
        """ListOffsets v0 (broker.legacy_offsets): segment boundaries before ``timestamp``,
        newest first; a consumer's capped at the high watermark."""
        lg = self._leader_log(NO_LEADER_EPOCH, require_leader)
        segments = [(s.base_offset, s.size, _modified_ms(s.fd)) for s in lg.segments]
        points = offset_points(
            segments, lg.log_start_offset, lg.log_end_offset, self._clock.time_ms()
        )
        offsets = offsets_before(points, timestamp, max_num_offsets)
        return capped_at_high_watermark(offsets, lg.high_watermark) if from_consumer else offsets

    def end_offset_for_epoch(
        self, leader_epoch: int, *, current_leader_epoch: int, require_leader: bool = True
    ) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= ``leader_epoch``, its end offset), or
        (-1, -1) when the cache knows none."""
        lg = self._leader_log(current_leader_epoch, require_leader)
        return lg.end_offset_for_epoch(leader_epoch)


def _modified_ms(fd: int) -> int:
    """A segment file's last modification time; 0 for a file gone meanwhile (as Java's
    File.lastModified answers)."""
    try:
        return os.fstat(fd).st_mtime_ns // 1_000_000
    except OSError:
        return 0
