"""The read side of the ReplicaManager: Fetch, ListOffsets and OffsetForLeaderEpoch.

:meth:`FetchReads.fetch_messages` reads every partition of a fetch and answers at once
when ``max_wait_ms`` is 0, when ``min_bytes`` are there, or on any error; otherwise the
fetch waits in a DelayedFetch in the fetch purgatory, which appends and high watermark
moves wake.

Replication, leader side: a fetch with a replica id >= 0 comes from a follower. After
reading it, the manager records the follower's position in the partition
(``Partition.update_follower_fetch_state``), which may add the follower to the ISR and
move the high watermark; a high watermark that moved completes the acks=all produces and
the consumers' fetches waiting on the partition. A follower reporting a higher log start
may complete a waiting DeleteRecords.

Replication throttle, leader side (``broker.replication.throttle``): a partition this
leader throttles is answered without records to a follower outside its ISR while the
leader's quota is exceeded, and every follower answer's bytes of throttled partitions
count against that quota.

:meth:`FetchReads.read_from_local_log` is the hot path of every fetch, and a DelayedFetch
runs it again for every waiting follower on every append: the byte limits are compared
inline, the table and flags are read once per fetch, and a completing read does not
record the follower's fetch again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from broker.delayed.fetch import (
    DelayedFetch,
    DelayedSessionFetch,
    FetchInfos,
    FetchParams,
    FetchPartitionResult,
    FetchResults,
    PartitionFetchInfo,
)
from broker.fetch_session_news import SessionKey
from broker.isr import FetchClock
from broker.partition import Partition, PartitionError
from broker.replica_table import ReplicaTable
from broker.replication.throttle import leader_should_throttle
from protocol.errors import ErrorCode
from protocol.values import NO_LEADER_EPOCH, READ_UNCOMMITTED, TopicPartition
from storage import StorageError, TimestampOffset

log = logging.getLogger(__name__)

#: A follower session's waiting fetch: its purgatory key, the partitions to measure and
#: answer (taking the marks when true), the partitions marked since the last look.
SessionWait = tuple[SessionKey, Callable[[bool], FetchInfos], Callable[[], FetchInfos]]

#: The replica ids of consumers, and of debugging tools (which may read from followers).
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2


class FetchReads(ReplicaTable):
    """Fetch reads (and the follower fetch bookkeeping), ListOffsets, OffsetForLeaderEpoch."""

    def fetch_messages(
        self,
        params: FetchParams,
        infos: FetchInfos,
        on_done: Callable[[FetchResults], None],
        session: SessionWait | None = None,
    ) -> None:
        """Read every partition; answer at once when ``max_wait_ms`` is 0, when
        ``min_bytes`` are there, or on any error; otherwise wait in a DelayedFetch.
        A follower session's fetch (``session``: its key, news and fresh marks, see
        ``broker.fetch_session_news``) waits under its session's key alone."""

        def done(results: FetchResults) -> None:
            self._count_bytes_out(results)
            if params.is_from_follower:
                self._record_throttled(results)
            on_done(results)

        results = self.read_from_local_log(params, infos)
        readable = 0
        regions = False
        for _, r in results:
            if r.error_code:
                done(results)
                return
            if r.records is not None:
                readable += r.records.length
                regions = True
        # (a follower session's round that read nothing still waits: its session's
        # other partitions may change meanwhile)
        if (
            params.max_wait_ms <= 0
            or (not infos and session is None)
            or readable >= params.min_bytes
        ):
            done(results)
            return

        def held_back(tp: TopicPartition, partition: Partition) -> bool:
            return self._leader_holds_back(params.replica_id, tp, partition)

        operation: DelayedFetch
        keys: list[object]
        if session is None:
            operation = DelayedFetch(
                params,
                infos,
                self._partitions.get,
                self._read_on_completion,
                done,
                held_back=held_back,
                unchanged=None if regions else results,
            )
            keys = [tp for tp, _ in infos]
        else:
            operation = DelayedSessionFetch(
                params,
                infos,
                self._partitions.get,
                self._read_on_completion,
                done,
                held_back=held_back,
                unchanged=None if regions else results,
                news=session[1],
                fresh=session[2],
            )
            keys = [session[0]]
        if readable:
            self.fetch_purgatory.try_complete_else_watch(operation, keys)
        else:
            # Every fetch offset is at the end its fetcher may read to, checked by the
            # read just made: the DelayedFetch's own test would find nothing either
            # (the usual case, a caught-up follower's fetch, parks without repeating it).
            self.fetch_purgatory.watch(operation, keys)

    def _read_on_completion(self, params: FetchParams, infos: FetchInfos) -> FetchResults:
        """A DelayedFetch's answer: a fresh read, without recording the follower's fetch
        again (its position was recorded when the fetch arrived and has not moved; as in
        Kafka, whose DelayedFetch reads without updating the follower's state). This read
        runs for every waiting follower on every append, so it is kept lean."""
        return self.read_from_local_log(params, infos, record_follower_fetch=False)

    def read_from_local_log(
        self, params: FetchParams, infos: FetchInfos, *, record_follower_fetch: bool = True
    ) -> FetchResults:
        """Kafka's readFromLocalLog: partitions in request order share ``max_bytes``;
        until one returns data, a partition may exceed its limits by its first batch
        (so a batch larger than every limit is still delivered). A follower's read
        records its fetch (position, ISR, high watermark) unless
        ``record_follower_fetch`` is false."""
        limit = params.max_bytes
        min_one_message = True
        from_follower = params.is_from_follower
        isolation_level = READ_UNCOMMITTED if from_follower else params.isolation_level
        partitions = self._partitions
        results: FetchResults = []
        #: partitions whose high watermark this follower's fetch moved: what waits on
        #: them is checked after the read (a produce of many of them settles at once)
        moved: list[TopicPartition] = []
        for tp, info in infos:
            # (the limits are compared inline: this loop runs for every fetch)
            max_bytes = info.partition_max_bytes
            try:
                partition = partitions.get(tp) or self._leader_or_error(tp)
                read = partition.read(
                    info.fetch_offset,
                    max_bytes if max_bytes < limit else limit,
                    current_leader_epoch=info.current_leader_epoch,
                    up_to_high_watermark=not from_follower,
                    min_one_message=min_one_message,
                    isolation_level=isolation_level,
                )
                high_watermark = read.high_watermark
                last_stable_offset = read.last_stable_offset
                if from_follower:
                    # after the read's role and epoch checks, as Kafka orders them, the
                    # replica must be a follower (recording the fetch checks that first)
                    if record_follower_fetch:
                        self._follower_fetched(
                            partition, params.replica_id, info, read.log_end_offset, moved
                        )
                        # the follower learns a high watermark its fetch may just have moved
                        high_watermark = partition.high_watermark
                        last_stable_offset = partition.last_stable_offset
                    else:
                        partition.check_follower(params.replica_id)
            except PartitionError as exc:
                self._count_failed_read(tp)
                results.append((tp, FetchPartitionResult(exc.error_code)))
                continue
            except StorageError as exc:
                log.error("%s: read failed: %s", tp, exc)
                self._count_failed_read(tp)
                results.append((tp, FetchPartitionResult(ErrorCode.KAFKA_STORAGE_ERROR)))
                continue
            region = read.region
            if (
                from_follower
                and region is not None
                and self._leader_holds_back(params.replica_id, tp, partition)
            ):
                region = None  # the follower asks again; this answer carries its offsets
            if region is not None:
                size = region.length
                if size:
                    min_one_message = False
                    limit = limit - size if size < limit else 0
            results.append(
                (
                    tp,
                    FetchPartitionResult(
                        ErrorCode.NONE,
                        high_watermark,
                        last_stable_offset,
                        read.log_start_offset,
                        region,
                        read.aborted_transactions,
                    ),
                )
            )
        for tp in moved:
            self._complete_delayed(tp)
        return results

    def _follower_fetched(
        self,
        partition: Partition,
        replica_id: int,
        info: PartitionFetchInfo,
        leader_end_offset: int,
        moved: list[TopicPartition],
    ) -> None:
        """Record a follower's successful fetch (Kafka's updateFollowerFetchState): its
        position, then whether it joins the ISR and the high watermark moves (the
        partition is then added to ``moved``, for the caller to complete what waits on
        it). A follower reporting a higher log start may complete a waiting
        DeleteRecords. A replica id that is not a follower raises PartitionError before
        anything is recorded."""
        before = partition.update_follower_fetch_state(
            replica_id,
            fetch_offset=info.fetch_offset,
            follower_log_start_offset=info.log_start_offset,
            leader_end_offset=leader_end_offset,
            now_ms=self.clock.monotonic_ms(),
        )
        partition.maybe_expand_isr(replica_id)
        if before.log_end_offset == info.fetch_offset:
            # The follower did not move: the high watermark (the least log end of the
            # ISR) cannot have either. A caught-up follower of an idle partition fetches
            # like this on every round, for every partition it follows.
            if before.log_start_offset != info.log_start_offset:
                self.delete_records_purgatory.check_and_complete(partition.tp)
            return
        if partition.maybe_increment_high_watermark():
            moved.append(partition.tp)
        elif before.log_start_offset != info.log_start_offset:
            self.delete_records_purgatory.check_and_complete(partition.tp)

    def settle_follower_reads(
        self, replica_id: int, results: FetchResults, clock: FetchClock
    ) -> list[TopicPartition]:
        """After a follower session's answer: the partitions of ``results`` its next round
        must read again (an error, records sent, the follower behind the log end or out
        of the ISR); the others' follower states are linked to the session's ``clock``
        (``broker.fetch_session_news``)."""
        partitions = self._partitions
        again: list[TopicPartition] = []
        for tp, r in results:
            partition = partitions.get(tp)
            if r.error_code:
                # a failed read recorded no fetch: the session's next ones must not count
                if partition is not None:
                    partition.unlink_follower(replica_id)
                again.append(tp)
            elif (r.records is not None and r.records.length) or (
                partition is None or not partition.link_follower(replica_id, clock)
            ):
                again.append(tp)
        return again

    def unlink_followers(self, replica_id: int, tps: Iterable[TopicPartition]) -> None:
        """A follower session forgot ``tps`` (or failed to read them): their follower
        states stop counting the session's fetches."""
        partitions = self._partitions
        for tp in tps:
            partition = partitions.get(tp)
            if partition is not None:
                partition.unlink_follower(replica_id)

    def _leader_holds_back(self, replica_id: int, tp: TopicPartition, partition: Partition) -> bool:
        """Kafka's shouldLeaderThrottle: ``tp`` is throttled here, follower ``replica_id``
        is not in its ISR, and the leader's quota is exceeded."""
        throttle = self.leader_throttle
        if not throttle.is_throttled(tp):  # (the cheap test first: the usual answer)
            return False
        return leader_should_throttle(True, replica_id in partition.isr, throttle.quota_exceeded())

    def _record_throttled(self, results: FetchResults) -> None:
        """Count the bytes a follower's answer carries for throttled partitions against
        the leader's quota (in-sync followers' included, as Kafka counts them)."""
        throttle = self.leader_throttle
        size = 0
        for tp, result in results:
            if result.records is not None and throttle.is_throttled(tp):
                size += result.records.length
        throttle.record(size)

    # failed reads and bytes sent, per topic (Kafka's FailedFetchRequestsPerSec, BytesOutPerSec)

    def _count_failed_read(self, tp: TopicPartition) -> None:
        if self.metrics is not None:
            self.metrics.failed_fetch_requests.labels(topic=tp.topic).inc()

    def _count_bytes_out(self, results: FetchResults) -> None:
        if self.metrics is None:
            return
        for tp, result in results:
            if result.records is not None:
                self.metrics.topic_bytes_out.labels(topic=tp.topic).inc(result.records.length)

    def fetch_offset_for_timestamp(
        self,
        tp: TopicPartition,
        timestamp: int,
        *,
        current_leader_epoch: int = NO_LEADER_EPOCH,
        isolation_level: int = 0,
        replica_id: int = CONSUMER_REPLICA_ID,
    ) -> TimestampOffset | None:
        """ListOffsets for one partition; raises PartitionError (or StorageError).
        Consumers (replica id -1) are limited by their isolation level; others see to
        the log end, and only the debugging id (-2) may ask a follower."""
        partition = self._leader_or_error(tp)
        return partition.fetch_offset_for_timestamp(
            timestamp,
            current_leader_epoch=current_leader_epoch,
            isolation_level=isolation_level if replica_id == CONSUMER_REPLICA_ID else None,
            require_leader=replica_id != DEBUGGING_REPLICA_ID,
        )

    def legacy_offsets_for_timestamp(
        self, tp: TopicPartition, timestamp: int, max_num_offsets: int, *, replica_id: int
    ) -> list[int]:
        """ListOffsets v0 for one partition: up to ``max_num_offsets`` offsets, newest
        first (broker.legacy_offsets); raises PartitionError (or StorageError)."""
        partition = self._leader_or_error(tp)
        return partition.legacy_offsets_for_timestamp(
            timestamp,
            max_num_offsets,
            from_consumer=replica_id == CONSUMER_REPLICA_ID,
            require_leader=replica_id != DEBUGGING_REPLICA_ID,
        )

    def last_offset_for_leader_epoch(
        self, tp: TopicPartition, leader_epoch: int, *, current_leader_epoch: int, replica_id: int
    ) -> tuple[int, int]:
        """OffsetForLeaderEpoch for one partition: (epoch, end offset). The debugging
        replica id (-2) may ask a follower; everyone else asks the leader."""
        partition = self._leader_or_error(tp)
        return partition.end_offset_for_epoch(
            leader_epoch,
            current_leader_epoch=current_leader_epoch,
            require_leader=replica_id != DEBUGGING_REPLICA_ID,
        )
