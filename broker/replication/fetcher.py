"""ReplicaFetcher: one asyncio task that copies a leader's partitions into local logs.

Kafka's ReplicaFetcherThread (over AbstractFetcherThread), on the event loop. A fetcher
serves the partitions that one source broker leads and that the manager's hash gave to
it (:mod:`broker.replication.manager`), over one connection to that broker's
inter-broker listener (client id ``broker-<id>-fetcher-<n>``). Each turn of its loop:

1. partitions in TRUNCATING (just added for a new leader or epoch): one
   OffsetForLeaderEpoch request for all of them, each answer applied by
   :func:`broker.replication.truncation.decide_truncation`, until every one agrees
   with the leader (a follower with no epochs truncates to its high watermark without
   asking);
2. partitions in FETCHING: one Fetch for all of them (``replica_id`` = this broker,
   each from its log end with the epoch it follows), each answer applied: records
   appended with the leader's offsets and epochs, then the high watermark (the
   leader's, capped at the local log end) and the log start offset follow the leader's.
   From Fetch v7 in an incremental fetch session (:mod:`.fetch_session`): requests name
   only moved partitions, answers carry only those with news;
3. nothing ready: wait for a partition to be added or a backoff to end.

Replication throttle, follower side (:mod:`broker.replication.throttle`): step 2 leaves
out the partitions the follower throttle holds back (throttled here, behind the
leader's high watermark, the quota exceeded); when that is all of them, the fetcher
waits ``replica.fetch.backoff.ms`` and looks again. The bytes appended for throttled
partitions count against the quota.

A fetcher under load runs step 2 once for every batch its leader appends, so that turn
is kept lean and in proportion to what moved, not to the partitions followed: the
positions to fetch are kept by :mod:`.fetch_positions`, which looks again only at the
partitions touched since the last turn, and an incremental session request compares only
those. Sessionless (before v7), the Fetch is encoded once per partition list and only
its offsets are patched per send (:mod:`broker.replication.fetch_request`), the response is read for
the five fields a follower uses (:mod:`broker.replication.fetch_response`), each
partition's batches are cut to whole ones and checked in one pass
(:func:`protocol.records.validation.validate_fetched_records`) and applied with one role
check (:meth:`Partition.apply_fetched`), and a partition that fetched as expected keeps
its state object (no table lookup).

Errors, per partition (Kafka's handling): FENCED_LEADER_EPOCH pauses the partition
until the next LeaderAndIsr adds it again; NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH
and the rest back off ``replica.fetch.backoff.ms`` (the leader may simply not have
applied its own LeaderAndIsr yet, and this broker will get no further one to wake a
paused partition); OFFSET_OUT_OF_RANGE asks the leader for its log end and start
(ListOffsets): a leader whose log ends below ours had an unclean election, so we
truncate to its end; a leader whose log starts above our end deleted what we lack, so we
empty the log and start at its start. A lost connection or a request timeout backs off
every partition and reconnects.

Consistency with LeaderAndIsr: the ReplicaManager adds and removes partitions on the
loop; a response applies to a partition only if it is still here in the state the
request was built from, and only if its log end is still the offset fetched from, so a
partition that changed role, epoch or log while the request was in flight is left alone.

Appends run on the loop (page-cache writes, like the leader's). Their cost is mostly the
per-batch check (CRC-32C, header): measured here, 1 MiB as one batch appends in about
8 ms, 1 MiB as a thousand small batches in about 34 ms. A response holds up to
``replica.fetch.response.max.bytes`` (10 MiB by default), so the loop is given a turn
after each MiB appended: client requests wait at most one partition's MiB, not a whole
response.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from broker.partition import Partition, PartitionError
from broker.replication import fetch_session
from broker.replication.fetch_positions import FetchPositions
from broker.replication.fetch_request import FetchLimits, FetchTemplate, session_fetch
from broker.replication.fetch_response import FetchedPartition, read_fetch_response
from broker.replication.fetch_state import (
    FetchEvent,
    PartitionFetchState,
    initial_state,
    transition,
)
from broker.replication.leader_offsets import leader_offset
from broker.replication.throttle import ReplicationThrottle
from broker.replication.truncation import (
    TruncationDecision,
    decide_truncation,
    truncation_without_epochs,
)
from client.connection import Connection, ConnectionConfig
from client.errors import ClientError, KafkaError
from client.security import ClientSecurity
from protocol import ApiKey, ErrorCode, error_name
from protocol.messages import OffsetForLeaderEpochRequest
from protocol.records.batch import InvalidBatch
from protocol.records.validation import validate_fetched_records
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TopicPartition
from storage import Log, RecordError, StorageError
from timer.clock import Clock

log = logging.getLogger(__name__)

V = TypeVar("V")

#: Give the loop a turn after this many bytes appended from one response.
YIELD_EVERY_BYTES = 1 << 20

#: Errors that pause a partition until the controller's next LeaderAndIsr for it.
FENCING_ERRORS = frozenset({ErrorCode.FENCED_LEADER_EPOCH})

#: What a change of the local log may raise: its role (PartitionError), its disk
#: (StorageError) or the leader's batches (RecordError, InvalidBatch).
_LOCAL_FAILURES = (PartitionError, StorageError, RecordError, InvalidBatch)


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """The follower settings (Kafka's replica.* keys) a fetcher uses."""

    broker_id: int
    #: how to connect to the leaders' inter-broker listener (protocol, TLS, SASL)
    security: ClientSecurity
    #: replica.fetch.max.bytes: per partition
    partition_max_bytes: int = 1048576
    #: replica.fetch.response.max.bytes: per request
    response_max_bytes: int = 10485760
    #: replica.fetch.wait.max.ms
    max_wait_ms: int = 500
    #: replica.fetch.min.bytes
    min_bytes: int = 1
    #: replica.fetch.backoff.ms
    backoff_ms: int = 1000
    #: replica.socket.timeout.ms: connect and request timeout
    socket_timeout_ms: int = 30000
    #: num.replica.fetchers: fetchers per source broker
    num_fetchers: int = 1


@dataclass(frozen=True, slots=True)
class LeaderEndpoint:
    """The source broker and the address of its inter-broker listener."""

    broker_id: int
    host: str
    port: int


Connect = Callable[[str, int, ConnectionConfig], Awaitable[Connection]]


async def open_connection(host: str, port: int, config: ConnectionConfig) -> Connection:
    return await Connection.open(host, port, config)


class ReplicaFetcher:
    """Fetcher ``fetcher_id`` for source broker ``leader``. ``start()`` it, add and remove
    partitions on the loop, ``await shutdown()``."""

    def __init__(
        self,
        fetcher_id: int,
        leader: LeaderEndpoint,
        config: FetcherConfig,
        clock: Clock,
        *,
        throttle: ReplicationThrottle,
        connect: Connect = open_connection,
    ) -> None:
        self.fetcher_id = fetcher_id
        self.throttle = throttle
        self.leader = leader
        self.config = config
        self.clock = clock
        self.client_id = f"broker-{config.broker_id}-fetcher-{fetcher_id}"
        self._connect = connect
        self._conn: Connection | None = None
        self._partitions: dict[TopicPartition, tuple[Partition, PartitionFetchState]] = {}
        #: per partition: the leader's high watermark last seen minus our log end
        self.lags: dict[TopicPartition, int] = {}
        #: the Fetch of the last turn, reused while the same partitions are fetched
        self._template: FetchTemplate | None = None
        #: the incremental fetch session with the leader (Fetch v7+)
        self._session = fetch_session.FollowerSession()
        #: the positions to fetch, kept up to date by touches
        self._positions = FetchPositions()
        self._limits = FetchLimits(
            replica_id=config.broker_id,
            max_wait_ms=config.max_wait_ms,
            min_bytes=config.min_bytes,
            max_bytes=config.response_max_bytes,
            partition_max_bytes=config.partition_max_bytes,
        )
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    def __repr__(self) -> str:
        return f"ReplicaFetcher({self.client_id} -> {self.leader.broker_id})"

    # -- partitions (called by the manager, on the loop) ----------------------------------

    @property
    def partition_count(self) -> int:
        return len(self._partitions)

    def states(self) -> dict[TopicPartition, PartitionFetchState]:
        return {tp: state for tp, (_, state) in self._partitions.items()}

    def add_partitions(self, entries: Mapping[TopicPartition, tuple[Partition, int]]) -> None:
        """Follow each ``(partition, leader_epoch)`` from TRUNCATING."""
        for tp, (partition, epoch) in entries.items():
            self._partitions[tp] = (partition, initial_state(self.leader.broker_id, epoch))
            self.lags.pop(tp, None)
            self._positions.touch(tp)
        self._wakeup.set()

    def adopt(self, tp: TopicPartition, partition: Partition, state: PartitionFetchState) -> None:
        """Take over a partition in the state another fetcher had it in."""
        self._partitions[tp] = (partition, state)
        self._positions.touch(tp)
        self._wakeup.set()

    def remove_partitions(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, tuple[Partition, PartitionFetchState]]:
        """Stop fetching ``tps``; returns what was here of them, with their states."""
        removed = {}
        for tp in tps:
            entry = self._partitions.pop(tp, None)
            self.lags.pop(tp, None)
            self._positions.touch(tp)
            if entry is not None:
                removed[tp] = entry
        return removed

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.client_id)

    def stop(self) -> asyncio.Task[None] | None:
        """Cancel the task and close the connection; returns the task to await. The
        loop also ends on a flag: closing the connection fails the request the task
        waits on, and asyncio.wait_for may hand that error in place of the cancellation."""
        self._stopped = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        self._close_connection()
        return task

    async def shutdown(self) -> None:
        task = self.stop()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _close_connection(self) -> None:
        self._session.reset()  # a new connection opens a new fetch session
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    async def _connection(self) -> Connection:
        if self._conn is None or self._conn.closed:
            timeout_s = self.config.socket_timeout_ms / 1000
            config = ConnectionConfig(
                client_id=self.client_id,
                connect_timeout_s=timeout_s,
                request_timeout_s=timeout_s,
                security=self.config.security,
            )
            self._conn = await self._connect(self.leader.host, self.leader.port, config)
        return self._conn

    # -- the loop -------------------------------------------------------------------------

    async def _run(self) -> None:
        log.info("%s: started, leader at %s:%d", self, self.leader.host, self.leader.port)
        while not self._stopped:
            try:
                await self._do_work()
            except asyncio.CancelledError:
                raise
            except ClientError as exc:
                if self._stopped:
                    return
                log.warning("%s: %s; backing off", self, exc)
                self._close_connection()
                self._back_off(list(self._partitions))
            except Exception:  # a fetcher never dies of one bad turn
                if self._stopped:
                    return
                log.exception("%s: unexpected error; backing off", self)
                self._close_connection()
                self._back_off(list(self._partitions))

    async def _do_work(self) -> None:
        self._wakeup.clear()
        now = self.clock.monotonic_ms()
        truncating = self._positions.refresh(self._partitions, now)
        if truncating:
            await self._truncate(truncating)
            return
        wanted = self._positions.wanted
        if wanted:
            held = self._held_back(wanted)
            if len(held) < len(wanted):
                await self._fetch(held)
                return
            # every partition waits for the quota: look again after the backoff
            await self._idle(now, self.config.backoff_ms)
            return
        await self._idle(now)

    def _held_back(self, tps: Iterable[TopicPartition]) -> set[TopicPartition]:
        """Of ``tps``, those the follower throttle holds back now."""
        return self.throttle.held_back(tps, self.lags)

    async def _idle(self, now: int, wait_ms: int | None = None) -> None:
        """Wait for a change, the first backed-off partition's deadline, or ``wait_ms``."""
        deadlines = [
            s.delayed_until_ms
            for _, s in self._partitions.values()
            if not s.is_ready(now) and s.delayed_until_ms > now
        ]
        if wait_ms is not None:
            deadlines.append(now + wait_ms)
        timeout_s = (min(deadlines) - now) / 1000 if deadlines else None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), timeout_s)

    # -- state changes --------------------------------------------------------------------

    def _current(
        self, tp: TopicPartition, sent: PartitionFetchState
    ) -> tuple[Partition, PartitionFetchState] | None:
        """The partition if it is still here in the state a request was built from (and
        the fetcher is not stopping: after shutdown the logs close)."""
        entry = self._partitions.get(tp)
        if entry is None or entry[1] is not sent or self._stopped:
            return None
        return entry

    def _move(self, tp: TopicPartition, event: FetchEvent) -> None:
        entry = self._partitions.get(tp)
        if entry is None:
            return
        partition, state = entry
        new = transition(
            state, event, now_ms=self.clock.monotonic_ms(), backoff_ms=self.config.backoff_ms
        )
        self._positions.touch(tp)
        if event is FetchEvent.FENCED:
            log.warning("%s: %s paused until the next LeaderAndIsr", self, tp)
        self._partitions[tp] = (partition, new)

    def _back_off(self, tps: list[TopicPartition]) -> None:
        now = self.clock.monotonic_ms()
        for tp in tps:
            if self._partitions[tp][1].is_ready(now):
                self._move(tp, FetchEvent.RETRIABLE_ERROR)

    def _on_error(self, tp: TopicPartition, error: int, what: str) -> None:
        log.info("%s: %s of %s failed: %s", self, what, tp, error_name(error))
        self._move(tp, FetchEvent.FENCED if error in FENCING_ERRORS else FetchEvent.RETRIABLE_ERROR)

    def _apply_local(self, tp: TopicPartition, change: Callable[[], object], what: str) -> bool:
        """Run a change of the local log; a failure pauses (disk, role) or backs off the
        partition. Returns whether it worked."""
        try:
            change()
        except _LOCAL_FAILURES as exc:
            self._on_local_failure(tp, exc, what)
            return False
        return True

    def _on_local_failure(self, tp: TopicPartition, exc: Exception, what: str) -> None:
        """A change of the local log failed: its role or its disk pause the partition,
        bad batches from the leader back it off (they may be fetched whole next time)."""
        if isinstance(exc, PartitionError):
            log.warning("%s: %s of %s: %s", self, what, tp, exc)
            self._move(tp, FetchEvent.FENCED)
        elif isinstance(exc, StorageError):
            log.error("%s: %s of %s failed on disk: %s", self, what, tp, exc)
            self._move(tp, FetchEvent.FENCED)
        else:
            log.warning("%s: %s of %s: %s", self, what, tp, exc)
            self._move(tp, FetchEvent.RETRIABLE_ERROR)

    # -- truncation (OffsetForLeaderEpoch) -------------------------------------------------

    async def _truncate(self, tps: list[TopicPartition]) -> None:
        asked: dict[TopicPartition, tuple[PartitionFetchState, int]] = {}
        for tp in tps:
            partition, state = self._partitions[tp]
            lg = _log(partition)
            latest = lg.epoch_cache.latest_epoch
            if latest < 0:
                self._apply_truncation(
                    tp, partition, truncation_without_epochs(lg.high_watermark, lg.log_end_offset)
                )
            else:
                asked[tp] = (state, latest)
        if not asked:
            return
        conn = await self._connection()
        body = OffsetForLeaderEpochRequest(
            replica_id=self.config.broker_id,
            topics=[
                OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=topic, partitions=parts)
                for topic, parts in _by_topic(
                    (
                        tp,
                        OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                            partition=tp.partition,
                            current_leader_epoch=state.leader_epoch,
                            leader_epoch=epoch,
                        ),
                    )
                    for tp, (state, epoch) in asked.items()
                ).items()
            ],
        )
        response = await conn.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, body)
        answered: set[TopicPartition] = set()
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.topic, p.partition)
                sent = asked.get(tp)
                entry = self._current(tp, sent[0]) if sent is not None else None
                if entry is None:
                    continue
                answered.add(tp)
                partition = entry[0]
                if p.error_code != ErrorCode.NONE:
                    self._on_error(tp, p.error_code, "OffsetForLeaderEpoch")
                    continue
                lg = _log(partition)
                follower_epoch, follower_end = lg.end_offset_for_epoch(p.leader_epoch)
                decision = decide_truncation(
                    leader_epoch=p.leader_epoch,
                    leader_end_offset=p.end_offset,
                    follower_epoch=follower_epoch,
                    follower_end_offset=follower_end,
                    log_end_offset=lg.log_end_offset,
                    high_watermark=lg.high_watermark,
                )
                log.info(
                    "%s: %s asked epoch %d, leader answered epoch %d end %d: truncating to %d%s",
                    self, tp, sent[1] if sent else -1, p.leader_epoch, p.end_offset,
                    decision.offset, "" if decision.complete else " (another round)",
                )  # fmt: skip
                self._apply_truncation(tp, partition, decision)
        for tp in set(asked) - answered:  # a leader that left a partition out
            if self._current(tp, asked[tp][0]) is not None:
                self._move(tp, FetchEvent.RETRIABLE_ERROR)

    def _apply_truncation(
        self, tp: TopicPartition, partition: Partition, decision: TruncationDecision
    ) -> None:
        if self._apply_local(tp, lambda: partition.truncate_to(decision.offset), "truncation"):
            event = FetchEvent.TRUNCATED if decision.complete else FetchEvent.TRUNCATION_INCOMPLETE
            self._move(tp, event)

    # -- fetching -------------------------------------------------------------------------

    async def _fetch(self, held: set[TopicPartition]) -> None:
        """One Fetch of the wanted partitions but those the throttle ``held`` back."""
        conn = self._conn
        if conn is None or conn.closed:  # (the open connection is taken without a coroutine)
            conn = await self._connection()
        version = conn.version(ApiKey.FETCH)
        wanted = self._positions.wanted
        positions = {tp: p for tp, p in wanted.items() if tp not in held} if held else wanted
        session_request: fetch_session.SessionRequest | None = None
        if version < fetch_session.SESSION_VERSION:
            # sessionless: the template of the last turn, its offsets patched
            template = self._template_for(list(positions), version)
            request = template.request([positions[tp][1:] for tp in template.partitions])
        else:
            changed = self._positions.take_changed()
            if held:  # held back partitions are left out (forgotten): compare them all
                session_request = r = self._session.build(positions)
                self._positions.mark_changed(held)
            else:
                session_request = r = self._session.build_changes(positions, changed)
            if r.forgotten or len(r.partitions) != len(positions):
                request = session_fetch(version, self.client_id, self._limits, r)
            else:  # every partition moved (a follower under load): the patched template
                template = self._template_for(list(positions), version)
                offsets = [positions[tp][1:] for tp in template.partitions]
                request = template.request(offsets, (r.session_id, r.epoch))
        c = self.config
        timeout_s = (c.socket_timeout_ms + c.max_wait_ms) / 1000
        response = await conn.request_prebuilt(
            request, timeout_s=timeout_s, decode=read_fetch_response
        )
        if session_request is not None:
            self._session.on_answer(session_request, response.error_code, response.session_id)
        if response.error_code in fetch_session.SESSION_ERRORS:
            log.info("%s: fetch session: %s", self, error_name(response.error_code))
            return  # the next turn opens a new session with a full fetch
        positions_now = self._positions
        if response.error_code != ErrorCode.NONE:
            log.warning("%s: fetch failed: %s", self, error_name(response.error_code))
            self._back_off(
                [
                    tp
                    for tp in positions
                    if tp in self._partitions and not positions_now.touched_since_refresh(tp)
                ]
            )
            return
        out_of_range: list[tuple[TopicPartition, PartitionFetchState]] = []
        since_yield = 0
        for topic in response.responses:
            for p in topic.partitions:
                # keyed by a plain tuple, which a TopicPartition equals: no object made
                key = (topic.topic, p.partition_index)
                asked = positions.get(key)  # type: ignore[call-overload]
                if asked is None or positions_now.touched_since_refresh(key) or self._stopped:
                    continue  # not asked, or removed, re-added or moved meanwhile
                entry = self._partitions.get(key)  # type: ignore[call-overload]
                if entry is None or _log(entry[0]).log_end_offset != asked[1]:
                    continue  # removed, re-added or truncated meanwhile
                partition, state = entry
                tp = partition.tp
                positions_now.touch(tp)  # its position moves, or it is read again
                if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    out_of_range.append((tp, state))
                elif p.error_code != ErrorCode.NONE:
                    self._on_error(tp, p.error_code, "fetch")
                else:
                    since_yield += self._apply_fetched(tp, partition, state, p)
                    if since_yield >= YIELD_EVERY_BYTES:
                        since_yield = 0
                        await asyncio.sleep(0)
        for tp, state in out_of_range:
            entry = self._current(tp, state)
            if entry is not None:
                await self._handle_out_of_range(tp, entry[0], state)

    def _template_for(self, tps: list[TopicPartition], version: int) -> FetchTemplate:
        """The Fetch for ``tps`` at their epochs: last turn's while nothing changed."""
        asked = [(tp, self._partitions[tp][1].leader_epoch) for tp in tps]
        template = self._template
        if template is None or template.version != version or template.asked != asked:
            template = FetchTemplate(version, self.client_id, self._limits, asked)
            self._template = template
        return template

    def _apply_fetched(
        self,
        tp: TopicPartition,
        partition: Partition,
        state: PartitionFetchState,
        p: FetchedPartition,
    ) -> int:
        """Append one partition's records and follow the leader's offsets; returns the
        bytes appended."""
        records = p.records
        try:
            data = validate_fetched_records(records) if records else None
            leo = partition.apply_fetched(data, p.high_watermark, p.log_start_offset)
        except _LOCAL_FAILURES as exc:
            self._on_local_failure(tp, exc, "append")
            return 0
        self.lags[tp] = max(0, p.high_watermark - leo)
        if data is not None and self.throttle.is_throttled(tp):
            self.throttle.record(len(data.buffer))
        # A fetched partition that was not delayed stays as it is (the table's
        # FETCHING --fetched--> FETCHING): only a backed-off one needs the transition.
        if state.delayed_until_ms:
            self._move(tp, FetchEvent.FETCHED)
        return len(data.buffer) if data is not None else 0

    async def _handle_out_of_range(
        self, tp: TopicPartition, partition: Partition, state: PartitionFetchState
    ) -> None:
        """Kafka's fetchOffsetAndTruncate: move our log into the leader's range."""
        try:
            leader_end = await self._list_offset(tp, state, LATEST_TIMESTAMP)
            leader_start = await self._list_offset(tp, state, EARLIEST_TIMESTAMP)
        except KafkaError as exc:
            if self._current(tp, state) is not None:
                self._on_error(tp, exc.error_code, "ListOffsets")
            return
        if self._current(tp, state) is None:
            return
        leo = _log(partition).log_end_offset
        if leader_end < leo:
            log.warning(
                "%s: %s: leader's log ends at %d, below ours at %d (an unclean leader "
                "election?): truncating to it", self, tp, leader_end, leo,
            )  # fmt: skip
            if self._apply_local(tp, lambda: partition.truncate_to(leader_end), "truncation"):
                self._move(tp, FetchEvent.OUT_OF_RANGE_RESOLVED)
        elif leader_start > leo:
            log.info(
                "%s: %s: leader's log starts at %d, above our end %d: starting there",
                self, tp, leader_start, leo,
            )  # fmt: skip
            if self._apply_local(
                tp, lambda: partition.truncate_fully_and_start_at(leader_start), "truncation"
            ):
                self._move(tp, FetchEvent.OUT_OF_RANGE_RESOLVED)
        else:  # in range again (the leader's log moved meanwhile): fetch after a backoff
            self._move(tp, FetchEvent.RETRIABLE_ERROR)

    async def _list_offset(
        self, tp: TopicPartition, state: PartitionFetchState, timestamp: int
    ) -> int:
        return await leader_offset(
            await self._connection(),
            tp,
            broker_id=self.config.broker_id,
            leader_epoch=state.leader_epoch,
            timestamp=timestamp,
            timeout_ms=self.config.socket_timeout_ms,
        )


def _log(partition: Partition) -> Log:
    lg = partition.log
    if lg is None:
        raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{partition.tp} has no log")
    return lg


def _by_topic(items: Iterable[tuple[TopicPartition, V]]) -> dict[str, list[V]]:
    """Group ``(TopicPartition, value)`` pairs by topic, in first-seen order."""
    grouped: dict[str, list[V]] = {}
    for tp, value in items:
        grouped.setdefault(tp.topic, []).append(value)
    return grouped
