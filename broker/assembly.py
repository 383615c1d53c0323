"""The broker's object graph and its start-up steps, in Kafka's order (KafkaServer.startup).

Each service is built once, complete, by the step that starts it: some of what a
service is built with is only known once an earlier step ran (the broker id comes from
ZooKeeper, the controller registers the ports the listeners were bound to), so building
and starting go together, step by step. The attributes below are set by their step and
read only by later steps and by the stops of started steps (``broker.lifecycle`` stops
only what started), so none is optional.

Start order (``BrokerAssembly.steps``), each step's stop undoing it in reverse. What a
stop undoes gets a step of its own as soon as it exists (the ZooKeeper session before the
reads that may fail on it, the controller before it registers), so a start that fails
half-way still undoes it:

1. the event-loop lag probe (first in, last out: it measures the whole shutdown);
2. meta.properties, then the LogManager loads every log (recovering the ones without a
   clean-shutdown marker; on a worker thread); its stop flushes every log, writes the
   checkpoints and the clean-shutdown marker, and is the one stop without a bound (a
   load that failed or was cancelled is neither flushed nor marked clean: the next
   start recovers the logs again);
3. ZooKeeper: connect (retrying while unreachable), Kafka's top-level paths, the cluster
   id (checked against meta.properties), the broker id (configured, from meta.properties
   or generated), meta.properties written; stop: close the session. Then, as a step of
   its own, removing our registration (its stop needs ZooKeeper);
4. the Scheduler; the purgatories (``broker.purgatories``); the ISR writer and the
   ReplicaManager (with the metadata cache); the group store and the group coordinator
   (with its two purgatories); the transaction coordinator (its store, its marker
   channel, the producer id allocator it shares with idempotent producers, its two
   periodic tasks); then the periodic tasks (``scheduled_tasks``), once all they call
   exists;
5. the SCRAM credential cache, loaded from /config/users (before the listeners open, so
   the first connection can log in; ``credential_cache``, the SASL authenticator's
   source) and the client quotas from /config/users and /config/clients
   (``broker.client_quotas``), with the authorizer on the ACLs loaded from ZooKeeper
   and their change notifications followed (``broker.auth.acl_watcher``), the handler
   families (``broker.apis.services``), the readiness gate and KafkaApis, then the
   SocketServer (data and control planes);
6. the controller: it registers /brokers/ids/<id> and joins the election; then the
   config change listener (``broker.config_changes``: dynamic configs, the SCRAM
   credentials and client quotas changed since the load) and the gauges;
7. the metrics HTTP endpoint.

Where shutdown must not be the plain reverse, a step exists only for its stop, placed
where that stop belongs:

- "controlled shutdown" is last: its stop runs first (moving our leaderships away while
  everything still serves), and only after a complete start;
- "parked answers" and "request drain" follow the controller: before anything else
  stops, the JoinGroup/SyncGroup answers the coordinator holds and the long polls and
  acks=all produces waiting in the purgatories are answered with what they have (so
  they do not hold the drain until their timeouts), then the listeners close and
  in-flight requests finish (20 s within the step's 30 s) while the controller and the
  config listener still run. The socket server's own stop, reached later, is then a
  no-op; it stops the listeners itself when start-up failed before the drain step;
- "log cleaner" follows the scheduler: no new cleaning pass starts, and the scheduler's
  stop waits for one under way.

Elsewhere the plain reverse is the order: the group store stops after the controller and
the config listener (neither uses it), the work the handlers left running (CreateTopics'
waits for its peers, requests held for readiness) is cancelled once the listeners have
drained, and our registration and the ZooKeeper session end before the logs are flushed
(the flush needs neither; the flush is still the last stop but for the lag probe's).

Back-references, bound here because the two objects need each other (each is set once,
in the step that builds the later of the two):

- the ReplicaManager tells the group store and the transaction store of leadership
  changes, and both append through the ReplicaManager (``on_leadership_change``);
- the transaction store tells the transaction coordinator of partitions loaded and
  unloaded (``store.listener``);
- the group store tells the coordinator of groups loaded and unloaded, and the
  coordinator works on the store's groups (``store.listener``);
- the handlers reach the controller, which can only be built once the listeners are
  bound (it registers their ports), while the listeners serve the handlers from the
  moment they are bound (``ControllerLink.attach``);
- the dynamic broker config replaces ``BrokerBasics.config`` (``DynamicConfigApplier``).
"""

from __future__ import annotations

import asyncio
import logging
import secrets

from broker.apis import KafkaApis, error_response
from broker.apis.services import (
    AclAdmin,
    BrokerBasics,
    ClusterAdmin,
    ConfigAdmin,
    ControllerLink,
    GroupAccess,
    HandlerServices,
    ProducerIds,
    QuotaAdmin,
    ReplicaAccess,
    ScramAdmin,
    TopicAdmin,
    Transactions,
)
from broker.apis.write_txn_markers import local_marker_writer
from broker.auth.acl_watcher import AclChangeListener
from broker.auth.wiring import access_control, start_acl_listener
from broker.background import BackgroundTasks
from broker.blocking import in_thread
from broker.client_quotas.manager import ClientQuotas
from broker.client_quotas.observer import MetricsObserver
from broker.component_settings import (
    broker_registration,
    control_channel_config,
    controller_config,
    fetcher_config,
    min_insync_replicas,
    replication_throttle,
)
from broker.config import BrokerConfig
from broker.config_changes import ConfigChangeListener, DynamicConfigApplier
from broker.controlled_shutdown import request_controlled_shutdown
from broker.dynamic_pools import PoolResizer
from broker.fetch_session import FetchSessionCache
from broker.gauges import watch_gauges, watch_operator_metrics
from broker.group.coordinator import GroupCoordinator
from broker.group.manager import GroupMetadataManager
from broker.group.wiring import build_group_coordinator, build_group_store
from broker.isr_zk import IsrChangePropagator, ZkIsrWriter
from broker.lifecycle import Step
from broker.metadata_cache import MetadataCache
from broker.metrics import BrokerMetrics, EventLoopLagMonitor, MetricsHttpServer
from broker.network import Codec, SocketServer
from broker.periodic_tasks import ISR_PROPAGATION, periodic_tasks
from broker.producer_id_manager import ProducerIdManager
from broker.purgatories import BrokerPurgatories
from broker.readiness import ReadinessGate, not_ready_reason
from broker.replica_manager import ClusterView, ReplicaManager, ReplicaManagerServices
from broker.replication import ReplicaFetcherManager
from broker.replication.throttle import ThrottleSide
from broker.security.credential_cache import ScramCredentialCache
from broker.security.sasl_listener import listener_configs, sasl_authenticators
from broker.startup import StartupError, ZkConnect, connect_zookeeper, on_loop
from broker.txn.coordinator import TransactionCoordinator
from broker.txn.store import TransactionStateManager
from broker.txn.verification import PartitionVerifier
from broker.txn.wiring import (
    build_partition_verifier,
    build_transaction_coordinator,
    serve_markers_locally,
    txn_tasks,
)
from broker.zk_reachability import ZooKeeperReachability
from controller.controller import KafkaController
from controller.tcp_channel import TcpChannelManager
from storage import LogManager, LogManagerConfig, TaskSpec
from storage.meta import (
    MetaProperties,
    check_cluster_id,
    read_meta_properties,
    resolve_broker_id,
    write_meta_properties,
)
from timer import Scheduler
from timer.clock import Clock
from zk.facade import ZkFacade
from zk.store import ZkPartitionStateStore

log = logging.getLogger(__name__)

#: how long the listeners' drain lets in-flight requests finish (within its step's bound)
DRAIN_TIMEOUT_S = 20.0


class BrokerAssembly:
    """One broker's services, built and started by :meth:`steps` in order."""

    # set by the "log manager" step
    _found: dict[str, MetaProperties | None]
    log_manager: LogManager
    # by "ZooKeeper"
    zk: ZkFacade
    zk_reachability: ZooKeeperReachability
    cluster_id: str
    #: -1 until ZooKeeper gave or confirmed it
    broker_id: int = -1
    # by "scheduler"
    scheduler: Scheduler
    # by "replica manager"
    basics: BrokerBasics
    isr_writer: ZkIsrWriter
    isr_propagator: IsrChangePropagator
    replica_manager: ReplicaManager
    #: resizes the fetchers, the scheduler and the cleaner on a dynamic config
    pools: PoolResizer
    # by "group store" and "group coordinator"
    group_store: GroupMetadataManager
    group_coordinator: GroupCoordinator
    # by "transaction coordinator"
    producer_id_manager: ProducerIdManager
    txn_store: TransactionStateManager
    txn_coordinator: TransactionCoordinator
    txn_verifier: PartitionVerifier
    # by "SCRAM credentials": what SASL/SCRAM logins are checked against
    credential_cache: ScramCredentialCache
    # by "client quotas": the byte-rate quotas Produce and Fetch are throttled by
    client_quotas: ClientQuotas
    # by "ACLs": keeps the authorizer's cache (None: no authorizer)
    acl_listener: AclChangeListener | None
    # by "request handlers" and "socket server"
    services: HandlerServices
    _applier: DynamicConfigApplier
    gate: ReadinessGate
    apis: KafkaApis
    socket_server: SocketServer
    # by "controller" and "config change listener"
    controller: KafkaController
    config_changes: ConfigChangeListener
    # by "metrics server" and "loop lag monitor"
    metrics_server: MetricsHttpServer | None  # None: metrics.port is -1
    lag_monitor: EventLoopLagMonitor

    def __init__(
        self, config: BrokerConfig, clock: Clock, metrics: BrokerMetrics, zk_connect: ZkConnect
    ) -> None:
        self.config = config
        self.clock = clock
        self.metrics = metrics
        self._zk_connect = zk_connect
        #: this broker's controller as the handlers reach it (attached by "controller")
        self.controller_link = ControllerLink()
        #: CreateTopics' waits for its peers, cancelled with "request handlers"
        self.topic_tasks = BackgroundTasks("topic admin")
        #: each set by its own step (``broker.purgatories``)
        self.purgatories = BrokerPurgatories(clock, metrics, lambda: self.broker_id)

    def reachability(self) -> ZooKeeperReachability | None:
        """The ZooKeeper connection's watch, once connected."""
        return getattr(self, "zk_reachability", None)

    def steps(self) -> list[Step]:
        """Every start-up step in order; shutdown stops the started ones in reverse."""
        return [
            Step("loop lag monitor", self._start_lag_monitor, lambda: self.lag_monitor.stop()),
            Step("log manager", self._start_log_manager, self._flush_logs, bound_s=None),
            Step("ZooKeeper session", self._connect_zookeeper, self._close_zookeeper),
            Step("broker identity", self._establish_identity),
            Step("deregistration", None, self._deregister, needs_zookeeper=True),
            Step("scheduler", self._start_scheduler, lambda: self.scheduler.shutdown()),
            Step("log cleaner", None, self._stop_log_cleaner),
            *self.purgatories.replica_steps(),
            Step("ISR writer", self._start_isr_writer, lambda: self.isr_writer.shutdown()),
            Step("replica manager", self._start_replica_manager,
                 lambda: self.replica_manager.shutdown()),
            Step("group store", self._start_group_store, lambda: self.group_store.shutdown()),
            *self.purgatories.group_steps(),
            Step("group coordinator", self._start_group_coordinator,
                 lambda: self.group_coordinator.close()),
            Step("transaction coordinator", self._start_txn_coordinator,
                 self._stop_txn_coordinator),
            Step("periodic tasks", self._schedule_tasks),
            Step("SCRAM credentials", self._load_credentials),
            Step("client quotas", self._load_client_quotas),
            Step("ACLs", self._start_acls, self._stop_acls),
            Step("request handlers", self._start_handlers, self._close_handlers),
            Step("socket server", self._start_socket_server, self._drain_requests),
            Step("controller", self._build_controller, self._stop_controller),
            Step("registration and election", self._start_controller),
            Step("config change listener", self._start_config_changes,
                 lambda: self.config_changes.stop()),
            Step("gauges", self._watch_metrics),
            Step("request drain", None, self._drain_requests),
            Step("parked answers", None, self._answer_parked),
            Step("metrics server", self._start_metrics_server, self._stop_metrics_server),
            Step("controlled shutdown", None, self._controlled_shutdown, needs_zookeeper=True),
        ]  # fmt: skip

    # -- storage and ZooKeeper -----------------------------------------------------------

    async def _start_lag_monitor(self) -> None:
        self.lag_monitor = EventLoopLagMonitor(self.metrics)
        self.lag_monitor.start()

    async def _start_log_manager(self) -> None:
        config = self.config
        self._found = await asyncio.to_thread(read_meta_properties, config.log_dirs)
        log_manager = LogManager(
            LogManagerConfig.from_layers(config.config_layers),
            self.clock,
            on_owner=on_loop(asyncio.get_running_loop()),
        )
        self.metrics.watch_cleaner(log_manager.cleaner)
        await asyncio.to_thread(log_manager.load_logs)
        self.log_manager = log_manager
        log.info("loaded %d logs from %s", len(log_manager.all_logs()), config.log_dirs)

    async def _flush_logs(self) -> None:
        await asyncio.to_thread(self.log_manager.shutdown)

    async def _connect_zookeeper(self) -> None:
        zk = await connect_zookeeper(self.config, self._zk_connect)
        self.zk = zk
        self.zk_reachability = ZooKeeperReachability(zk.kazoo)

    async def _establish_identity(self) -> None:
        """Kafka's top-level paths, the cluster id and the broker id, in ZooKeeper and in
        meta.properties."""
        config, found, zk = self.config, self._found, self.zk
        await zk.ensure_persistent_paths()
        self.cluster_id = await zk.get_or_create_cluster_id(None)
        check_cluster_id(found, self.cluster_id)
        configured = config.broker_id if config.broker_id >= 0 else None
        broker_id = resolve_broker_id(found, configured)
        if broker_id is None:
            if not config.get_bool("broker.id.generation.enable"):
                raise StartupError("broker.id is not set and broker.id.generation.enable is false")
            broker_id = await zk.generate_broker_id(config.get_int("reserved.broker.max.id"))
            log.info("generated broker id %d from /brokers/seqid", broker_id)
        self.broker_id = broker_id
        await asyncio.to_thread(
            write_meta_properties, config.log_dirs, broker_id, self.cluster_id, found
        )

    async def _close_zookeeper(self) -> None:
        self.zk_reachability.close()
        await self.zk.close()

    async def _deregister(self) -> None:
        await self.zk.deregister_broker(self.broker_id)

    # -- the replica side ----------------------------------------------------------------

    async def _start_scheduler(self) -> None:
        threads = self.config.get_int("background.threads")
        self.scheduler = Scheduler(self.clock, threads=threads, name="kafka-scheduler")
        self.scheduler.start()

    async def _stop_log_cleaner(self) -> None:
        self.log_manager.cleaner.stop()  # no new pass; the scheduler waits for one under way

    async def _start_isr_writer(self) -> None:
        self.isr_writer = ZkIsrWriter(self.zk)

    async def _start_replica_manager(self) -> None:
        cache = MetadataCache(self.broker_id)
        self.basics = BrokerBasics(
            broker_id=self.broker_id,
            cluster_id=self.cluster_id,
            clock=self.clock,
            config=self.config,
            metadata_cache=cache,
            topic_configs=self.log_manager.topic_configs,
            access=access_control(self.config, self.metrics),
        )
        zk = self.zk
        self.isr_propagator = IsrChangePropagator(
            self.clock, zk.propagate_isr_change, ISR_PROPAGATION
        )
        leader_throttle = replication_throttle(self.basics, ThrottleSide.LEADER)
        follower_throttle = replication_throttle(self.basics, ThrottleSide.FOLLOWER)
        self.metrics.watch_replication_throttles(leader_throttle, follower_throttle)
        fetchers = ReplicaFetcherManager(
            fetcher_config(self.config, self.broker_id), self.clock, throttle=follower_throttle
        )
        self.metrics.replica_fetcher_max_lag.set_function(fetchers.max_lag)
        self.pools = PoolResizer(fetchers, self.scheduler, self.log_manager.cleaner)
        listener = self.config.inter_broker_listener_name
        services = ReplicaManagerServices(
            log_manager=self.log_manager,
            produce_purgatory=self.purgatories.produce,
            fetch_purgatory=self.purgatories.fetch,
            delete_records_purgatory=self.purgatories.delete_records,
            metrics=self.metrics,
            clock=self.clock,
            run_blocking=in_thread,
            isr_writer=self.isr_writer,
            isr_propagator=self.isr_propagator,
            replica_fetchers=fetchers,
            leader_throttle=leader_throttle,
        )
        cluster = ClusterView(
            min_insync_replicas=min_insync_replicas(self.basics),
            is_known_partition=lambda topic, p: cache.partition(topic, p) is not None,
            is_alive_broker=cache.has_alive_broker,
            leader_endpoint=lambda broker_id: cache.alive_endpoint(broker_id, listener),
        )
        self.replica_manager = ReplicaManager(
            self.broker_id,
            services,
            cluster,
            replica_lag_time_max_ms=self.config.get_int("replica.lag.time.max.ms"),
        )

    # -- groups --------------------------------------------------------------------------

    async def _start_group_store(self) -> None:
        """``__consumer_offsets`` partitions load and unload as the ReplicaManager's
        leaderships change (broker.group.wiring)."""
        self.group_store = build_group_store(
            self.basics, self.zk, self.replica_manager, self.metrics
        )

    async def _start_group_coordinator(self) -> None:
        """The classic group protocol over the store's groups (broker.group.wiring)."""
        purgatories = self.purgatories
        self.group_coordinator = build_group_coordinator(
            self.basics, self.group_store, purgatories.rebalance, purgatories.heartbeat,
            self.metrics,
        )  # fmt: skip

    async def _start_txn_coordinator(self) -> None:
        """The transaction coordinator (broker.txn.wiring), with the producer id
        allocator it shares with idempotent producers."""
        self.producer_id_manager = ProducerIdManager(self.broker_id, self.zk)
        self.txn_store, self.txn_coordinator = build_transaction_coordinator(
            self.basics, self.zk, self.replica_manager, self.producer_id_manager,
            self.group_store,
        )  # fmt: skip
        coordinator = self.txn_coordinator
        self.txn_verifier = build_partition_verifier(self.basics, self.txn_store, coordinator)
        self.metrics.watch_transactions(coordinator.states, coordinator.markers.queued)

    async def _stop_txn_coordinator(self) -> None:
        await self.txn_verifier.close()
        await self.txn_coordinator.close()
        await self.txn_store.shutdown()

    async def _schedule_tasks(self) -> None:
        for task in self.scheduled_tasks():
            self.scheduler.schedule(
                task.name, task.fn, task.delay_ms, task.period_ms, task.blocking
            )

    def scheduled_tasks(self) -> list[TaskSpec]:
        """Every periodic task the broker schedules at startup (``broker.periodic_tasks``)."""
        return periodic_tasks(
            self.config, self.log_manager, self.replica_manager, self.isr_propagator,
            self.group_store,
        ) + txn_tasks(self.txn_coordinator)  # fmt: skip

    # -- serving -------------------------------------------------------------------------

    async def _load_credentials(self) -> None:
        cache = ScramCredentialCache()
        cache.replace_all(await self.zk.get_all_user_credentials())
        self.credential_cache = cache
        log.info("loaded the SCRAM credentials of %d users", len(cache.users()))

    async def _load_client_quotas(self) -> None:
        config = self.config
        quotas = ClientQuotas(
            config.get_int("quota.window.num"),
            config.get_int("quota.window.size.seconds") * 1000,
            MetricsObserver(self.metrics),
        )
        quotas.replace_all(await self.zk.get_all_client_quotas())
        self.client_quotas = quotas
        log.info("loaded the client quotas of %d entities", len(quotas.table()))

    async def _start_acls(self) -> None:
        self.acl_listener = await start_acl_listener(self.basics.access, self.zk, self.clock)

    async def _stop_acls(self) -> None:
        if self.acl_listener is not None:
            await self.acl_listener.stop()

    async def _start_handlers(self) -> None:
        basics, link = self.basics, self.controller_link
        applier = DynamicConfigApplier(
            basics, self.log_manager, self.credential_cache, self.client_quotas
        )
        self.services = HandlerServices(
            replicas=ReplicaAccess(
                basics,
                replica_manager=self.replica_manager,
                event_loop=asyncio.get_running_loop(),
                metrics=self.metrics,
                controller=link,
                zk=self.zk,
                topic_purgatory=self.purgatories.topic,
                group_store=self.group_store,
                fetch_sessions=FetchSessionCache(
                    basics.config.get_int("max.incremental.fetch.session.cache.slots"),
                    lambda: secrets.randbelow(0x7FFFFFFF) + 1,
                    self.replica_manager.fetch_news,
                ),
                verifier=self.txn_verifier,
            ),
            topics=TopicAdmin(
                basics,
                zk=self.zk,
                controller=link,
                topic_purgatory=self.purgatories.topic,
                tasks=self.topic_tasks,
            ),
            groups=GroupAccess(
                basics,
                coordinator=self.group_coordinator,
                store=self.group_store,
                zk=self.zk,
                transactions=self.txn_coordinator,
            ),
            configs=ConfigAdmin(basics, zk=self.zk, applier=applier),
            cluster=ClusterAdmin(basics, controller=link, log_manager=self.log_manager),
            producer_ids=ProducerIds(
                basics, manager=self.producer_id_manager, transactions=self.txn_coordinator
            ),
            scram=ScramAdmin(basics, zk=self.zk, controller=link, cache=self.credential_cache),
            transactions=Transactions(basics, coordinator=self.txn_coordinator),
            acls=AclAdmin(basics, zk=self.zk),
            quotas=QuotaAdmin(basics, zk=self.zk, quotas=self.client_quotas),
        )
        self._applier = applier
        # dynamic num.replica.fetchers, background.threads, log.cleaner.*
        applier.on_broker_config(self.pools.on_config)
        # the coordinator's markers for partitions led here: appended in-process
        serve_markers_locally(
            self.txn_coordinator, self.broker_id, local_marker_writer(self.services.replicas)
        )
        cache, broker_id = basics.metadata_cache, self.broker_id
        # client requests wait until this broker is registered and its cache lists it
        self.gate = ReadinessGate(
            lambda: not_ready_reason(link.broker_epoch >= 0, cache.has_alive_broker(broker_id)),
            self.clock,
            error_response,
        )
        self.apis = KafkaApis(self.services, self.metrics, gate=self.gate)

    async def _close_handlers(self) -> None:
        """Cancel the work the handlers left running (CreateTopics' waits for its peers,
        requests still held for readiness): the listeners have drained by now."""
        await self.topic_tasks.close()
        await self.gate.close()

    async def _start_socket_server(self) -> None:
        config = self.config
        # SASL listeners: refused here, naming the key, when misconfigured; SCRAM logins
        # are checked against the credential cache
        authenticators = sasl_authenticators(
            listener_configs(config), self.credential_cache, self.metrics
        )
        server = SocketServer(
            config,
            self.apis.handle,
            codec=Codec.default(error_response),
            metrics=self.metrics,
            authenticators=authenticators,
        )
        await server.start()
        self.socket_server = server
        # certificates of TLS listeners reloaded on a dynamic config change
        self._applier.on_broker_config(server.reconfigure)

    async def _drain_requests(self) -> None:
        await self.socket_server.stop(timeout_s=DRAIN_TIMEOUT_S)

    async def _answer_parked(self) -> None:
        # parked JoinGroup/SyncGroup answers go now, before the purgatories' below
        self.group_coordinator.shutdown()
        # Long polls and acks=all produces waiting in a purgatory are answered now with
        # what they have, so that they do not hold the socket server's drain until their
        # own timeouts (a consumer that went away would hold it the longest).
        self.purgatories.complete_all()

    # -- the controller and dynamic configuration ----------------------------------------

    async def _build_controller(self) -> None:
        channel = TcpChannelManager(self.broker_id, control_channel_config(self.config))
        controller = KafkaController(
            self.zk,
            broker_registration(self.config, self.broker_id, self.socket_server.bound_port),
            channel,
            self.clock,
            controller_config(self.config),
            store=ZkPartitionStateStore(self.zk),
            scheduler=self.scheduler,
        )
        self.controller = controller
        self.controller_link.attach(controller)  # back-reference: see the module doc

    async def _start_controller(self) -> None:
        await self.controller.start()
        self.gate.check()  # registered; ready once the controller's metadata lists us

    async def _stop_controller(self) -> None:
        await self.controller.shutdown(zookeeper_reachable=self.zk_reachability.reachable)

    async def _start_config_changes(self) -> None:
        self.config_changes = ConfigChangeListener(self._applier, self.zk)
        await self.config_changes.start()

    async def _controlled_shutdown(self) -> None:
        """Ask the controller to move our leaderships away, when enabled."""
        config = self.config
        if not config.get_bool("controlled.shutdown.enable"):
            return
        remaining = await request_controlled_shutdown(
            self.zk,
            self.broker_id,
            self.controller.broker_epoch,
            config=control_channel_config(config),
            attempts=max(1, config.get_int("controlled.shutdown.max.retries")),
            retry_backoff_s=config.get_int("controlled.shutdown.retry.backoff.ms") / 1000,
        )
        if remaining:
            log.warning("controlled shutdown left %d partitions led here", len(remaining))

    # -- metrics -------------------------------------------------------------------------

    async def _watch_metrics(self) -> None:
        controller, zk = self.controller, self.zk
        watch_gauges(self.metrics, controller, zk)
        watch_operator_metrics(
            self.metrics, self.replica_manager, self.log_manager, zk, controller, self.socket_server
        )
        self.pools.watch(self.metrics, self.socket_server)

    async def _start_metrics_server(self) -> None:
        self.metrics_server = None
        port = self.config.get_int("metrics.port")
        if port >= 0:
            host = self.config.get_str("metrics.host") or "127.0.0.1"
            self.metrics_server = MetricsHttpServer(self.metrics, port, host)
            await self.metrics_server.start()

    async def _stop_metrics_server(self) -> None:
        if self.metrics_server is not None:
            await self.metrics_server.stop()
