"""BrokerServer: one broker's startup and shutdown, in Kafka's order.

Startup (Kafka's KafkaServer.startup):

1. configuration (already parsed and validated by the caller);
2. meta.properties of every log directory, then the LogManager loads every log,
   recovering the ones without a clean-shutdown marker (blocking; on a worker thread);
3. ZooKeeper: connect, retrying with a clear message while it is unreachable; Kafka's
   top-level paths; the cluster id (/cluster/id), checked against meta.properties; the
   broker id (configured, from meta.properties, or generated from /brokers/seqid),
   then meta.properties written where missing;
4. the Scheduler with every periodic task of ``BrokerServer.scheduled_tasks`` (the
   LogManager's housekeeping, the high-watermark checkpoint, ISR expiration, ISR
   change propagation and offsets expiry), the purgatories and the ReplicaManager (with
   the writer of its leaders' ISR changes to ZooKeeper), then the group store
   (``broker.group.manager``: __consumer_offsets partitions load and unload as the
   ReplicaManager's leaderships change);
5. the SocketServer: data-plane listeners and the control-plane listener; client
   requests that arrive before the broker is registered and its metadata cache lists it
   are held (broker.readiness), the controller's are served;
6. the controller: it registers /brokers/ids/<id> (ephemeral) and joins the election;
   then the config change listener applies the dynamic broker configs and watches
   /config/changes (``broker.config_changes``);
7. the metrics HTTP endpoint and the event-loop lag probe.

Shutdown (SIGTERM; KafkaServer.shutdown): controlled shutdown (ask the controller to move
our leaderships away) when enabled, answer the JoinGroup/SyncGroup requests the group
coordinator holds (NOT_COORDINATOR), stop the listeners and let in-flight requests finish,
stop the group store's loads and background writes, the controller (resigning if
active), the ReplicaManager, purgatories and
scheduler, then flush every log and write the checkpoints and the clean-shutdown marker,
remove the registration and close the ZooKeeper session. Each step runs even when an
earlier one failed: a broker that is stopping must still leave its logs clean. The steps
that need ZooKeeper are skipped, or given up, the moment it is unreachable
(broker.zk_reachability), rather than waiting out their bounds against a ZooKeeper that
is gone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Protocol, TypeVar

from broker.admin.topics import OFFSETS_TOPIC
from broker.apis import KafkaApis, error_response
from broker.config import BrokerConfig
from broker.config_changes import ConfigChangeListener
from broker.context import BrokerContext
from broker.delayed.delete_records import DelayedDeleteRecords
from broker.delayed.fetch import DelayedFetch
from broker.delayed.produce import DelayedProduce
from broker.group.coordinator import GroupConfig, GroupCoordinator
from broker.group.delayed import DelayedHeartbeat
from broker.group.manager import GroupMetadataManager, OffsetsConfig
from broker.group.offsets_topic import create_offsets_topic
from broker.isr_zk import IsrChangePropagator, PropagationTimes, ZkIsrWriter
from broker.metadata_cache import MetadataCache
from broker.metrics import BrokerMetrics, EventLoopLagMonitor, MetricsHttpServer
from broker.network import Codec, SocketServer
from broker.producer_id_manager import ProducerIdManager
from broker.readiness import ReadinessGate, not_ready_reason
from broker.replica_manager import ReplicaManager
from broker.replication import FetcherConfig, ReplicaFetcherManager
from broker.zk_reachability import ZooKeeperReachability
from controller.controller import ControllerConfig, KafkaController
from controller.network import ChannelConfig, TcpChannelManager
from controller.shutdown import request_controlled_shutdown
from storage import LogManager, LogManagerConfig, TaskSpec
from storage.meta import (
    check_cluster_id,
    read_meta_properties,
    resolve_broker_id,
    write_meta_properties,
)
from timer import DelayedOperation, DelayedOperationPurgatory, Scheduler
from timer.clock import Clock, SystemClock
from zk.facade import ZkFacade
from zk.latency import observe_request_latency
from zk.model import BrokerInfo

log = logging.getLogger(__name__)

Op = TypeVar("Op", bound=DelayedOperation)


class StartedPurgatory(Protocol):
    """What shutdown needs of every purgatory, whatever operations it holds."""

    @property
    def name(self) -> str: ...

    def complete_all(self) -> int: ...

    async def shutdown(self) -> None: ...


_NO_OVERRIDES: Mapping[str, str] = MappingProxyType({})


#: when the isr-change-propagation task writes the queued ISR changes (Kafka's timings)
ISR_PROPAGATION = PropagationTimes()

#: how long to wait between ZooKeeper connection attempts at startup
ZK_RETRY_BACKOFF_S = 2.0


def on_loop(loop: asyncio.AbstractEventLoop) -> Callable[[Callable[[], bool]], bool]:
    """A runner of functions on ``loop``, called from a worker thread, that waits for
    the result: the log cleaner swaps segments this way, on the thread that owns the
    logs (called on the loop itself, it runs the function at once)."""

    def run(fn: Callable[[], bool]) -> bool:
        try:
            if asyncio.get_running_loop() is loop:
                return fn()
        except RuntimeError:  # no loop in this thread: the usual case
            pass
        future: concurrent.futures.Future[bool] = concurrent.futures.Future()

        def call() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the waiting thread, which raises it
                future.set_exception(exc)

        loop.call_soon_threadsafe(call)
        return future.result()

    return run


class StartupError(Exception):
    """The broker cannot start; the message says why (no traceback needed)."""


class BrokerServer:
    """One broker. ``await startup()``, then ``await shutdown()`` (also after a failed or
    cancelled startup: it undoes whatever had started). Event-loop bound."""

    def __init__(
        self,
        config: BrokerConfig,
        clock: Clock | None = None,
        *,
        zk_connect: Callable[[str, float, float], Awaitable[ZkFacade]] | None = None,
    ) -> None:
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self.metrics = BrokerMetrics()
        self._zk_connect = zk_connect or (
            lambda hosts, session_s, connect_s: ZkFacade.connect(hosts, session_s, connect_s)
        )
        self.broker_id = -1
        self.cluster_id = ""
        self.zk: ZkFacade | None = None
        self.zk_reachability: ZooKeeperReachability | None = None
        self.log_manager: LogManager | None = None
        self.scheduler: Scheduler | None = None
        self.purgatories: list[StartedPurgatory] = []
        self.replica_manager: ReplicaManager | None = None
        self.isr_writer: ZkIsrWriter | None = None
        self.metadata_cache: MetadataCache | None = None
        self.ctx: BrokerContext | None = None
        self.apis: KafkaApis | None = None
        self.socket_server: SocketServer | None = None
        self.controller: KafkaController | None = None
        self.metrics_server: MetricsHttpServer | None = None
        self.lag_monitor: EventLoopLagMonitor | None = None
        self.config_changes: ConfigChangeListener | None = None
        self.group_store: GroupMetadataManager | None = None
        self.started = False
        self._shutdown_done = False

    # -- startup ------------------------------------------------------------------------------

    async def startup(self) -> None:
        config = self.config
        log_dirs = config.log_dirs
        found = await asyncio.to_thread(read_meta_properties, log_dirs)
        configured = config.broker_id if config.broker_id >= 0 else None
        broker_id = resolve_broker_id(found, configured)

        self.log_manager = LogManager(
            LogManagerConfig.from_layers(config.config_layers),
            self.clock,
            on_owner=on_loop(asyncio.get_running_loop()),
        )
        self.metrics.watch_cleaner(self.log_manager.cleaner)
        await asyncio.to_thread(self.log_manager.load_logs)
        log.info("loaded %d logs from %s", len(self.log_manager.all_logs()), log_dirs)

        self.zk = await self._connect_zookeeper()
        zk = self.zk
        self.zk_reachability = ZooKeeperReachability(zk.kazoo)
        await zk.ensure_persistent_paths()
        self.cluster_id = await zk.get_or_create_cluster_id(None)
        check_cluster_id(found, self.cluster_id)
        if broker_id is None:
            if not config.get_bool("broker.id.generation.enable"):
                raise StartupError("broker.id is not set and broker.id.generation.enable is false")
            broker_id = await zk.generate_broker_id(config.get_int("reserved.broker.max.id"))
            log.info("generated broker id %d from /brokers/seqid", broker_id)
        self.broker_id = broker_id
        await asyncio.to_thread(write_meta_properties, log_dirs, broker_id, self.cluster_id, found)

        self.scheduler = Scheduler(
            self.clock, threads=config.get_int("background.threads"), name="kafka-scheduler"
        )
        self.scheduler.start()
        for task in self.scheduled_tasks():
            self.scheduler.schedule(
                task.name, task.fn, task.delay_ms, task.period_ms, task.blocking
            )
        produce = self._purgatory("Produce", DelayedProduce)
        fetch = self._purgatory("Fetch", DelayedFetch)
        # Kafka's topic purgatory: CreateTopics/CreatePartitions and DeleteTopics waiters
        topics = self._purgatory("topic", DelayedOperation)  # type: ignore[type-abstract]
        delete_records = self._purgatory("DeleteRecords", DelayedDeleteRecords)
        cache = self.metadata_cache = MetadataCache(broker_id)
        self.replica_manager = self._replica_manager(
            self.log_manager, produce, fetch, delete_records, cache
        )

        self.ctx = BrokerContext(
            broker_id=broker_id,
            cluster_id=self.cluster_id,
            config=config,
            clock=self.clock,
            metrics=self.metrics,
            metadata_cache=cache,
            log_manager=self.log_manager,
            topic_configs=self.log_manager.topic_configs,
            replica_manager=self.replica_manager,
            zk=zk,
            produce_purgatory=produce,
            fetch_purgatory=fetch,
            create_topics_purgatory=topics,
            producer_id_manager=ProducerIdManager(broker_id, zk),
            scheduler=self.scheduler,
            loop=asyncio.get_running_loop(),
        )
        self.ctx.group_store = self.group_store = self._group_store(self.ctx, cache)
        self.ctx.group_coordinator = self._group_coordinator(self.group_store)
        self.apis = KafkaApis(self.ctx)
        gate = self.apis.gate = self._readiness_gate(self.ctx)
        self.socket_server = SocketServer(
            config,
            self.apis.handle,
            codec=Codec.default(error_response),
            metrics=self.metrics,
        )
        await self.socket_server.start()

        control = config.control_plane_listener
        channel = TcpChannelManager(
            broker_id, ChannelConfig(listener_name=control.listener_name if control else None)
        )
        self.controller = KafkaController(
            zk,
            self._broker_info(),
            channel,
            self.clock,
            self._controller_config(),
            scheduler=self.scheduler,
        )
        self.ctx.controller = self.controller
        self.ctx.broker_epoch = await self.controller.start()
        gate.check()  # registered; ready once the controller's metadata lists us
        self.config_changes = ConfigChangeListener(self.ctx, zk)
        await self.config_changes.start()
        self._watch_gauges()
        self._watch_operator_metrics()

        port = config.get_int("metrics.port")
        if port >= 0:
            host = config.get_str("metrics.host") or "127.0.0.1"
            self.metrics_server = MetricsHttpServer(self.metrics, port, host)
            await self.metrics_server.start()
        self.lag_monitor = EventLoopLagMonitor(self.metrics)
        self.lag_monitor.start()
        self.started = True
        log.info(
            "[BrokerServer id=%d] started (cluster %s, broker epoch %d)",
            broker_id,
            self.cluster_id,
            self.ctx.broker_epoch,
        )

    async def _connect_zookeeper(self) -> ZkFacade:
        hosts = self.config.get_str("zookeeper.connect")
        if not hosts:
            raise StartupError("zookeeper.connect is not set")
        session_s = self.config.get_int("zookeeper.session.timeout.ms") / 1000
        connect_s = self.config.zookeeper_connection_timeout_ms / 1000
        attempt = 0
        while True:
            attempt += 1
            try:
                zk = await self._zk_connect(hosts, session_s, connect_s)
            except Exception as exc:  # kazoo raises its own timeout types; all mean "retry"
                message = (
                    f"cannot connect to ZooKeeper at {hosts} (attempt {attempt}: "
                    f"{type(exc).__name__} {exc}); is it running? retrying in "
                    f"{ZK_RETRY_BACKOFF_S:.0f}s"
                )
                log.error(message)
                await asyncio.sleep(ZK_RETRY_BACKOFF_S)
                continue
            log.info("connected to ZooKeeper at %s (session 0x%x)", hosts, zk.session_id or 0)
            return zk

    def _readiness_gate(self, ctx: BrokerContext) -> ReadinessGate:
        """Client requests wait until this broker is registered and its cache lists it
        (broker.readiness): the listeners open before either is true."""
        cache = ctx.metadata_cache
        return ReadinessGate(
            lambda: not_ready_reason(ctx.broker_epoch >= 0, cache.has_alive_broker(ctx.broker_id)),
            self.clock,
            error_response,
        )

    def _purgatory(self, name: str, _kind: type[Op]) -> DelayedOperationPurgatory[Op]:
        """A started purgatory of ``_kind`` operations (the type only types the result)."""
        purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory(
            name, clock=self.clock, broker_id=self.broker_id
        )
        purgatory.start()
        self.metrics.watch_purgatory(
            name, lambda: purgatory.purgatory_size, lambda: purgatory.num_delayed
        )
        self.purgatories.append(purgatory)
        return purgatory

    def _replica_manager(
        self,
        log_manager: LogManager,
        produce: DelayedOperationPurgatory[DelayedProduce],
        fetch: DelayedOperationPurgatory[DelayedFetch],
        delete_records: DelayedOperationPurgatory[DelayedDeleteRecords],
        cache: MetadataCache,
    ) -> ReplicaManager:
        zk = self.zk
        assert zk is not None
        self.isr_writer = ZkIsrWriter(zk)

        def min_insync_replicas(topic: str) -> int:
            """The topic's effective min.insync.replicas over the broker's layers as they
            are now (a dynamic broker config replaces ``ctx.config``, so it is read on
            every call); BrokerConfig remembers the answers."""
            ctx = self.ctx
            config = ctx.config if ctx else self.config
            overrides = ctx.topic_configs.overrides(topic) if ctx else _NO_OVERRIDES
            return int(config.topic_value("min.insync.replicas", overrides))

        fetchers = ReplicaFetcherManager(self._fetcher_config(), self.clock)
        self.metrics.replica_fetcher_max_lag.set_function(fetchers.max_lag)
        listener = self.config.inter_broker_listener_name
        return ReplicaManager(
            self.broker_id,
            log_manager,
            produce_purgatory=produce,
            fetch_purgatory=fetch,
            metrics=self.metrics,
            min_insync_replicas=min_insync_replicas,
            is_known_partition=lambda topic, p: cache.partition(topic, p) is not None,
            clock=self.clock,
            isr_writer=self.isr_writer,
            isr_propagator=IsrChangePropagator(
                self.clock,
                lambda tps: zk.propagate_isr_change(tps),
                ISR_PROPAGATION,
            ),
            replica_lag_time_max_ms=self.config.get_int("replica.lag.time.max.ms"),
            replica_fetchers=fetchers,
            leader_endpoint=lambda broker_id: cache.alive_endpoint(broker_id, listener),
            delete_records_purgatory=delete_records,
            is_alive_broker=cache.has_alive_broker,
        )

    def _group_store(self, ctx: BrokerContext, cache: MetadataCache) -> GroupMetadataManager:
        """The group coordinator's store: ``__consumer_offsets`` partitions load and
        unload as the ReplicaManager's leaderships change; the topic is created on
        first use with the broker's settings as they are then."""
        rm, zk = self.replica_manager, self.zk
        assert rm is not None and zk is not None
        store = GroupMetadataManager(
            rm,
            self.clock,
            OffsetsConfig.from_broker(self.config),
            topic_partition_count=lambda: cache.num_partitions(OFFSETS_TOPIC),
            create_offsets_topic=lambda: create_offsets_topic(
                zk, ctx.config, cache.alive_broker_ids()
            ),
        )
        rm.on_leadership_change = store.on_leadership_change
        self.metrics.watch_group_store(store)
        return store

    def _group_coordinator(self, store: GroupMetadataManager) -> GroupCoordinator:
        """The classic group protocol over the store's groups, with its two purgatories
        (joins waiting for a rebalance, members' session timers); the store tells it
        when groups load and unload."""
        metrics = self.metrics
        coordinator = GroupCoordinator(
            store,
            GroupConfig.from_values(self.config.get_int),
            self.clock,
            self._purgatory("Rebalance", DelayedOperation),  # type: ignore[type-abstract]
            self._purgatory("Heartbeat", DelayedHeartbeat),
            on_rebalance=metrics.group_rebalances.labels().inc,
            on_offsets_committed=metrics.group_offset_commits.labels().inc,
        )
        store.listener = coordinator
        metrics.watch_groups(lambda: {state.value: n for state, n in coordinator.states().items()})
        return coordinator

    def _fetcher_config(self) -> FetcherConfig:
        c = self.config
        return FetcherConfig(
            broker_id=self.broker_id,
            partition_max_bytes=c.get_int("replica.fetch.max.bytes"),
            response_max_bytes=c.get_int("replica.fetch.response.max.bytes"),
            max_wait_ms=c.get_int("replica.fetch.wait.max.ms"),
            min_bytes=c.get_int("replica.fetch.min.bytes"),
            backoff_ms=c.get_int("replica.fetch.backoff.ms"),
            socket_timeout_ms=c.get_int("replica.socket.timeout.ms"),
            num_fetchers=c.get_int("num.replica.fetchers"),
        )

    def scheduled_tasks(self) -> list[TaskSpec]:
        """Every periodic task the broker schedules at startup, in one table: storage's
        housekeeping (``LogManager.scheduled_tasks``), then the broker's own. The active
        controller schedules its leader-imbalance check itself while it is active
        (``auto.leader.rebalance.enable``). The ISR tasks start before the ReplicaManager
        exists and do nothing until it does."""
        assert self.log_manager is not None
        c = self.config
        lag_ms = c.get_int("replica.lag.time.max.ms")
        return [
            *self.log_manager.scheduled_tasks(),
            # replication-offset-checkpoint, read back at startup: a restarted broker's
            # high watermarks are at most one interval old (Kafka starts it at once);
            # followers' too (their high watermarks come from the leader's fetches)
            TaskSpec("highwatermark-checkpoint", self.log_manager.checkpoint_high_watermarks,
                     0, c.get_int("replica.high.watermark.checkpoint.interval.ms"), True),
            # leaders drop followers that lagged replica.lag.time.max.ms from their ISR
            TaskSpec("isr-expiration", self._expire_isr, lag_ms // 2, lag_ms // 2, False),
            TaskSpec("isr-change-propagation", self._propagate_isr_changes,
                     ISR_PROPAGATION.check_interval_ms, ISR_PROPAGATION.check_interval_ms,
                     False),
            # committed offsets of empty groups expire (broker.group.expiry)
            TaskSpec("delete-expired-group-metadata", self._expire_group_offsets,
                     c.get_int("offsets.retention.check.interval.ms"),
                     c.get_int("offsets.retention.check.interval.ms"), False),
        ]  # fmt: skip

    def _expire_isr(self) -> None:
        if self.replica_manager is not None:
            self.replica_manager.maybe_shrink_isr()

    async def _expire_group_offsets(self) -> None:
        if self.group_store is not None:
            await self.group_store.expire_offsets()

    async def _propagate_isr_changes(self) -> None:
        rm = self.replica_manager
        if rm is not None and rm.isr_propagator is not None:
            await rm.isr_propagator.maybe_propagate()

    def _controller_config(self) -> ControllerConfig:
        c = self.config
        return ControllerConfig(
            unclean_leader_election_enable=c.get_bool("unclean.leader.election.enable"),
            auto_leader_rebalance_enable=c.get_bool("auto.leader.rebalance.enable"),
            leader_imbalance_check_interval_ms=(
                c.get_int("leader.imbalance.check.interval.seconds") * 1000
            ),
            leader_imbalance_per_broker_percentage=c.get_int(
                "leader.imbalance.per.broker.percentage"
            ),
            zookeeper_session_timeout_ms=c.get_int("zookeeper.session.timeout.ms"),
            delete_topic_enable=c.get_bool("delete.topic.enable"),
        )

    def _broker_info(self) -> BrokerInfo:
        """Our registration: every advertised listener, with the port actually bound
        (listeners configured with port 0 pick one)."""
        assert self.socket_server is not None
        endpoints = []
        for ep in self.config.advertised_listeners:
            port = ep.port
            if port == 0:
                port = self.socket_server.bound_port(ep.listener_name)
            host = ep.host if ep.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
            endpoints.append(dataclasses.replace(ep, host=host, port=port))
        return BrokerInfo(self.broker_id, tuple(endpoints), self.config.get_str("broker.rack"))

    def _watch_gauges(self) -> None:
        controller = self.controller
        zk = self.zk
        assert controller is not None and zk is not None
        self.metrics.controller_active.set_function(lambda: 1 if controller.is_active else 0)
        self.metrics.offline_partitions.set_function(lambda: controller.offline_partition_count)
        self.metrics.watch_unclean_leader_elections(lambda: controller.unclean_leader_elections)
        self.metrics.zookeeper_connected.set_function(lambda: 1 if zk.kazoo.connected else 0)

    def _watch_operator_metrics(self) -> None:
        """Wire the operators' metrics (broker.metrics, "the operators' set") to what
        they read: replica counts, logs and log directories, idle ratios, the ZooKeeper
        session and its request latency, the controller's events."""
        m, rm, lm = self.metrics, self.replica_manager, self.log_manager
        zk, controller, sockets = self.zk, self.controller, self.socket_server
        assert rm is not None and lm is not None and zk is not None
        assert controller is not None and sockets is not None
        m.partition_count.set_function(lambda: len(rm.all_partitions()))
        m.leader_count.set_function(lambda: len(rm.leader_partitions()))
        m.watch_logs(lambda: lm.log_dirs, lm.all_logs)
        m.watch_idle(sockets.idle_seconds)
        m.watch_zookeeper_state(lambda: str(zk.kazoo.state))
        observe_request_latency(zk.kazoo, m.zookeeper_request_latency.observe)
        events = controller.events
        m.controller_event_queue_size.set_function(events.queue_size)
        events.observer = m.observe_controller_event

    # -- shutdown -----------------------------------------------------------------------------

    async def shutdown(self) -> None:
        """Graceful shutdown (idempotent); see the module doc for the order."""
        if self._shutdown_done:
            return
        self._shutdown_done = True
        log.info("[BrokerServer id=%d] shutting down", self.broker_id)
        if self.started and self.config.get_bool("controlled.shutdown.enable"):
            await self._step(
                "controlled shutdown", self._controlled_shutdown(), needs_zookeeper=True
            )
        if self.metrics_server is not None:
            await self._step("metrics server", self.metrics_server.stop())
        if self.ctx is not None and self.ctx.group_coordinator is not None:
            # parked JoinGroup/SyncGroup answers go now, before the purgatories' below
            self.ctx.group_coordinator.shutdown()
        # Long polls and acks=all produces waiting in a purgatory are answered now with
        # what they have, so that they do not hold the socket server's drain below until
        # their own timeouts (a consumer that went away would hold it the longest).
        for purgatory in self.purgatories:
            purgatory.complete_all()
        if self.socket_server is not None:
            # in-flight requests get 20 s to finish, within the step's own 30 s bound
            await self._step("socket server", self.socket_server.stop(timeout_s=20))
        if self.group_store is not None:
            await self._step("group store", self.group_store.shutdown())
        if self.config_changes is not None:
            await self._step("config change listener", self.config_changes.stop())
        if self.controller is not None:
            reachable = self.zk_reachability is None or self.zk_reachability.reachable
            await self._step("controller", self.controller.shutdown(zookeeper_reachable=reachable))
        if self.replica_manager is not None:
            await self._step("replica manager", self.replica_manager.shutdown())
        if self.isr_writer is not None:
            await self._step("ISR writer", self.isr_writer.shutdown())
        for purgatory in self.purgatories:
            await self._step(f"purgatory {purgatory.name}", purgatory.shutdown())
        if self.log_manager is not None:
            self.log_manager.cleaner.stop()  # no new pass; the scheduler waits for one under way
        if self.scheduler is not None and self.scheduler.is_started:
            await self._step("scheduler", self.scheduler.shutdown())
        if self.log_manager is not None:
            await self._step(
                "log manager", asyncio.to_thread(self.log_manager.shutdown), timeout_s=None
            )
        if self.zk is not None:
            zk = self.zk
            if self.broker_id >= 0:
                await self._step(
                    "deregistration",
                    zk.deregister_broker(self.broker_id),
                    needs_zookeeper=True,
                )
            if self.zk_reachability is not None:
                self.zk_reachability.close()
            await self._step("ZooKeeper session", zk.close())
        if self.lag_monitor is not None:
            await self._step("loop lag monitor", self.lag_monitor.stop())
        log.info("[BrokerServer id=%d] shut down completed", self.broker_id)

    async def _controlled_shutdown(self) -> None:
        assert self.zk is not None and self.ctx is not None
        control = self.config.control_plane_listener
        remaining = await request_controlled_shutdown(
            self.zk,
            self.broker_id,
            self.controller.broker_epoch if self.controller else self.ctx.broker_epoch,
            listener_name=control.listener_name if control else None,
            attempts=max(1, self.config.get_int("controlled.shutdown.max.retries")),
            retry_backoff_s=self.config.get_int("controlled.shutdown.retry.backoff.ms") / 1000,
        )
        if remaining:
            log.warning("controlled shutdown left %d partitions led here", len(remaining))

    async def _step(
        self,
        what: str,
        awaitable: Awaitable[object],
        timeout_s: float | None = 30.0,
        *,
        needs_zookeeper: bool = False,
    ) -> None:
        """One shutdown step, bounded (except flushing logs, which must finish): a step
        that fails or hangs is logged and the next one runs. A step that
        ``needs_zookeeper`` is skipped, or given up, while ZooKeeper is unreachable
        (broker.zk_reachability): it would only wait out its bound."""
        log.info("shutdown: %s", what)
        reachability = self.zk_reachability if needs_zookeeper else None
        try:
            if reachability is not None and timeout_s is not None:
                await reachability.run_while_reachable(what, awaitable, timeout_s)
            else:
                await asyncio.wait_for(awaitable, timeout_s)
        except TimeoutError:
            log.error("shutdown step %r did not finish in %.0fs; moving on", what, timeout_s)
        except Exception:  # shutdown boundary: a failing step must not skip the later ones
            log.exception("shutdown step %r failed", what)
