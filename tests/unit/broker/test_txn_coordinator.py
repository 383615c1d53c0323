"""The transaction coordinator on a real ReplicaManager and real logs, markers sent to a
fake sender: a transaction committed end to end (CompleteCommit only after the marker is
acknowledged), an add held while the previous transaction completes (written with the
completion, one batch; bounded), fencing by a second InitProducerId, KIP-360, loading and
unloading fenced by the partition's leader epoch (prepared transactions resume their
markers), timeouts with injected time, and expiry."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from broker.metrics import BrokerMetrics
from broker.txn.coordinator import TransactionCoordinator, TxnConfig
from broker.txn.markers import MarkerChannel
from broker.txn.records import read_key, read_value
from broker.txn.states import TxnState
from broker.txn.store import TransactionStateManager, TxnStoreConfig
from broker.txn.topic import TRANSACTION_TOPIC, txn_partition_for
from protocol.errors import ErrorCode
from protocol.records.batch import iter_batches
from protocol.records.builder import read_batch
from protocol.values import TopicPartition
from tests.unit.broker.broker_helpers import LocalReplicas, inline, local_replicas, partition_state
from tests.unit.broker.test_txn_markers import FakeSender

PARTITIONS = 3
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
DEADLINE_S = 5.0
TIMEOUT_MS = 60_000


def tid_in(partition: int, prefix: str = "tx") -> str:
    return next(
        t for i in range(1000) if txn_partition_for(t := f"{prefix}-{i}", PARTITIONS) == partition
    )


TX = tid_in(0)
TX_ELSEWHERE = tid_in(1)


class FakeProducerIds:
    def __init__(self) -> None:
        self.next = 5000

    async def generate_producer_id(self) -> int:
        self.next += 1
        return self.next - 1


@dataclass
class Setup:
    replicas: LocalReplicas
    store: TransactionStateManager
    sender: FakeSender
    coordinator: TransactionCoordinator

    async def lead(self, partition: int = 0, epoch: int = 0) -> None:
        state = partition_state(TopicPartition(TRANSACTION_TOPIC, partition), epoch=epoch)
        await self.replicas.rm.become_leader_or_follower(1, 1, [state], {})
        await self.store.wait_loaded(partition)

    async def follow(self, partition: int = 0, epoch: int = 1) -> None:
        state = partition_state(
            TopicPartition(TRANSACTION_TOPIC, partition), leader=1, epoch=epoch,
            isr=(0, 1), replicas=(0, 1),
        )  # fmt: skip
        await self.replicas.rm.become_leader_or_follower(1, 1, [state], {})

    async def until(self, condition: Callable[[], bool]) -> None:
        async def poll() -> None:
            while not condition():
                await asyncio.sleep(0.005)

        await asyncio.wait_for(poll(), DEADLINE_S)

    def state(self, tid: str = TX) -> TxnState | None:
        meta = self.store.get(tid)
        return None if meta is None else meta.state

    def logged(self, tid: str = TX) -> list[list[TxnState]]:
        """The states written for ``tid`` to its ``__transaction_state`` partition, batch
        by batch."""
        tp = TopicPartition(TRANSACTION_TOPIC, txn_partition_for(tid, PARTITIONS))
        partition = self.replicas.rm.partition_for(tp)
        assert partition is not None and partition.log is not None
        lg = partition.log
        data = lg.read_bytes(lg.log_start_offset, 1 << 20, lg.log_end_offset)
        batches = []
        for pos, _ in iter_batches(data):
            _, records = read_batch(data, pos)
            states = [
                read_value(tid, r.value).state
                for r in records
                if r.key is not None and r.value is not None and read_key(r.key) == tid
            ]
            if states:
                batches.append(states)
        return batches


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[LocalReplicas]:
    replicas = local_replicas(tmp_path)
    yield replicas
    replicas.log_manager.shutdown()


@pytest.fixture
async def setup(replicas: LocalReplicas) -> AsyncIterator[Setup]:
    store = TransactionStateManager(
        replicas.rm,
        replicas.clock,
        TxnStoreConfig(
            num_partitions=PARTITIONS, required_acks=-1, write_timeout_ms=5000,
            load_buffer_size=300,
        ),
        topic_partition_count=lambda: None,
        run_in_thread=inline,
    )  # fmt: skip
    replicas.rm.on_leadership_change = store.on_leadership_change
    sender = FakeSender()
    markers = MarkerChannel({T0: 1, T1: 2}.get, {"t"}.__contains__, sender, retry_backoff_ms=10)

    async def create_topic() -> int:
        return ErrorCode.NONE

    coordinator = TransactionCoordinator(
        store,
        FakeProducerIds(),
        markers,
        replicas.clock,
        TxnConfig(max_timeout_ms=TIMEOUT_MS, id_expiration_ms=100_000, abort_interval_ms=10,
                  expiry_interval_ms=10, add_hold_ms=int(DEADLINE_S * 1000)),
        offsets_partition_of=lambda g: TopicPartition("__consumer_offsets", 7),
        partition_exists=lambda tp: tp.topic != "missing",
        create_topic=create_topic,
    )  # fmt: skip
    store.listener = coordinator
    s = Setup(replicas, store, sender, coordinator)
    await s.lead()
    yield s
    await coordinator.close()
    await store.shutdown()


async def begin(s: Setup, tid: str = TX) -> tuple[int, int]:
    init = await s.coordinator.init_producer_id(tid, TIMEOUT_MS, None)
    assert init.error == ErrorCode.NONE
    added = await s.coordinator.add_partitions(tid, init.producer_id, init.producer_epoch, [T0, T1])
    assert added == {T0: ErrorCode.NONE, T1: ErrorCode.NONE}
    return init.producer_id, init.producer_epoch


async def test_a_transaction_commits_once_every_marker_is_acknowledged(setup: Setup) -> None:
    s = setup
    s.sender.unreachable = {2}  # T1's leader is away for now
    pid, epoch = await begin(s)
    assert (pid, epoch) == (5000, 0) and s.state() is TxnState.ONGOING
    assert await s.coordinator.end_txn(TX, pid, epoch, True) == ErrorCode.NONE
    assert s.state() is TxnState.PREPARE_COMMIT
    await s.until(
        lambda: s.sender.partitions_sent_to(1) == [T0] and s.coordinator.markers.retries > 0
    )
    assert s.state() is TxnState.PREPARE_COMMIT  # T1's marker is still owed
    s.sender.unreachable = set()
    await s.until(lambda: s.state() is TxnState.COMPLETE_COMMIT)
    marker = s.sender.sent[-1][1].markers[0]
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_result) == (pid, 0, True)
    meta = s.store.get(TX)
    assert meta is not None and meta.partitions == set()
    # a retried EndTxn of the completed commit succeeds; an abort now is refused
    assert await s.coordinator.end_txn(TX, pid, epoch, True) == ErrorCode.NONE
    assert await s.coordinator.end_txn(TX, pid, epoch, False) == ErrorCode.INVALID_TXN_STATE


async def test_an_add_during_the_completion_is_held_and_written_with_it(setup: Setup) -> None:
    s = setup
    s.sender.unreachable = {2}  # T1's marker is owed: the commit cannot complete yet
    pid, epoch = await begin(s)
    assert await s.coordinator.end_txn(TX, pid, epoch, True) == ErrorCode.NONE
    add = asyncio.ensure_future(s.coordinator.add_partitions(TX, pid, epoch, [T0]))
    await s.until(lambda: s.coordinator.markers.retries > 0)
    assert not add.done() and s.state() is TxnState.PREPARE_COMMIT
    s.sender.unreachable = set()
    assert await asyncio.wait_for(add, DEADLINE_S) == {T0: ErrorCode.NONE}
    meta = s.store.get(TX)
    assert meta is not None and meta.state is TxnState.ONGOING and meta.partitions == {T0}
    assert s.coordinator.completed == 1
    # CompleteCommit and the next Ongoing went out as one batch, in that order
    assert s.logged()[-1] == [TxnState.COMPLETE_COMMIT, TxnState.ONGOING]
    await s.follow(epoch=1)
    await s.lead(epoch=2)
    reloaded = s.store.get(TX)
    assert reloaded is not None and reloaded.state is TxnState.ONGOING
    assert reloaded.partitions == {T0}


async def test_a_second_held_add_is_decided_after_the_completion(setup: Setup) -> None:
    s = setup
    s.sender.unreachable = {2}
    pid, epoch = await begin(s)
    assert await s.coordinator.end_txn(TX, pid, epoch, True) == ErrorCode.NONE
    first = asyncio.ensure_future(s.coordinator.add_partitions(TX, pid, epoch, [T0]))
    second = asyncio.ensure_future(s.coordinator.add_offsets(TX, pid, epoch, "group"))
    await s.until(lambda: s.coordinator.markers.retries > 0)
    assert not first.done() and not second.done()
    s.sender.unreachable = set()
    assert await asyncio.wait_for(first, DEADLINE_S) == {T0: ErrorCode.NONE}
    assert await asyncio.wait_for(second, DEADLINE_S) == ErrorCode.NONE
    meta = s.store.get(TX)
    assert meta is not None and meta.state is TxnState.ONGOING
    assert meta.partitions == {T0, TopicPartition("__consumer_offsets", 7)}


async def test_an_add_is_held_no_longer_than_the_hold(setup: Setup) -> None:
    s = setup
    s.coordinator.config = dataclasses.replace(s.coordinator.config, add_hold_ms=50)
    s.sender.unreachable = {1, 2}
    pid, epoch = await begin(s)
    assert await s.coordinator.end_txn(TX, pid, epoch, True) == ErrorCode.NONE
    loop = asyncio.get_running_loop()
    start = loop.time()
    added = await s.coordinator.add_partitions(TX, pid, epoch, [T0])
    assert added == {T0: ErrorCode.CONCURRENT_TRANSACTIONS}
    assert loop.time() - start >= 0.05
    assert s.state() is TxnState.PREPARE_COMMIT
    s.sender.unreachable = set()
    await s.until(lambda: s.state() is TxnState.COMPLETE_COMMIT)
    meta = s.store.get(TX)
    assert meta is not None and meta.partitions == set()  # the add given up wrote nothing
    assert s.logged()[-1] == [TxnState.COMPLETE_COMMIT]


async def test_a_held_add_is_let_go_when_the_partition_moves_away(setup: Setup) -> None:
    s = setup
    s.sender.unreachable = {1, 2}
    pid, epoch = await begin(s)
    assert await s.coordinator.end_txn(TX, pid, epoch, True) == ErrorCode.NONE
    add = asyncio.ensure_future(s.coordinator.add_partitions(TX, pid, epoch, [T0]))
    await s.until(lambda: s.coordinator.markers.retries > 0)
    assert not add.done()
    await s.follow(epoch=1)  # the markers are dropped here; the new coordinator owns them
    assert await asyncio.wait_for(add, DEADLINE_S) == {T0: ErrorCode.NOT_COORDINATOR}


async def test_add_offsets_and_unknown_partitions(setup: Setup) -> None:
    s = setup
    init = await s.coordinator.init_producer_id(TX, TIMEOUT_MS, None)
    pid, epoch = init.producer_id, init.producer_epoch
    missing = TopicPartition("missing", 0)
    assert await s.coordinator.add_partitions(TX, pid, epoch, [T0, missing]) == {
        T0: ErrorCode.OPERATION_NOT_ATTEMPTED,
        missing: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert await s.coordinator.add_offsets(TX, pid, epoch, "group") == ErrorCode.NONE
    meta = s.store.get(TX)
    assert meta is not None and meta.partitions == {TopicPartition("__consumer_offsets", 7)}


async def test_a_second_init_fences_the_first_producer(setup: Setup) -> None:
    s = setup
    pid, epoch = await begin(s)
    again = await s.coordinator.init_producer_id(TX, TIMEOUT_MS, None)
    assert again.error == ErrorCode.CONCURRENT_TRANSACTIONS
    await s.until(lambda: s.state() is TxnState.COMPLETE_ABORT)
    aborts = [m for _, req in s.sender.sent for m in req.markers]
    assert {(m.producer_epoch, m.transaction_result) for m in aborts} == {(1, False)}
    retried = await s.coordinator.init_producer_id(TX, TIMEOUT_MS, None)
    assert (retried.error, retried.producer_id, retried.producer_epoch) == (0, pid, 2)
    # the old producer is fenced
    assert await s.coordinator.end_txn(TX, pid, epoch, True) == ErrorCode.PRODUCER_FENCED
    added = await s.coordinator.add_partitions(TX, pid, epoch, [T0])
    assert added == {T0: ErrorCode.PRODUCER_FENCED}


async def test_kip360_recovery(setup: Setup) -> None:
    s = setup
    first = await s.coordinator.init_producer_id(TX, TIMEOUT_MS, None)
    bumped = await s.coordinator.init_producer_id(TX, TIMEOUT_MS, (first.producer_id, 0))
    assert (bumped.error, bumped.producer_epoch) == (0, 1)
    # the answer was lost: the same request again gets the same identity
    again = await s.coordinator.init_producer_id(TX, TIMEOUT_MS, (first.producer_id, 0))
    assert (again.error, again.producer_id, again.producer_epoch) == (0, first.producer_id, 1)
    other = await s.coordinator.init_producer_id(TX, TIMEOUT_MS, (first.producer_id + 1, 0))
    assert other.error == ErrorCode.PRODUCER_FENCED


async def test_request_checks(setup: Setup) -> None:
    c = setup.coordinator
    assert (await c.init_producer_id(TX, TIMEOUT_MS + 1, None)).error == (
        ErrorCode.INVALID_TRANSACTION_TIMEOUT
    )
    assert (await c.init_producer_id("", 1000, None)).error == ErrorCode.INVALID_REQUEST
    assert (await c.init_producer_id(TX_ELSEWHERE, 1000, None)).error == ErrorCode.NOT_COORDINATOR
    assert await c.end_txn(TX, 1, 0, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert c.describe(TX) == (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None)


async def test_prepared_transactions_resume_their_markers_on_load(setup: Setup) -> None:
    s = setup
    s.sender.unreachable = {1, 2}
    pid, epoch = await begin(s)
    assert await s.coordinator.end_txn(TX, pid, epoch, False) == ErrorCode.NONE
    await s.follow(epoch=1)  # another broker leads the partition now
    assert s.store.coordinator_error(TX) == ErrorCode.NOT_COORDINATOR
    assert s.coordinator.markers.queued() == 0  # the markers were dropped here
    await s.lead(epoch=0)  # a late, older LeaderAndIsr: ignored
    assert s.store.coordinator_error(TX) == ErrorCode.NOT_COORDINATOR
    s.sender.unreachable = set()
    s.sender.sent.clear()
    await s.lead(epoch=2)
    assert s.state() in (TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT)
    await s.until(lambda: s.state() is TxnState.COMPLETE_ABORT)
    resent = [m for _, req in s.sender.sent for m in req.markers]
    assert {(m.coordinator_epoch, m.transaction_result) for m in resent} == {(2, False)}


async def test_loading_answers_load_in_progress(setup: Setup) -> None:
    s = setup
    init = await s.coordinator.init_producer_id(TX, TIMEOUT_MS, None)
    await s.follow(epoch=1)
    gate = asyncio.Event()

    async def held(fn: Callable[[], object]) -> object:
        await gate.wait()
        return fn()

    store = TransactionStateManager(
        s.replicas.rm, s.replicas.clock, TxnStoreConfig(PARTITIONS, -1, 5000, 300),
        topic_partition_count=lambda: None, run_in_thread=held,  # type: ignore[arg-type]
    )  # fmt: skip
    s.replicas.rm.on_leadership_change = store.on_leadership_change
    state = partition_state(TopicPartition(TRANSACTION_TOPIC, 0), epoch=2)
    await s.replicas.rm.become_leader_or_follower(1, 1, [state], {})
    assert store.coordinator_error(TX) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    gate.set()
    await store.wait_loaded(0)
    assert store.coordinator_error(TX) == ErrorCode.NONE
    meta = store.get(TX)
    assert meta is not None and (meta.producer_id, meta.state) == (init.producer_id, TxnState.EMPTY)
    assert store.coordinator_epoch(0) == 2
    await store.shutdown()


async def test_timed_out_transactions_are_aborted_under_a_bumped_epoch(setup: Setup) -> None:
    s = setup
    pid, epoch = await begin(s)
    s.replicas.clock.advance(TIMEOUT_MS - 1)
    assert await s.coordinator.abort_timed_out() == 0
    s.replicas.clock.advance(1)
    assert await s.coordinator.abort_timed_out() == 1
    await s.until(lambda: s.state() is TxnState.COMPLETE_ABORT)
    meta = s.store.get(TX)
    assert meta is not None and meta.producer_epoch == epoch + 1
    assert await s.coordinator.end_txn(TX, pid, epoch, True) == ErrorCode.PRODUCER_FENCED


async def test_idle_ids_expire_and_stay_gone_after_a_reload(setup: Setup) -> None:
    s = setup
    await s.coordinator.init_producer_id(TX, TIMEOUT_MS, None)
    s.replicas.clock.advance(100_000)
    assert await s.coordinator.expire_ids() == 1
    assert s.store.get(TX) is None
    await s.follow(epoch=1)
    await s.lead(epoch=2)
    assert s.store.get(TX) is None


async def test_the_gauges_count_ids_by_state_and_markers_owed(setup: Setup) -> None:
    s = setup
    metrics = BrokerMetrics()
    metrics.watch_transactions(s.coordinator.states, s.coordinator.markers.queued)

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(f"minikafka_{name}", labels)

    s.sender.unreachable = {1, 2}
    pid, epoch = await begin(s)
    await begin(s, tid_in(0, "other"))
    assert sample("transactions", state="Ongoing") == 2
    assert sample("transactions", state="PrepareCommit") == 0
    assert await s.coordinator.end_txn(TX, pid, epoch, True) == ErrorCode.NONE
    assert sample("transactions", state="PrepareCommit") == 1
    assert sample("transaction_markers_owed") == 2
    s.sender.unreachable = set()
    await s.until(lambda: s.state() is TxnState.COMPLETE_COMMIT)
    assert sample("transaction_markers_owed") == 0
    assert sample("transactions", state="CompleteCommit") == 1
