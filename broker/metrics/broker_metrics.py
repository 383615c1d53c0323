"""``BrokerMetrics``: the metric objects of one broker, built from the declarations.

Every broker owns its own ``CollectorRegistry`` (never the process-global one), so several
brokers in one process -- the tests, ``cluster up`` in the foreground -- expose separate
numbers.

Each declared metric (``catalog``) is held here by one of three producers:
- a lock-free family (``engine``) for what the event loop updates per request or per
  event: counters and histograms that must cost one add;
- a prometheus_client metric for what is set rarely, observed off the loop (kazoo's
  thread records ZooKeeper latencies: those need prometheus_client's locks) or read by a
  callback at scrape time (``set_function``);
- a collector (``collectors``) registered by a ``watch_*`` method, for families whose
  label sets come from another object when scraped.

The attributes are built in the order the families have always been exported (lock-free
families first, as one collector, then the rest in registration order), so the
exposition keeps its layout. Update them from the broker's event loop only, except the
prometheus_client ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.exposition import generate_latest

from broker.metrics import catalog as c
from broker.metrics.catalog import Kind, MetricDef
from broker.metrics.collectors import (
    CleanerCollector,
    CounterFunction,
    FollowerLagCollector,
    GroupStoreCollector,
    GroupStoreStats,
    IdleCollector,
    LogCollector,
    LsoCollector,
    PrincipalConnectionsCollector,
)
from broker.metrics.engine import LocalCollector, LocalHistogram
from broker.metrics.lso import LsoWatch
from storage.cleaner_manager import LogCleaner
from storage.log import Log


class ThrottleRate(Protocol):
    """What the metrics read of a replication throttle."""

    def throttled_rate(self) -> float: ...


# Counters' and histograms' ``_created`` timestamps are an OpenMetrics detail that doubles
# the series a scrape stores for no use here (prometheus-client's switch is process-wide).
disable_created_metrics()  # type: ignore[no-untyped-call]


class RequestMetrics:
    """The per-API cells every request of one API updates on its way through the broker:
    its total time and Kafka's split of it (queue, local, remote, response). Resolved
    once per API (``BrokerMetrics.request_metrics``) and carried on the request, so the
    network and the handlers update them without a label lookup each."""

    __slots__ = ("local_time", "queue_time", "remote_time", "response_time", "total_time")

    def __init__(self, metrics: BrokerMetrics, api: str) -> None:
        self.total_time: LocalHistogram = metrics.request_duration.labels(api=api)
        self.queue_time: LocalHistogram = metrics.request_queue_time.labels(api=api)
        self.local_time: LocalHistogram = metrics.request_local_time.labels(api=api)
        self.remote_time: LocalHistogram = metrics.request_remote_time.labels(api=api)
        self.response_time: LocalHistogram = metrics.request_response_time.labels(api=api)


class _ClientMetrics:
    """Makes prometheus_client metrics from declarations, in one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    @staticmethod
    def _check(d: MetricDef, kind: Kind) -> None:
        if d.kind is not kind:
            raise ValueError(f"{d.name} is a {d.kind.value}")

    def counter(self, d: MetricDef) -> Counter:
        self._check(d, Kind.COUNTER)
        return Counter(d.name, d.help, d.labels, namespace=c.NAMESPACE, registry=self._registry)

    def gauge(self, d: MetricDef) -> Gauge:
        self._check(d, Kind.GAUGE)
        return Gauge(d.name, d.help, d.labels, namespace=c.NAMESPACE, registry=self._registry)

    def histogram(self, d: MetricDef) -> Histogram:
        self._check(d, Kind.HISTOGRAM)
        return Histogram(
            d.name, d.help, d.labels, namespace=c.NAMESPACE, registry=self._registry,
            buckets=d.buckets,
        )  # fmt: skip


class BrokerMetrics:
    """The metrics of one broker. Update them from the broker's event loop only (the
    per-request families are plain numbers, see ``engine``)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        local = LocalCollector()
        self.registry.register(local)
        client = _ClientMetrics(self.registry)
        self._request_metrics: dict[str, RequestMetrics] = {}

        # the lock-free families, in export order
        self.requests = local.counter(c.REQUESTS)
        self.fetch_requests = local.counter(c.FETCH_REQUESTS)
        # its two cells, made here (every fetch counts in one; both are always exported)
        self.follower_fetches = self.fetch_requests.labels(sender="follower")
        self.consumer_fetches = self.fetch_requests.labels(sender="consumer")
        self.request_duration = local.histogram(c.REQUEST_DURATION)
        self.request_queue_time = local.histogram(c.REQUEST_QUEUE_TIME)
        self.topic_bytes_in = local.counter(c.TOPIC_BYTES_IN)
        self.topic_bytes_out = local.counter(c.TOPIC_BYTES_OUT)
        self.topic_messages_in = local.counter(c.TOPIC_MESSAGES_IN)
        self.topic_messages_out = local.counter(c.TOPIC_MESSAGES_OUT)
        self.network_received_bytes = local.counter(c.NETWORK_RECEIVED_BYTES)
        self.network_sent_bytes = local.counter(c.NETWORK_SENT_BYTES)
        self.topic_bytes_rejected = local.counter(c.TOPIC_BYTES_REJECTED)
        self.failed_produce_requests = local.counter(c.TOPIC_FAILED_PRODUCE_REQUESTS)
        self.failed_fetch_requests = local.counter(c.TOPIC_FAILED_FETCH_REQUESTS)
        self.request_local_time = local.histogram(c.REQUEST_LOCAL_TIME)
        self.produce_message_conversions = local.counter(c.TOPIC_PRODUCE_MESSAGE_CONVERSIONS)
        self.fetch_message_conversions = local.counter(c.TOPIC_FETCH_MESSAGE_CONVERSIONS)
        self.message_conversions_time = local.histogram(c.MESSAGE_CONVERSIONS_TIME)
        self.request_remote_time = local.histogram(c.REQUEST_REMOTE_TIME)
        self.request_response_time = local.histogram(c.REQUEST_RESPONSE_TIME)
        self.controller_events = local.counter(c.CONTROLLER_EVENTS)
        self.controller_event_queue_time = local.histogram(c.CONTROLLER_EVENT_QUEUE_TIME)
        self.controller_event_duration = local.histogram(c.CONTROLLER_EVENT_DURATION)
        self.group_rebalances = local.counter(c.GROUP_REBALANCES)
        self.group_offset_commits = local.counter(c.GROUP_OFFSET_COMMITS)

        # prometheus_client's, in export order
        self.request_errors = client.counter(c.REQUEST_ERRORS)  # rarer than requests
        self.request_queue_size = client.gauge(c.REQUEST_QUEUE_SIZE)
        self.connections = client.gauge(c.CONNECTIONS)
        self.connections_accepted = client.counter(c.CONNECTIONS_ACCEPTED)
        self.connections_closed = client.counter(c.CONNECTIONS_CLOSED)
        self.malformed_requests = client.counter(c.MALFORMED_REQUESTS)
        self.tls_handshake_duration = client.histogram(c.TLS_HANDSHAKE_DURATION)
        self.tls_handshake_failures = client.counter(c.TLS_HANDSHAKE_FAILURES)
        self.purgatory_size = client.gauge(c.PURGATORY_SIZE)
        self.purgatory_delayed_operations = client.gauge(c.PURGATORY_DELAYED_OPERATIONS)
        self.event_loop_lag = client.gauge(c.EVENT_LOOP_LAG)
        self.event_loop_lag_histogram = client.histogram(c.EVENT_LOOP_LAG_DISTRIBUTION)
        self.controller_active = client.gauge(c.CONTROLLER_ACTIVE)
        self.offline_partitions = client.gauge(c.OFFLINE_PARTITIONS)
        self.under_replicated_partitions = client.gauge(c.UNDER_REPLICATED_PARTITIONS)
        self.under_min_isr_partitions = client.gauge(c.UNDER_MIN_ISR_PARTITIONS)
        self.isr_shrinks = client.counter(c.ISR_SHRINKS)
        self.isr_expands = client.counter(c.ISR_EXPANDS)
        self.zookeeper_connected = client.gauge(c.ZOOKEEPER_CONNECTED)
        self.replica_fetcher_max_lag = client.gauge(c.REPLICA_FETCHER_MAX_LAG)
        self.replication_throttled_rate = client.gauge(c.REPLICATION_THROTTLED_RATE)
        self.client_quota_byte_rate = client.gauge(c.CLIENT_QUOTA_BYTE_RATE)
        self.client_quota_throttle_time = client.histogram(c.CLIENT_QUOTA_THROTTLE_TIME)
        self.client_quota_throttled = client.counter(c.CLIENT_QUOTA_THROTTLED_RESPONSES)
        # kazoo's thread observes this one
        self.zookeeper_request_latency = client.histogram(c.ZOOKEEPER_REQUEST_LATENCY)
        self.zookeeper_session_state = client.gauge(c.ZOOKEEPER_SESSION_STATE)
        self.controller_event_queue_size = client.gauge(c.CONTROLLER_EVENT_QUEUE_SIZE)
        self.groups = client.gauge(c.GROUPS)
        self.transactions = client.gauge(c.TRANSACTIONS)
        self.transaction_markers_owed = client.gauge(c.TRANSACTION_MARKERS_OWED)
        self.partition_count = client.gauge(c.PARTITIONS)
        self.leader_count = client.gauge(c.LEADER_PARTITIONS)
        self.sasl_authentications = client.counter(c.SASL_AUTHENTICATIONS)
        self.sasl_reauthentications = client.counter(c.SASL_REAUTHENTICATIONS)
        self.authorization_denials = client.counter(c.AUTHORIZATION_DENIALS)
        self.worker_pool_size = client.gauge(c.WORKER_POOL_SIZE)

    def request_metrics(self, api: str) -> RequestMetrics:
        """The per-request cells of ``api`` (Kafka's name: "Fetch"), made on first use."""
        cells = self._request_metrics.get(api)
        if cells is None:
            cells = self._request_metrics[api] = RequestMetrics(self, api)
        return cells

    def watch_zookeeper_state(self, state: Callable[[], str]) -> None:
        """The session-state gauge, read at scrape time: ``state()`` is kazoo's CONNECTED,
        SUSPENDED or LOST."""
        for name in c.ZOOKEEPER_STATES:
            self.zookeeper_session_state.labels(state=name).set_function(
                lambda name=name: 1 if state() == name else 0  # type: ignore[misc]
            )

    def watch_groups(self, states: Callable[[], Mapping[str, int]]) -> None:
        """The groups-by-state gauge, read at scrape time: ``states()`` counts the groups
        in each state (by name: Empty, Stable, ...); a state it leaves out has none."""
        for name in c.GROUP_STATES:
            self.groups.labels(state=name).set_function(
                lambda name=name: states().get(name, 0)  # type: ignore[misc]
            )

    def watch_transactions(
        self, states: Callable[[], Mapping[str, int]], markers_owed: Callable[[], int]
    ) -> None:
        """The transaction coordinator's gauges, read at scrape time: ``states()`` counts
        the transactional ids in each state (by name: Ongoing, PrepareCommit, ...);
        ``markers_owed()`` the partitions whose marker is still to be written."""
        for name in c.TXN_STATES:
            self.transactions.labels(state=name).set_function(
                lambda name=name: states().get(name, 0)  # type: ignore[misc]
            )
        self.transaction_markers_owed.set_function(markers_owed)

    def observe_controller_event(self, event: str, queued_s: float, handled_s: float) -> None:
        """One handled controller event: its type name, queue time and handling time."""
        self.controller_events.labels(event=event).inc()
        self.controller_event_queue_time.labels().observe(queued_s)
        self.controller_event_duration.labels(event=event).observe(handled_s)

    def watch_logs(self, log_dirs: Callable[[], list[str]], logs: Callable[[], list[Log]]) -> None:
        """Per-partition log gauges and per-directory disk usage, read at scrape time."""
        self.registry.register(LogCollector(log_dirs, logs))

    def watch_last_stable_offsets(
        self, logs: Callable[[], list[Log]], now: Callable[[], float]
    ) -> None:
        """The LSO lag gauges (broker.metrics.lso), read from the logs at scrape time;
        ``now()``: monotonic seconds, for how long an LSO has stayed put."""
        self.registry.register(LsoCollector(logs, LsoWatch(now)))

    def watch_idle(self, idle: Callable[[], Iterable[tuple[str, str, float]]]) -> None:
        """Network processors' and request handlers' idle seconds, read at scrape time:
        ``idle()`` yields (family, label value, seconds), family being ``processor``
        (labelled by processor name) or ``handler`` (by request plane)."""
        self.registry.register(IdleCollector(idle))

    def watch_connection_principals(
        self, counts: Callable[[], Mapping[tuple[str, str], int]]
    ) -> None:
        """Open connections per (listener, principal), read at scrape time."""
        self.registry.register(PrincipalConnectionsCollector(counts))

    # gauges read at scrape time ------------------------------------------------------------

    def watch_pool_size(self, pool: str, size: Callable[[], int]) -> None:
        """How many workers ``pool`` runs now (a dynamic thread-count change shows here)."""
        self.worker_pool_size.labels(pool=pool).set_function(size)

    def watch_request_queue(self, plane: str, size: Callable[[], int]) -> None:
        self.request_queue_size.labels(plane=plane).set_function(size)

    def watch_purgatory(
        self, name: str, size: Callable[[], int], delayed: Callable[[], int] | None = None
    ) -> None:
        self.purgatory_size.labels(purgatory=name).set_function(size)
        if delayed is not None:
            self.purgatory_delayed_operations.labels(purgatory=name).set_function(delayed)

    def watch_follower_lags(self, lags: Callable[[], dict[int, list[int]]]) -> None:
        """The followers' lag behind this leader, read at scrape time from ``lags``
        (per follower broker id, its lag in each partition led here)."""
        self.registry.register(FollowerLagCollector(lags))

    def watch_replication_throttles(self, leader: ThrottleRate, follower: ThrottleRate) -> None:
        """The throttled byte rates of both sides (``side`` leader / follower), measured by
        their quotas at scrape time."""
        for side, throttle in (("leader", leader), ("follower", follower)):
            self.replication_throttled_rate.labels(side=side).set_function(throttle.throttled_rate)

    def watch_cleaner(self, cleaner: LogCleaner) -> None:
        """The log cleaner's numbers, read from it at scrape time."""
        self.registry.register(CleanerCollector(cleaner))

    def watch_unclean_leader_elections(self, count: Callable[[], int]) -> None:
        """Kafka's UncleanLeaderElectionsPerSec as a counter: the unclean leader elections
        this broker made while controller (``minikafka_unclean_leader_elections_total``)."""
        self.registry.register(CounterFunction(c.UNCLEAN_LEADER_ELECTIONS, count))

    def watch_group_store(self, store: GroupStoreStats) -> None:
        """The group coordinator's store: committed offsets held, expired and deleted,
        and each group's lag, read from it at scrape time."""
        self.registry.register(GroupStoreCollector(store))

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric of this broker."""
        return generate_latest(self.registry)
