"""Shared helpers for the broker tests: the request a handler is called with, the
UpdateMetadata state of a topic on broker 0, a record batch to append; and, for tests on
real logs, LeaderAndIsr partition states, a replica manager over a LogManager in a
temporary directory with its purgatories on one MockClock (reapers off: a test advances
time itself), and the handler families around it (``handler_services``).

``replica_manager`` is the one place a ReplicaManager is built for tests: the defaults a
test may leave out (min.insync.replicas 1, every partition unknown to the cache, every
broker alive, no leader reachable, no ISR writer, no fetchers) live here, not in the
production constructor."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from broker.apis.services import HandlerServices
from broker.blocking import RunBlocking
from broker.delayed import DelayedFetch, DelayedProduce
from broker.delayed.delete_records import DelayedDeleteRecords
from broker.isr import IsrWriter
from broker.isr_zk import IsrChangePropagator
from broker.metrics import BrokerMetrics
from broker.partition import Partition
from broker.produce_records import check_produce_records
from broker.replica_manager import ClusterView, ReplicaManager, ReplicaManagerServices
from broker.replication import ReplicaFetcherManager
from broker.replication.quota import WindowedRate
from broker.replication.throttle import ReplicationThrottle, ThrottleSide
from config.definitions import LONG_MAX
from protocol import make_request
from protocol.messages import LeaderAndIsrRequest, UpdateMetadataRequest
from protocol.values import TopicPartition
from storage import LogManager, LogManagerConfig
from tests.records import record_batch
from tests.unit.broker.handler_services import handler_services
from timer import DelayedOperationPurgatory
from timer.clock import Clock, MockClock, SystemClock

State = LeaderAndIsrRequest.LeaderAndIsrPartitionState
T = TypeVar("T")


async def inline(fn: Callable[[], T]) -> T:
    """A ReplicaManager's ``run_blocking`` that does the disk work on the calling thread."""
    return fn()


def run_now(coro: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (a ReplicaManager whose
    ``run_blocking`` is :func:`inline`), without an event loop: for sync fixtures."""
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise AssertionError("the coroutine suspended: await it in an async test instead")


class HandlerRequest:
    """The parts of broker.network.Request a handler reads, for calling one directly."""

    def __init__(
        self,
        api_key: int,
        version: int,
        body: Any,
        listener: str = "PLAINTEXT",
        *,
        client_id: str = "test-client",
    ) -> None:
        self.header = make_request(api_key, version, 1, client_id, body).header
        self.body = body
        self.listener = listener

    @property
    def api_version(self) -> int:
        return int(self.header.api_version)


def partition_state(
    tp: TopicPartition,
    *,
    leader: int = 0,
    epoch: int = 0,
    isr: list[int] | tuple[int, ...] = (0,),
    replicas: list[int] | tuple[int, ...] = (0,),
    partition_epoch: int = 0,
) -> Any:
    """A LeaderAndIsr partition state for ``tp`` from controller epoch 1 (by default:
    broker 0 leads alone at leader epoch 0)."""
    return State(
        topic_name=tp.topic,
        partition_index=tp.partition,
        controller_epoch=1,
        leader=leader,
        leader_epoch=epoch,
        isr=list(isr),
        partition_epoch=partition_epoch,
        replicas=list(replicas),
    )


def batch(n: int = 1, *, producer_id: int = -1, epoch: int = -1, seq: int = -1) -> bytes:
    """A batch of ``n`` records (key b"k", value b"value", timestamps from 1000), from
    ``producer_id`` at ``epoch`` starting at sequence ``seq`` (-1: not idempotent)."""
    return record_batch(
        n, value=b"value", producer_id=producer_id, producer_epoch=epoch, base_sequence=seq
    )


def metadata_topic(
    name: str, partitions: int, *, leader: int = 0, topic_id: uuid.UUID | None = None
) -> UpdateMetadataRequest.UpdateMetadataTopicState:
    """UpdateMetadata's state of topic ``name`` from controller epoch 1: partitions 0 to
    ``partitions - 1``, each on broker 0 alone and led by ``leader`` at leader epoch 0
    (leader -2: the topic is being deleted); ``topic_id`` None leaves the zero id."""
    U = UpdateMetadataRequest
    states = [
        U.UpdateMetadataPartitionState(
            partition_index=p,
            controller_epoch=1,
            leader=leader,
            leader_epoch=0,
            isr=[0],
            zk_version=0,
            replicas=[0],
        )
        for p in range(partitions)
    ]
    if topic_id is None:
        return U.UpdateMetadataTopicState(topic_name=name, partition_states=states)
    return U.UpdateMetadataTopicState(topic_name=name, topic_id=topic_id, partition_states=states)


def ignore(result: object) -> None:
    """An append's or fetch's callback for a test that does not look at the answer."""


@dataclass
class LocalReplicas:
    """Broker 0's replica manager on real logs. Shut ``log_manager`` down when done."""

    clock: MockClock
    log_manager: LogManager
    produce: DelayedOperationPurgatory[DelayedProduce]
    fetch: DelayedOperationPurgatory[DelayedFetch]
    metrics: BrokerMetrics
    rm: ReplicaManager

    def become(self, topic_ids: Mapping[str, Any], *states: Any) -> dict[TopicPartition, int]:
        """Apply partition ``states`` as a LeaderAndIsr from controller 1, epoch 1 would."""
        return run_now(self.rm.become_leader_or_follower(1, 1, list(states), dict(topic_ids)))

    def append(
        self, tp: TopicPartition, records: bytes, on_done: Callable[[Any], None] = ignore
    ) -> None:
        """Append with acks=1, answered at once through ``on_done``."""
        self.rm.append_records(
            {tp: check_produce_records(records, 9)},
            required_acks=1,
            timeout_ms=0,
            on_done=on_done,
        )

    def services(self, props: Mapping[str, str] | None = None, **doubles: Any) -> HandlerServices:
        """The handler families of broker 0 in cluster "test-cluster" around these
        replicas (``doubles``: more services, as ``handler_services`` takes them)."""
        return handler_services(
            props=props,
            clock=self.clock,
            metrics=self.metrics,
            replica_manager=self.rm,
            log_manager=self.log_manager,
            **doubles,
        )


def replica_manager(
    broker_id: int,
    log_manager: LogManager,
    *,
    produce_purgatory: DelayedOperationPurgatory[DelayedProduce],
    fetch_purgatory: DelayedOperationPurgatory[DelayedFetch],
    metrics: BrokerMetrics,
    clock: Clock,
    run_blocking: RunBlocking = inline,
    delete_records_purgatory: DelayedOperationPurgatory[DelayedDeleteRecords] | None = None,
    min_insync_replicas: Callable[[str], int] = lambda topic: 1,
    is_known_partition: Callable[[str, int], bool] = lambda topic, p: False,
    is_alive_broker: Callable[[int], bool] = lambda broker_id: True,
    leader_endpoint: Callable[[int], tuple[str, int] | None] = lambda broker_id: None,
    isr_writer: IsrWriter | None = None,
    isr_propagator: IsrChangePropagator | None = None,
    replica_fetchers: ReplicaFetcherManager | None = None,
    replica_lag_time_max_ms: int = 30_000,
    leader_throttle: ReplicationThrottle | None = None,
) -> ReplicaManager:
    """A ReplicaManager with the tests' defaults (see the module doc)."""
    if leader_throttle is None:
        leader_throttle = unthrottled(ThrottleSide.LEADER, broker_id, clock)
    if delete_records_purgatory is None:
        delete_records_purgatory = DelayedOperationPurgatory(
            "DeleteRecords", clock=clock, reaper_enabled=False
        )
    services = ReplicaManagerServices(
        log_manager=log_manager,
        produce_purgatory=produce_purgatory,
        fetch_purgatory=fetch_purgatory,
        delete_records_purgatory=delete_records_purgatory,
        metrics=metrics,
        clock=clock,
        run_blocking=run_blocking,
        isr_writer=isr_writer,
        isr_propagator=isr_propagator,
        replica_fetchers=replica_fetchers,
        leader_throttle=leader_throttle,
    )
    cluster = ClusterView(
        min_insync_replicas=min_insync_replicas,
        is_known_partition=is_known_partition,
        is_alive_broker=is_alive_broker,
        leader_endpoint=leader_endpoint,
    )
    return ReplicaManager(
        broker_id, services, cluster, replica_lag_time_max_ms=replica_lag_time_max_ms
    )


def unthrottled(
    side: ThrottleSide,
    broker_id: int,
    clock: Clock,
    overrides: Callable[[str], Mapping[str, str]] = lambda _topic: {},
    rate: Callable[[], int] = lambda: LONG_MAX,
) -> ReplicationThrottle:
    """A replication throttle of Kafka's defaults (11 windows of 1 s, no bound, no topic
    throttled) unless ``overrides`` and ``rate`` say otherwise."""
    return ReplicationThrottle(side, broker_id, clock, WindowedRate(11, 1000), rate, overrides)


def local_replicas(tmp_path: Path, **rm_options: Any) -> LocalReplicas:
    """A replica manager for broker 0 with its logs under ``tmp_path`` (``rm_options``:
    :func:`replica_manager`'s keyword options beyond the purgatories and metrics; its
    disk work runs :func:`inline` unless ``run_blocking`` says otherwise; it reads the
    MockClock)."""
    clock = MockClock()
    log_manager = LogManager(LogManagerConfig(log_dirs=(str(tmp_path),)), clock)
    produce: DelayedOperationPurgatory[DelayedProduce] = DelayedOperationPurgatory(
        "Produce", clock=clock, reaper_enabled=False
    )
    fetch: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory(
        "Fetch", clock=clock, reaper_enabled=False
    )
    metrics = BrokerMetrics()
    rm_options.setdefault("clock", clock)
    rm = replica_manager(
        0,
        log_manager,
        produce_purgatory=produce,
        fetch_purgatory=fetch,
        metrics=metrics,
        **rm_options,
    )
    return LocalReplicas(clock, log_manager, produce, fetch, metrics, rm)


def lone_partition(tp: TopicPartition, broker_id: int, log_manager: LogManager) -> Partition:
    """A Partition outside any ReplicaManager, on the system clock, whose leader never
    changes its ISR (no ISR writer, nobody told of changes)."""
    return Partition(
        tp, broker_id, log_manager, clock=SystemClock(), isr_writer=None, on_isr_change=None
    )
