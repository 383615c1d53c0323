"""TransactionStateManager: the partitions of ``__transaction_state`` led here.

The store half of the transaction coordinator (Kafka's TransactionStateManager). It
knows which partition a transactional id lives in (broker.txn.topic), holds the metadata
of the ids of the partitions this broker leads, writes their records (broker.txn.records)
with acks=all, and rebuilds them from the log when it becomes a partition's leader.

Partitions move as in broker.group.manager, by the machinery they share
(broker.partition_loads: leader epochs, load tasks, the log's replay)::

    (not ours) --LeaderAndIsr: leader--> loading --log replayed--> owned
        ^                                   |                         |
        +------ follower, or deleted <------+-------------------------+

``coordinator_error`` answers NONE for an owned partition's ids,
COORDINATOR_LOAD_IN_PROGRESS while loading, NOT_COORDINATOR otherwise. A change older
than the leader epoch already seen for the partition is ignored. The leader epoch of the
partition is the **coordinator epoch** the markers carry: a leader appending a marker
refuses one older than the last it saw for the producer (TRANSACTION_COORDINATOR_FENCED),
so a coordinator that lost its partition cannot complete a transaction behind the new
one's back. For the same reason a write is only applied if the partition is still owned
under the epoch it was made in.

A newer leader epoch for a partition already led (or loading) here unloads it and loads
it again, as Kafka does on every election. The controller bumps the epoch when it takes
a dead follower out of the ISR, and this broker may have lost the partition and won it
back without hearing of it: either way a write in flight under the old epoch is refused
(NOT_COORDINATOR) even though it was appended. The reload reads it back, and the
prepared transactions resume their markers under the new epoch; keeping the old state
instead left a transaction whose completion was refused so in PrepareCommit, every add
and InitProducerId of its id answered CONCURRENT_TRANSACTIONS, until the partition moved.

The ``TxnLoadListener`` (the coordinator) hears of both moves: a load hands it the ids
in PrepareCommit/PrepareAbort, whose markers are still owed; an unload makes it drop the
markers it was sending for the partition.

Not safe across threads: everything runs on the event loop but the decoding of bytes
already read, done in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from broker.blocking import RunBlocking
from broker.config import BrokerConfig
from broker.delayed.produce import ProducePartitionResult
from broker.group.manager import Replicas
from broker.group.records import build_records
from broker.partition_loads import LeaderEpochs, PartitionLoads, replay_log, route_leadership
from broker.txn.model import TxnMetadata, TxnTransit
from broker.txn.records import read_key, read_value, txn_key, txn_value
from broker.txn.topic import TRANSACTION_TOPIC, txn_partition_for
from protocol.errors import ErrorCode, ProtocolError
from protocol.records.batch import InvalidBatch, iter_batches
from protocol.records.builder import read_batch
from protocol.records.validation import validate_records
from protocol.values import TopicPartition
from timer.clock import Clock

log = logging.getLogger(__name__)

Buffer = bytes | bytearray | memoryview

_NO_ANSWER = ProducePartitionResult(ErrorCode.UNKNOWN_SERVER_ERROR)


def append_error(error: int) -> int:
    """What a client is told when a write to ``__transaction_state`` answered ``error``."""
    if error == ErrorCode.NONE:
        return ErrorCode.NONE
    if error in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.UNKNOWN_SERVER_ERROR


@dataclass(frozen=True, slots=True)
class TxnStoreConfig:
    """The store's settings, read once at startup (no defaults: see ``from_broker``)."""

    num_partitions: int
    required_acks: int
    write_timeout_ms: int
    load_buffer_size: int

    @staticmethod
    def from_broker(config: BrokerConfig) -> TxnStoreConfig:
        return TxnStoreConfig(
            num_partitions=config.get_int("transaction.state.log.num.partitions"),
            required_acks=-1,
            write_timeout_ms=config.get_int("request.timeout.ms"),
            load_buffer_size=config.get_int("transaction.state.log.load.buffer.size"),
        )


class TxnLoadListener(Protocol):
    def on_txns_loaded(
        self, partition: int, coordinator_epoch: int, txns: Sequence[TxnMetadata]
    ) -> None: ...

    def on_txns_unloaded(self, partition: int, txns: Sequence[TxnMetadata]) -> None: ...


class TxnLogLoader:
    """Replays one partition's records (pure): the last record of an id wins, a
    tombstone removes it, an unreadable record is skipped (counted). A
    broker.partition_loads Replayer."""

    def __init__(self, start_offset: int) -> None:
        self.next_offset = start_offset
        self.txns: dict[str, TxnMetadata] = {}
        self.skipped = 0

    def add_batches(self, data: Buffer) -> int:
        for pos, header in iter_batches(data):
            if header.last_offset < self.next_offset:
                continue
            if not header.is_control:
                _, records = read_batch(data, pos)
                for record in records:
                    if header.base_offset + record.offset_delta >= self.next_offset:
                        self.add_record(record.key, record.value)
            self.next_offset = header.next_offset
        return self.next_offset

    def add_record(self, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            self.skipped += 1
            return
        try:
            tid = read_key(key)
            if value is None:
                self.txns.pop(tid, None)
            else:
                self.txns[tid] = read_value(tid, value)
        except (ProtocolError, ValueError, InvalidBatch) as exc:
            log.warning("skipping an unreadable %s record: %s", TRANSACTION_TOPIC, exc)
            self.skipped += 1


class TransactionStateManager:
    """See the module docstring."""

    def __init__(
        self,
        replicas: Replicas,
        clock: Clock,
        config: TxnStoreConfig,
        *,
        topic_partition_count: Callable[[], int | None],
        run_in_thread: RunBlocking,
    ) -> None:
        self._replicas = replicas
        self.clock = clock
        self.config = config
        self._topic_partition_count = topic_partition_count
        self._run_in_thread = run_in_thread
        self.listener: TxnLoadListener | None = None
        #: partition -> transactional id -> metadata, for the partitions owned here
        self._txns: dict[int, dict[str, TxnMetadata]] = {}
        self._loading = PartitionLoads(TRANSACTION_TOPIC, self._read_partition, self._install)
        self._epochs = LeaderEpochs(TRANSACTION_TOPIC)

    # -- locating ---------------------------------------------------------------------------

    def partition_count(self) -> int:
        return self._topic_partition_count() or self.config.num_partitions

    def partition_for(self, transactional_id: str) -> int:
        return txn_partition_for(transactional_id, self.partition_count())

    def coordinator_error(self, transactional_id: str) -> int:
        return self._loading.coordinator_error(self.partition_for(transactional_id), self._txns)

    def coordinator_epoch(self, partition: int) -> int:
        return self._epochs.get(partition)

    @property
    def owned_partitions(self) -> frozenset[int]:
        return frozenset(self._txns)

    @property
    def loading_partitions(self) -> frozenset[int]:
        return self._loading.partitions

    async def wait_loaded(self, partition: int) -> None:
        await self._loading.wait(partition)

    # -- the metadata -----------------------------------------------------------------------

    def get(self, transactional_id: str) -> TxnMetadata | None:
        owned = self._txns.get(self.partition_for(transactional_id))
        return None if owned is None else owned.get(transactional_id)

    def add(self, meta: TxnMetadata) -> TxnMetadata:
        """Register ``meta`` unless its id is there (the one there is returned)."""
        owned = self._txns[self.partition_for(meta.transactional_id)]
        return owned.setdefault(meta.transactional_id, meta)

    def all(self) -> Iterator[TxnMetadata]:
        for owned in list(self._txns.values()):
            yield from list(owned.values())

    # -- writing ----------------------------------------------------------------------------

    async def write(self, meta: TxnMetadata, transit: TxnTransit, *then: TxnTransit) -> int:
        """Write ``transit`` (marked pending on ``meta``) with acks=all; apply it once
        acknowledged, still under the partition's epoch of the start. The client's error.
        With ``then``: the transits that follow it, one record each in the same batch (one
        append, one replication wait, all or none), applied in order."""
        tid = meta.transactional_id
        partition = self.partition_for(tid)
        epoch = self.coordinator_epoch(partition)
        last = meta.prepare(transit, *then)
        chain = (transit, *then)
        try:
            result = await self._append(partition, [(txn_key(tid), txn_value(t)) for t in chain])
        except BaseException:
            meta.abandon(last)
            raise
        error = append_error(result.error_code)
        if error == ErrorCode.NONE and (
            partition not in self._txns or self.coordinator_epoch(partition) != epoch
        ):
            error = ErrorCode.NOT_COORDINATOR  # the partition moved while we wrote
        if error == ErrorCode.NONE:
            for step in chain:
                meta.complete(step)
        else:
            meta.abandon(last)
        return error

    async def remove(self, meta: TxnMetadata) -> int:
        """Tombstone an expired id and forget it here (it is Dead)."""
        tid = meta.transactional_id
        partition = self.partition_for(tid)
        owned = self._txns.get(partition)
        if owned is None:
            return ErrorCode.NOT_COORDINATOR
        if owned.get(tid) is meta:
            del owned[tid]
        result = await self._append(partition, [(txn_key(tid), None)])
        return append_error(result.error_code)

    async def _append(
        self, partition: int, records: Sequence[tuple[bytes, bytes | None]]
    ) -> ProducePartitionResult:
        tp = TopicPartition(TRANSACTION_TOPIC, partition)
        batch = build_records(records, self.clock.time_ms())
        future: asyncio.Future[ProducePartitionResult] = asyncio.get_running_loop().create_future()

        def done(results: dict[TopicPartition, ProducePartitionResult]) -> None:
            if not future.done():
                future.set_result(results.get(tp, _NO_ANSWER))

        self._replicas.append_records(
            {tp: validate_records(batch, from_client=True)},
            required_acks=self.config.required_acks,
            timeout_ms=self.config.write_timeout_ms,
            on_done=done,
            internal_topics_allowed=True,
        )
        return await future

    # -- leadership -------------------------------------------------------------------------

    def on_leadership_change(
        self, leaders: Mapping[TopicPartition, int], followers: Mapping[TopicPartition, int]
    ) -> None:
        """The ReplicaManager's callback (others' topics ignored)."""
        route_leadership(
            TRANSACTION_TOPIC, leaders, followers, self.on_become_leader, self.on_resign
        )

    def on_become_leader(self, partition: int, epoch: int) -> None:
        known = self._epochs.get(partition)
        if not self._epochs.accept(partition, epoch):
            return
        if partition in self._txns or partition in self._loading:
            if epoch <= known:  # the same leadership, told again
                return
            # led here under an older epoch: unloaded and read again (see the module doc)
            self._unload(partition)
        log.info("%s-%d: loading transactions (epoch %d)", TRANSACTION_TOPIC, partition, epoch)
        self._loading.start(partition)

    def on_resign(self, partition: int, epoch: int = -1) -> None:
        if not self._epochs.accept(partition, epoch):
            return
        self._unload(partition)

    def _unload(self, partition: int) -> None:
        self._loading.stop(partition)
        owned = self._txns.pop(partition, None)
        if owned is None:
            return
        log.info("%s-%d: unloaded %d transactional ids", TRANSACTION_TOPIC, partition, len(owned))
        if self.listener is not None:
            self.listener.on_txns_unloaded(partition, list(owned.values()))

    async def _read_partition(self, partition: int) -> dict[str, TxnMetadata]:
        loader = TxnLogLoader(0)  # replay_log starts it at the log start
        tp = TopicPartition(TRANSACTION_TOPIC, partition)
        await replay_log(
            self._replicas, tp, loader, self.config.load_buffer_size, self._run_in_thread
        )
        return loader.txns

    def _install(self, partition: int, txns: dict[str, TxnMetadata]) -> None:
        self._txns[partition] = txns
        log.info("%s-%d: loaded %d transactional ids", TRANSACTION_TOPIC, partition, len(txns))
        if self.listener is not None:
            self.listener.on_txns_loaded(
                partition, self.coordinator_epoch(partition), list(txns.values())
            )

    async def shutdown(self) -> None:
        await self._loading.shutdown()
