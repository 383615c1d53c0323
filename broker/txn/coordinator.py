"""TransactionCoordinator: the transaction APIs over the store, the markers and the timers.

Each request is decided by broker.txn.rules on the metadata as it is, then carried out:
the transit written to ``__transaction_state`` (broker.txn.store, acks=all), the answer
given once it is acknowledged. A prepared transaction (PrepareCommit / PrepareAbort) has
its markers handed to the marker channel (broker.txn.markers); when every one is
acknowledged, CompleteCommit / CompleteAbort is written. EndTxn is answered as soon as
the Prepare record is written, as Kafka answers it: the outcome is decided then, and the
markers follow.

A producer's next transaction usually begins while the last one completes: its first
AddPartitionsToTxn / AddOffsetsToTxn arrives during the markers, which Kafka answers
CONCURRENT_TRANSACTIONS, and the client retries after a backoff (librdkafka and the Java
client: about 20 ms, often more than the markers take). Here such an add is **held**
instead (at most ``add_hold_ms``, then answered CONCURRENT_TRANSACTIONS as before, so every
client still sees a Kafka answer): the first one held is decided against the completed
state and its Ongoing record written in the completion's batch, after the
CompleteCommit/CompleteAbort record (one append and one replication wait for both, applied
in order once acknowledged: a reload replays them in that order); any other add held
meanwhile is decided again once the completion is written. Measured with one transaction
in flight (tests/bench/bench_transactions.py), this removes the backoff and one
``__transaction_state`` replication round from every transaction.

A transaction prepared on another broker, or before a restart, is resumed when its
partition loads here (``on_txns_loaded``: the markers are sent again; leaders accept a
marker twice). When the partition moves away its markers are dropped
(``on_txns_unloaded``): the new coordinator owns them. Two periodic tasks: aborting the
transactions past their timeout (``abort_timed_out``, every
``transaction.abort.timed.out.transaction.cleanup.interval.ms``) and removing ids idle
longer than ``transactional.id.expiration.ms`` (``expire_ids``).

Errors answered to clients are the rules' and the store's (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE); PRODUCER_FENCED is mapped per
version by the handlers (rules.fencing_error). Event-loop bound.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from broker.config import BrokerConfig
from broker.txn import rules
from broker.txn.markers import MarkerChannel, MarkerOutcome, PendingMarkers
from broker.txn.model import TxnMetadata, TxnTransit
from broker.txn.states import PREPARED, TxnState
from broker.txn.store import TransactionStateManager
from protocol.errors import ErrorCode, error_name
from protocol.values import TopicPartition
from timer.clock import Clock

log = logging.getLogger(__name__)

#: how often a CompleteCommit/CompleteAbort write is retried while the log is unavailable
_COMPLETE_RETRY_S = 0.1
_CONCURRENT = ErrorCode.CONCURRENT_TRANSACTIONS
#: how long an AddPartitionsToTxn / AddOffsetsToTxn is held while the producer's previous
#: transaction completes, before it is answered CONCURRENT_TRANSACTIONS (see the module doc)
ADD_HOLD_MS = 1000


@dataclass(eq=False)
class _HeldAdd:
    """An add waiting for the completion of its id's previous transaction."""

    transactional_id: str
    producer_id: int
    epoch: int
    partitions: frozenset[TopicPartition]
    #: the add's error once written with the completion; None: not written, decide again
    answer: asyncio.Future[int | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    #: the completion took it: its record is in the completion's write
    taken: bool = False


def _follow_up(
    meta: TxnMetadata, completion: TxnTransit, held: _HeldAdd, now_ms: int
) -> TxnTransit | None:
    """The transit of ``held`` as decided once ``completion`` is applied to ``meta``
    (None: the add writes nothing, or is refused)."""
    after = dataclasses.replace(meta, pending=None)
    after.complete(completion)
    decision = rules.add_partitions(after, held.producer_id, held.epoch, held.partitions, now_ms)
    return decision.transit if decision.error == ErrorCode.NONE else None


class ProducerIdSource(Protocol):
    async def generate_producer_id(self) -> int: ...


@dataclass(frozen=True, slots=True)
class TxnConfig:
    """The coordinator's settings, read once at startup."""

    max_timeout_ms: int
    id_expiration_ms: int
    abort_interval_ms: int
    expiry_interval_ms: int
    #: the longest an add is held for a completing transaction (ADD_HOLD_MS)
    add_hold_ms: int

    @staticmethod
    def from_broker(config: BrokerConfig) -> TxnConfig:
        return TxnConfig(
            max_timeout_ms=config.get_int("transaction.max.timeout.ms"),
            id_expiration_ms=config.get_int("transactional.id.expiration.ms"),
            abort_interval_ms=config.get_int(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms"
            ),
            expiry_interval_ms=config.get_int(
                "transaction.remove.expired.transaction.cleanup.interval.ms"
            ),
            add_hold_ms=ADD_HOLD_MS,
        )


@dataclass(frozen=True, slots=True)
class InitResult:
    error: int
    producer_id: int = -1
    producer_epoch: int = -1


class TransactionCoordinator:
    """See the module docstring. ``offsets_partition_of(group)``: the group's
    ``__consumer_offsets`` partition (AddOffsetsToTxn adds it); ``partition_exists``:
    whether the metadata cache knows a partition."""

    def __init__(
        self,
        store: TransactionStateManager,
        producer_ids: ProducerIdSource,
        markers: MarkerChannel,
        clock: Clock,
        config: TxnConfig,
        *,
        offsets_partition_of: Callable[[str], TopicPartition],
        partition_exists: Callable[[TopicPartition], bool],
        create_topic: Callable[[], Awaitable[int]],
    ) -> None:
        self.store = store
        self._producer_ids = producer_ids
        self.markers = markers
        self.clock = clock
        self.config = config
        self._offsets_partition_of = offsets_partition_of
        self._partition_exists = partition_exists
        self._create_topic = create_topic
        self._creating: asyncio.Task[object] | None = None
        self._tasks: set[asyncio.Task[object]] = set()
        #: transactional id -> resolved once its prepared transaction stops completing here
        self._completing: dict[str, asyncio.Future[None]] = {}
        #: transactional id -> the add held to be written with its completion
        self._held: dict[str, _HeldAdd] = {}
        self.completed = 0

    # -- InitProducerId -----------------------------------------------------------------

    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> InitResult:
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        error = self.store.coordinator_error(transactional_id)
        if error != ErrorCode.NONE:
            return InitResult(error)
        fresh: int | None = None
        if rules.needs_fresh_id(self.store.get(transactional_id)):
            try:
                fresh = await self._producer_ids.generate_producer_id()
            except Exception as exc:  # ZooKeeper away: the client retries
                log.warning("cannot hand out a producer id: %s", exc)
                return InitResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            error = self.store.coordinator_error(transactional_id)
            if error != ErrorCode.NONE:
                return InitResult(error)
        now = self.clock.time_ms()
        meta = self.store.get(transactional_id)
        decision = rules.init_producer_id(meta, transactional_id, timeout_ms, expected, fresh, now)
        if meta is None:
            transit = decision.transit
            assert transit is not None  # an unknown id always gets a transit
            meta = self.store.add(
                TxnMetadata(
                    transactional_id,
                    producer_id=transit.producer_id,
                    producer_epoch=-1,
                    timeout_ms=timeout_ms,
                    last_update_ms=now,
                )
            )
        if decision.transit is None:
            if decision.error != ErrorCode.NONE:
                return InitResult(decision.error)
            return InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)
        if decision.fence:
            log.info("%s: fencing epoch %d, aborting its open transaction",
                     transactional_id, meta.producer_epoch)  # fmt: skip
            error = await self._prepare(meta, decision.transit)
            return InitResult(error if error != ErrorCode.NONE else decision.error)
        error = await self.store.write(meta, decision.transit)
        if error != ErrorCode.NONE:
            return InitResult(error)
        return InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)

    # -- AddPartitionsToTxn, AddOffsetsToTxn ---------------------------------------------

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Collection[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """Per partition: UNKNOWN_TOPIC_OR_PARTITION for partitions the cluster does not
        have (the others OPERATION_NOT_ATTEMPTED), else the one outcome of the add."""
        unknown = {tp for tp in partitions if not self._partition_exists(tp)}
        if unknown:
            return {
                tp: (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    if tp in unknown
                    else ErrorCode.OPERATION_NOT_ATTEMPTED
                )
                for tp in partitions
            }
        error = await self._add(transactional_id, producer_id, epoch, partitions)
        return dict.fromkeys(partitions, error)

    async def add_offsets(
        self, transactional_id: str, producer_id: int, epoch: int, group_id: str
    ) -> int:
        tp = self._offsets_partition_of(group_id)
        return await self._add(transactional_id, producer_id, epoch, [tp])

    async def _add(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Collection[TopicPartition],
    ) -> int:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.add_hold_ms / 1000
        while True:
            error = self.store.coordinator_error(transactional_id)
            if error != ErrorCode.NONE:
                return error
            meta = self.store.get(transactional_id)
            decision = rules.add_partitions(
                meta, producer_id, epoch, partitions, self.clock.time_ms()
            )
            completing = self._completing.get(transactional_id)
            left = deadline - loop.time()
            if decision.error != _CONCURRENT or completing is None or left <= 0:
                break
            answer = await self._held_add(
                _HeldAdd(transactional_id, producer_id, epoch, frozenset(partitions)),
                completing,
                left,
            )
            if answer is not None:
                return answer
        if decision.transit is None or meta is None:
            return decision.error
        return await self.store.write(meta, decision.transit)

    async def _held_add(
        self, held: _HeldAdd, completing: asyncio.Future[None], left_s: float
    ) -> int | None:
        """Wait (at most ``left_s``) for the completion of the id's previous transaction.
        The first add held is written with the completion (its answer returned); any
        other one, or one the completion could not take, returns None: decide again."""
        tid = held.transactional_id
        if tid in self._held:
            await asyncio.wait([completing], timeout=left_s)
            return None
        self._held[tid] = held
        try:
            await asyncio.wait([held.answer], timeout=left_s)
        finally:
            if self._held.get(tid) is held:
                del self._held[tid]  # not taken: nothing of it is being written
        return await held.answer if held.taken else None

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Collection[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4 verify-only: nothing is written."""
        error = self.store.coordinator_error(transactional_id)
        if error != ErrorCode.NONE:
            return dict.fromkeys(partitions, error)
        meta = self.store.get(transactional_id)
        return dict(rules.verify_partitions(meta, producer_id, epoch, partitions))

    # -- EndTxn ---------------------------------------------------------------------------

    async def end_txn(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool
    ) -> int:
        error = self.store.coordinator_error(transactional_id)
        if error != ErrorCode.NONE:
            return error
        meta = self.store.get(transactional_id)
        decision = rules.end_txn(meta, producer_id, epoch, commit, self.clock.time_ms())
        if decision.transit is None or meta is None:
            return decision.error
        return await self._prepare(meta, decision.transit)

    # -- preparing and completing ---------------------------------------------------------

    async def _prepare(self, meta: TxnMetadata, transit: TxnTransit) -> int:
        """Write PrepareCommit/PrepareAbort, then send the markers in the background."""
        error = await self.store.write(meta, transit)
        if error == ErrorCode.NONE:
            partition = self.store.partition_for(meta.transactional_id)
            self._send_markers(meta, self.store.coordinator_epoch(partition))
        return error

    def _send_markers(self, meta: TxnMetadata, coordinator_epoch: int) -> None:
        markers = PendingMarkers(
            transactional_id=meta.transactional_id,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            commit=meta.state is TxnState.PREPARE_COMMIT,
            coordinator_epoch=coordinator_epoch,
            txn_partition=self.store.partition_for(meta.transactional_id),
            remaining=set(meta.partitions),
        )
        done = self.markers.add(markers)
        settled = asyncio.get_running_loop().create_future()
        self._completing[meta.transactional_id] = settled
        self._spawn(
            self._complete_after(meta, markers, done, settled),
            f"txn-complete-{meta.transactional_id}",
        )

    async def _complete_after(
        self,
        meta: TxnMetadata,
        markers: PendingMarkers,
        done: asyncio.Future[MarkerOutcome],
        settled: asyncio.Future[None],
    ) -> None:
        try:
            await self._complete(meta, markers, done)
        finally:
            tid = meta.transactional_id
            if not settled.done():
                settled.set_result(None)
            if self._completing.get(tid) is settled:
                del self._completing[tid]
            held = self._held.pop(tid, None)
            if held is not None:
                held.answer.set_result(None)  # not taken: it decides again

    async def _complete(
        self, meta: TxnMetadata, markers: PendingMarkers, done: asyncio.Future[MarkerOutcome]
    ) -> None:
        tid = meta.transactional_id
        outcome = await done
        if outcome is not MarkerOutcome.WRITTEN:
            log.info("%s: markers %s, not completing here", tid, outcome.value)
            return
        while True:
            current = self.store.get(tid)
            if (
                current is not meta
                or meta.state not in PREPARED
                or meta.producer_epoch != markers.producer_epoch
            ):
                return  # unloaded, or moved on meanwhile: not ours to complete
            if meta.pending is None:
                now = self.clock.time_ms()
                completion = rules.complete(meta, now)
                held = self._held.pop(tid, None)
                follow = None if held is None else _follow_up(meta, completion, held, now)
                if held is not None and follow is None:
                    held.answer.set_result(None)
                if follow is not None:
                    assert held is not None
                    held.taken = True
                    error: int = ErrorCode.COORDINATOR_NOT_AVAILABLE
                    try:
                        error = await self.store.write(meta, completion, follow)
                    finally:
                        held.answer.set_result(error)
                else:
                    error = await self.store.write(meta, completion)
                if error == ErrorCode.NONE:
                    self.completed += 1
                    return
                if error == ErrorCode.NOT_COORDINATOR:
                    # the partition moved, or was reloaded under a newer leader epoch:
                    # whoever loads it now resumes the markers and completes
                    log.info("%s: completion left to the partition's next load", tid)
                    return
                if error != ErrorCode.COORDINATOR_NOT_AVAILABLE:
                    log.warning("%s: writing the completion failed: %s", tid, error_name(error))
                    return
            await asyncio.sleep(_COMPLETE_RETRY_S)

    # -- loading --------------------------------------------------------------------------

    def on_txns_loaded(
        self, partition: int, coordinator_epoch: int, txns: Sequence[TxnMetadata]
    ) -> None:
        """Resume the markers of the transactions that were prepared, not completed."""
        for meta in txns:
            if meta.state in PREPARED:
                log.info("%s: resuming its %s markers", meta.transactional_id, meta.state.display)
                self._send_markers(meta, coordinator_epoch)

    def on_txns_unloaded(self, partition: int, txns: Sequence[TxnMetadata]) -> None:
        self.markers.cancel_partition(partition)

    # -- timeouts -------------------------------------------------------------------------

    async def abort_timed_out(self) -> int:
        """Abort (under a bumped epoch) every Ongoing transaction past its timeout."""
        now = self.clock.time_ms()
        aborts = [
            (meta, rules.timeout_abort(meta, now))
            for meta in self.store.all()
            if rules.timed_out(meta, now)
        ]
        for meta, _ in aborts:
            log.info("%s: aborting, past its timeout of %d ms", meta.transactional_id,
                     meta.timeout_ms)  # fmt: skip
        results = await asyncio.gather(*(self._prepare(m, t) for m, t in aborts))
        return sum(1 for error in results if error == ErrorCode.NONE)

    async def expire_ids(self) -> int:
        """Remove the ids idle longer than ``transactional.id.expiration.ms``."""
        now = self.clock.time_ms()
        gone = [m for m in self.store.all() if rules.expired(m, now, self.config.id_expiration_ms)]
        results = await asyncio.gather(*(self.store.remove(m) for m in gone))
        for meta in gone:
            meta.state = TxnState.DEAD
        return sum(1 for error in results if error == ErrorCode.NONE)

    # -- describing -----------------------------------------------------------------------

    def describe(self, transactional_id: str) -> tuple[int, TxnMetadata | None]:
        error = self.store.coordinator_error(transactional_id)
        if error != ErrorCode.NONE:
            return error, None
        meta = self.store.get(transactional_id)
        if meta is None:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
        return ErrorCode.NONE, meta

    def list(self, states: Iterable[TxnState], producer_ids: Iterable[int]) -> list[TxnMetadata]:
        """The ids here in one of ``states`` (all when empty) with one of the
        ``producer_ids`` (all when empty)."""
        wanted_states, wanted_ids = set(states), set(producer_ids)
        return [
            m
            for m in self.store.all()
            if (not wanted_states or m.state in wanted_states)
            and (not wanted_ids or m.producer_id in wanted_ids)
        ]

    def request_topic(self) -> None:
        """Create ``__transaction_state`` in the background unless a creation is under
        way (FindCoordinator answers COORDINATOR_NOT_AVAILABLE meanwhile)."""
        if self._creating is not None and not self._creating.done():
            return
        self._creating = self._spawn(self._create_topic_logged(), "create-transaction-topic")

    async def _create_topic_logged(self) -> None:
        try:
            await self._create_topic()
        except Exception as exc:  # ZooKeeper away: the next FindCoordinator tries again
            log.warning("creating the transaction topic failed: %s", exc)

    def states(self) -> dict[str, int]:
        """How many transactional ids are in each state, by state name (metrics)."""
        counts: dict[str, int] = {}
        for meta in self.store.all():
            counts[meta.state.display] = counts.get(meta.state.display, 0) + 1
        return counts

    # -- lifecycle ------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[object, None, None], name: str) -> asyncio.Task[object]:
        task: asyncio.Task[object] = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        await self.markers.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
