"""Every metric a broker exposes, declared once: name, type, help text, labels, and
whether operators rely on it.

A declaration is a ``MetricDef``; the module-level constants below are the whole table,
grouped by what they measure. Whoever produces the numbers -- a
lock-free family on the request path (``engine``), a prometheus_client metric, or a
collector that reads another object at scrape time (``collectors``) -- takes its name,
help and labels from here, so a series cannot be renamed in one place and listed under
its old name in another.

Operator-facing metrics (``operator=True``) are the ones the alert rules and the Grafana
dashboard under ``monitoring/`` may name: Kafka's JMX metrics under Prometheus names.
``OPERATOR_METRICS`` is derived from the flags, keyed by the name a scrape shows (a
counter with its ``_total``, a histogram by its base name). A unit test scrapes a broker
against it and checks that the rules and the dashboard name nothing else, so a renamed
series fails a test instead of leaving an empty panel. Totals over all topics are
``sum without (topic)`` in PromQL (the recording rules), not series of their own.

Names follow Prometheus conventions: the ``minikafka_`` namespace (added here, not in the
declarations), base units (seconds, bytes), ``_total`` on counters (added by the
exposition), histograms for durations.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from broker.group.model import GroupState
from broker.txn.states import TxnState

NAMESPACE = "minikafka"

#: request latencies from 100 us to 60 s (long-poll fetches sit near their max_wait_ms)
DURATION_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
LAG_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)

#: the classic group protocol's states, each a label value of ``groups`` (the enum's
#: order, which is the order the gauge exports them in)
GROUP_STATES = tuple(state.value for state in GroupState)

#: the transaction states, each a label value of ``transactions``
TXN_STATES = tuple(state.display for state in TxnState)

#: kazoo's connection states, each a label value of ``zookeeper_session_state``
ZOOKEEPER_STATES = ("CONNECTED", "SUSPENDED", "LOST")


class Kind(enum.Enum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


@dataclass(frozen=True, slots=True)
class MetricDef:
    """One metric family. ``name`` is without the namespace and without a counter's
    ``_total``; ``buckets`` is set for histograms only."""

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...]
    operator: bool
    buckets: tuple[float, ...] = ()

    @property
    def full_name(self) -> str:
        """The family's name in the registry: namespaced."""
        return f"{NAMESPACE}_{self.name}"

    @property
    def exposed_name(self) -> str:
        """The name the rules and panels use: a counter's samples carry ``_total``."""
        return self.full_name + "_total" if self.kind is Kind.COUNTER else self.full_name


_declared: list[MetricDef] = []


def _declare(definition: MetricDef) -> MetricDef:
    if any(d.name == definition.name for d in _declared):
        raise ValueError(f"metric {definition.name} declared twice")
    _declared.append(definition)
    return definition


def _counter(name: str, help: str, labels: tuple[str, ...] = (), *, operator: bool) -> MetricDef:
    return _declare(MetricDef(name, Kind.COUNTER, help, labels, operator))


def _gauge(name: str, help: str, labels: tuple[str, ...] = (), *, operator: bool) -> MetricDef:
    return _declare(MetricDef(name, Kind.GAUGE, help, labels, operator))


def _histogram(
    name: str, help: str, labels: tuple[str, ...], buckets: tuple[float, ...], *, operator: bool
) -> MetricDef:
    return _declare(MetricDef(name, Kind.HISTOGRAM, help, labels, operator, buckets))


# --- requests -------------------------------------------------------------------------------

# by API name (ApiKey names: "Produce", "Fetch", ...)
REQUESTS = _counter("requests", "Requests received", ("api", "listener"), operator=True)
# Fetch split by sender, as Kafka's FetchConsumer / FetchFollower request metrics: since
# followers replicate, most Fetch requests a leader sees are theirs
FETCH_REQUESTS = _counter(
    "fetch_requests",
    "Fetch requests by sender (consumer or follower)",
    ("sender",),
    operator=False,
)
REQUEST_ERRORS = _counter(
    "request_errors",
    "Error codes returned, per API and error name",
    ("api", "error"),
    operator=True,
)
REQUEST_DURATION = _histogram(
    "request_duration_seconds",
    "Time from a request's last byte read to its response's last byte written",
    ("api",),
    DURATION_BUCKETS,
    operator=True,
)
REQUEST_QUEUE_TIME = _histogram(
    "request_queue_time_seconds",
    "Time a request waited in the request channel for a handler",
    ("api",),
    DURATION_BUCKETS,
    operator=True,
)
REQUEST_QUEUE_SIZE = _gauge(
    "request_queue_size", "Requests waiting for a handler", ("plane",), operator=True
)
WORKER_POOL_SIZE = _gauge(
    "worker_pool_size",
    "Workers of a pool the dynamic thread-count keys size: request handlers, network "
    "processors, replica fetchers, log cleaner threads, scheduler threads",
    ("pool",),
    operator=False,
)

# --- per-topic traffic ----------------------------------------------------------------------

TOPIC_BYTES_IN = _counter("topic_bytes_in", "Record bytes appended", ("topic",), operator=True)
TOPIC_BYTES_OUT = _counter("topic_bytes_out", "Record bytes fetched", ("topic",), operator=True)
TOPIC_MESSAGES_IN = _counter("topic_messages_in", "Records appended", ("topic",), operator=True)
TOPIC_MESSAGES_OUT = _counter(
    "topic_messages_out",
    "Records fetched (counted per batch header, without reading records)",
    ("topic",),
    operator=False,
)

# --- network --------------------------------------------------------------------------------

CONNECTIONS = _gauge("connections", "Open client connections", ("listener",), operator=True)
CONNECTIONS_ACCEPTED = _counter(
    "connections_accepted", "Connections accepted", ("listener",), operator=False
)
CONNECTIONS_CLOSED = _counter(
    "connections_closed",
    "Connections closed, by reason",
    ("listener", "reason"),
    operator=False,
)
NETWORK_RECEIVED_BYTES = _counter(
    "network_received_bytes", "Bytes read", ("listener",), operator=True
)
NETWORK_SENT_BYTES = _counter("network_sent_bytes", "Bytes written", ("listener",), operator=True)
MALFORMED_REQUESTS = _counter(
    "malformed_requests", "Frames that could not be parsed", ("listener",), operator=False
)
TLS_HANDSHAKE_DURATION = _histogram(
    "tls_handshake_duration_seconds",
    "Time from accepting a TLS connection to its completed handshake",
    ("listener",),
    DURATION_BUCKETS,
    operator=False,
)
TLS_HANDSHAKE_FAILURES = _counter(
    "tls_handshake_failures",
    "TLS handshakes that failed (bad ClientHello, untrusted certificate) or timed out",
    ("listener",),
    operator=False,
)

# --- authentication -------------------------------------------------------------------------

# Kafka's successful-/failed-authentication-total per listener, split by mechanism. The
# mechanism label is one the listener enables, or "unsupported" for a handshake naming
# another (never the client's text: labels must not be any peer's to choose).
SASL_AUTHENTICATIONS = _counter(
    "sasl_authentications",
    "SASL authentications, per listener, mechanism and result (success or failure)",
    ("listener", "mechanism", "result"),
    operator=True,
)
SASL_REAUTHENTICATIONS = _counter(
    "sasl_reauthentications",
    "SASL re-authentications of live connections (KIP-368), per listener, mechanism, result",
    ("listener", "mechanism", "result"),
    operator=False,
)
# --- authorization ---------------------------------------------------------------------------

# Requests (or the resources of a request) the authorizer refused, per API (Kafka's name)
# and resource type: both labels come from fixed tables, never from a client's text.
AUTHORIZATION_DENIALS = _counter(
    "authorization_denials",
    "authorization checks denied, per API and resource type (topic, group, cluster, ...)",
    ("api", "resource_type"),
    operator=True,
)
# Open connections per listener and principal, counted from the connections at scrape
# time: a principal has a series only while it has connections, and only principals that
# authenticated (a configured user, a mapped certificate) or User:ANONYMOUS appear, so no
# unauthenticated peer can add one. The busiest PRINCIPALS_PER_LISTENER of a listener
# are listed by name, the rest summed under principal="other".
CONNECTIONS_BY_PRINCIPAL = _gauge(
    "connections_by_principal",
    "Open connections per listener and authenticated principal (the busiest few by name)",
    ("listener", "principal"),
    operator=True,
)
PRINCIPALS_PER_LISTENER = 20

# --- broker state ---------------------------------------------------------------------------

PURGATORY_SIZE = _gauge(
    "purgatory_size", "Delayed operations waiting, per purgatory", ("purgatory",), operator=True
)
# PurgatorySize above counts watcher-list entries until the reaper purges them, completed
# ones included; this one counts only operations still pending (Kafka's
# NumDelayedOperations), so it drops to 0 once every long poll has been answered.
PURGATORY_DELAYED_OPERATIONS = _gauge(
    "purgatory_delayed_operations",
    "Delayed operations not yet completed or expired, per purgatory",
    ("purgatory",),
    operator=False,
)
EVENT_LOOP_LAG = _gauge(
    "event_loop_lag_seconds", "How late the last event-loop probe ran", operator=True
)
EVENT_LOOP_LAG_DISTRIBUTION = _histogram(
    "event_loop_lag_distribution_seconds",
    "How late event-loop probes ran",
    (),
    LAG_BUCKETS,
    operator=False,
)
CONTROLLER_ACTIVE = _gauge(
    "controller_active", "1 when this broker is the controller", operator=True
)
OFFLINE_PARTITIONS = _gauge("offline_partitions", "Partitions without a live leader", operator=True)
UNDER_REPLICATED_PARTITIONS = _gauge(
    "under_replicated_partitions",
    "Led partitions whose ISR is smaller than their replica set",
    operator=True,
)
UNDER_MIN_ISR_PARTITIONS = _gauge(
    "under_min_isr_partitions",
    "Led partitions whose ISR is smaller than min.insync.replicas",
    operator=True,
)
# ISR changes this broker wrote as leader (Kafka's IsrShrinksPerSec, IsrExpandsPerSec)
ISR_SHRINKS = _counter("isr_shrinks", "ISR shrinks written by this leader", operator=True)
ISR_EXPANDS = _counter("isr_expands", "ISR expansions written by this leader", operator=True)
ZOOKEEPER_CONNECTED = _gauge(
    "zookeeper_connected", "1 while the ZooKeeper session is connected", operator=True
)

# --- replication, the follower's side -------------------------------------------------------

REPLICA_FETCHER_MAX_LAG = _gauge(
    "replica_fetcher_max_lag",
    "Largest lag of a followed partition: the leader's high watermark as last "
    "fetched minus the local log end offset (Kafka's ReplicaFetcherManager MaxLag)",
    operator=True,
)

# --- replication throttles (both sides) ------------------------------------------------------

REPLICATION_THROTTLED_RATE = _gauge(
    "replication_throttled_bytes_per_second",
    "Rate of replication bytes counted against a replication throttle's quota, as the "
    "quota measures it (Kafka's LeaderReplication and FollowerReplication byte-rate)",
    ("side",),
    operator=False,
)

# --- client quotas (broker.client_quotas) ----------------------------------------------------

CLIENT_QUOTA_BYTE_RATE = _gauge(
    "client_quota_bytes_per_second",
    "Byte rate of a quota entity as its quota measures it, per quota type (produce, "
    "fetch) and the entity's user and client-id tags (Kafka's byte-rate per quota entity)",
    ("quota_type", "user", "client_id"),
    operator=False,
)
CLIENT_QUOTA_THROTTLE_TIME = _histogram(
    "client_quota_throttle_time_seconds",
    "Throttle time of the responses a client quota throttled, per quota type "
    "(Kafka's throttle-time)",
    ("quota_type",),
    DURATION_BUCKETS,
    operator=False,
)
CLIENT_QUOTA_THROTTLED_RESPONSES = _counter(
    "client_quota_throttled_responses",
    "Responses answered with a throttle time by a client quota, per quota type",
    ("quota_type",),
    operator=False,
)

# --- per topic, beside the traffic counters above -------------------------------------------

TOPIC_BYTES_REJECTED = _counter(
    "topic_bytes_rejected",
    "Record bytes of produce requests refused by validation (too large, corrupt)",
    ("topic",),
    operator=True,
)
TOPIC_FAILED_PRODUCE_REQUESTS = _counter(
    "topic_failed_produce_requests",
    "Partition appends answered with an error",
    ("topic",),
    operator=True,
)
TOPIC_FAILED_FETCH_REQUESTS = _counter(
    "topic_failed_fetch_requests",
    "Partition reads answered with an error",
    ("topic",),
    operator=True,
)

# --- message format conversions (Produce v0-2 and Fetch v0-3 carry magic 0/1) ------------

# Kafka's ProduceMessageConversionsPerSec / FetchMessageConversionsPerSec, per topic
TOPIC_PRODUCE_MESSAGE_CONVERSIONS = _counter(
    "topic_produce_message_conversions",
    "Records of produce requests converted from magic 0/1 to RecordBatch v2",
    ("topic",),
    operator=False,
)
TOPIC_FETCH_MESSAGE_CONVERSIONS = _counter(
    "topic_fetch_message_conversions",
    "Records converted from RecordBatch v2 to magic 0/1 for fetch requests below v4",
    ("topic",),
    operator=False,
)
# Kafka's RequestMetrics MessageConversionsTimeMs, per request kind
MESSAGE_CONVERSIONS_TIME = _histogram(
    "message_conversions_time_seconds",
    "Time spent converting message formats, per request that converted",
    ("api",),
    DURATION_BUCKETS,
    operator=False,
)

# --- a request's total time split as Kafka splits it ----------------------------------------
# queue (above), local (the handler's own work), remote (waiting in a purgatory), response
# (from the response being ready to its last byte written)

REQUEST_LOCAL_TIME = _histogram(
    "request_local_time_seconds",
    "Time a handler worked on a request",
    ("api",),
    DURATION_BUCKETS,
    operator=True,
)
REQUEST_REMOTE_TIME = _histogram(
    "request_remote_time_seconds",
    "Time a request waited for others (a delayed produce or fetch in its purgatory)",
    ("api",),
    DURATION_BUCKETS,
    operator=True,
)
REQUEST_RESPONSE_TIME = _histogram(
    "request_response_time_seconds",
    "Time from a response being ready to its last byte written",
    ("api",),
    DURATION_BUCKETS,
    operator=True,
)

# --- ZooKeeper ------------------------------------------------------------------------------

ZOOKEEPER_REQUEST_LATENCY = _histogram(
    "zookeeper_request_latency_seconds",
    "Time from a ZooKeeper request being queued to its reply",
    (),
    DURATION_BUCKETS,
    operator=True,
)
ZOOKEEPER_SESSION_STATE = _gauge(
    "zookeeper_session_state",
    "1 for the ZooKeeper session's current state, 0 for the others",
    ("state",),
    operator=True,
)

# --- controller events ----------------------------------------------------------------------
# every broker runs the event manager; only the active controller handles more than the
# election and watch events

CONTROLLER_EVENTS = _counter(
    "controller_events", "Controller events handled, per event type", ("event",), operator=True
)
CONTROLLER_EVENT_QUEUE_TIME = _histogram(
    "controller_event_queue_time_seconds",
    "Time an event waited in the controller's queue",
    (),
    DURATION_BUCKETS,
    operator=True,
)
CONTROLLER_EVENT_DURATION = _histogram(
    "controller_event_duration_seconds",
    "Time the controller spent handling an event, per event type",
    ("event",),
    DURATION_BUCKETS,
    operator=True,
)
CONTROLLER_EVENT_QUEUE_SIZE = _gauge(
    "controller_event_queue_size", "Events waiting in the controller's queue", operator=True
)

# --- consumer groups: the coordinator counts, the groups are read at scrape time ------------

GROUP_REBALANCES = _counter(
    "group_rebalances", "Rebalances started by this broker's group coordinator", operator=True
)
GROUP_OFFSET_COMMITS = _counter(
    "group_offset_commits", "Offsets committed to the groups coordinated here", operator=True
)
GROUPS = _gauge("groups", "Groups coordinated by this broker, per state", ("state",), operator=True)

# --- transactions: read at scrape time from the transaction coordinator ----------------------

TRANSACTIONS = _gauge(
    "transactions", "Transactional ids coordinated by this broker, per state", ("state",),
    operator=True,
)  # fmt: skip
TRANSACTION_MARKERS_OWED = _gauge(
    "transaction_markers_owed",
    "Partitions whose transaction marker this coordinator has yet to see written",
    operator=True,
)

# --- the last stable offset: read at scrape time from the logs (broker.metrics.lso) --------
# Few series whatever the partition count: only the partitions with the largest non-zero
# lag are named (broker.metrics.lso.LSO_LAG_PARTITIONS), the rest only counted.

LSO_LAG = _gauge(
    "last_stable_offset_lag",
    "High watermark minus last stable offset of the partitions lagging most (open transactions)",
    ("topic", "partition"),
    operator=True,
)
LSO_LAG_MAX = _gauge(
    "last_stable_offset_lag_max",
    "Largest high watermark minus last stable offset over the partitions held here",
    operator=True,
)
LSO_LAGGING_PARTITIONS = _gauge(
    "last_stable_offset_lagging_partitions",
    "Partitions held here whose last stable offset is below their high watermark",
    operator=True,
)
LSO_STUCK = _gauge(
    "last_stable_offset_stuck_seconds",
    "Longest time a lagging partition's last stable offset has stayed at the same offset",
    operator=True,
)

# --- replica counts -------------------------------------------------------------------------

PARTITIONS = _gauge("partitions", "Partitions this broker holds a replica of", operator=True)
LEADER_PARTITIONS = _gauge("leader_partitions", "Partitions this broker leads", operator=True)

# --- read at scrape time by the collectors --------------------------------------------------

FOLLOWER_MAX_LAG = _gauge(
    "follower_max_lag_messages",
    "A follower's largest lag behind this leader over the partitions led here",
    ("follower",),
    operator=False,
)
FOLLOWER_LAG = _gauge(
    "follower_lag_messages",
    "A follower's lag behind this leader summed over the partitions led here",
    ("follower",),
    operator=False,
)

GROUP_COMMITTED_OFFSETS = _gauge(
    "group_committed_offsets",
    "Committed offsets held by the groups this broker coordinates",
    operator=True,
)
GROUP_OFFSETS_EXPIRED = _counter(
    "group_offsets_expired",
    "Committed offsets removed by offsets.retention.minutes",
    operator=True,
)
GROUP_OFFSETS_DELETED = _counter(
    "group_offsets_deleted",
    "Committed offsets deleted (OffsetDelete, or their topic deleted)",
    operator=True,
)
GROUP_LAG = _gauge(
    "group_lag_messages",
    "Messages between a group's commits and the high watermarks of a topic's partitions held here",
    ("group", "topic"),
    operator=True,
)

UNCLEAN_LEADER_ELECTIONS = _counter(
    "unclean_leader_elections",
    "Leaders elected outside the ISR by this broker as controller",
    operator=True,
)

LOG_CLEANER_PASSES = _counter("log_cleaner_passes", "Cleaning passes", operator=False)
LOG_CLEANER_READ_BYTES = _counter(
    "log_cleaner_read_bytes", "Bytes the cleaner read", operator=False
)
LOG_CLEANER_WRITTEN_BYTES = _counter(
    "log_cleaner_written_bytes", "Bytes the cleaner wrote", operator=False
)
LOG_CLEANER_TIME_SINCE_LAST_RUN = _gauge(
    "log_cleaner_time_since_last_run_seconds",
    "Since the last pass ended (or startup)",
    operator=False,
)
LOG_CLEANER_UNCLEANABLE_PARTITIONS = _gauge(
    "log_cleaner_uncleanable_partitions",
    "Compacted partitions a pass failed on, no longer cleaned",
    operator=False,
)
LOG_CLEANER_DIRTY_RATIO = _gauge(
    "log_cleaner_dirty_ratio",
    "Dirty bytes over cleanable bytes of each compacted partition",
    ("topic", "partition"),
    operator=False,
)

LOG_SIZE = _gauge(
    "log_size_bytes", "Bytes of a partition's log", ("topic", "partition"), operator=True
)
LOG_START_OFFSET = _gauge(
    "log_start_offset", "A partition's log start offset", ("topic", "partition"), operator=True
)
LOG_END_OFFSET = _gauge(
    "log_end_offset", "A partition's log end offset", ("topic", "partition"), operator=True
)
LOG_SEGMENTS = _gauge(
    "log_segments", "Segments of a partition's log", ("topic", "partition"), operator=True
)
LOG_DIR_LOGS_BYTES = _gauge(
    "log_dir_logs_bytes", "Bytes of the logs in a log directory", ("log_dir",), operator=True
)
LOG_DIR_DISK_USED = _gauge(
    "log_dir_disk_used_bytes",
    "Used bytes of a log directory's file system",
    ("log_dir",),
    operator=True,
)
LOG_DIR_DISK_FREE = _gauge(
    "log_dir_disk_free_bytes",
    "Bytes free for this broker on a log directory's file system",
    ("log_dir",),
    operator=True,
)
LOG_DIR_DISK_TOTAL = _gauge(
    "log_dir_disk_total_bytes",
    "Size of a log directory's file system",
    ("log_dir",),
    operator=True,
)

# idle seconds as counters: the rate of one is an idle ratio (Kafka's
# NetworkProcessorAvgIdlePercent and RequestHandlerAvgIdlePercent, as a fraction)
NETWORK_PROCESSOR_IDLE = _counter(
    "network_processor_idle_seconds",
    "Seconds a network processor had no socket to serve",
    ("processor",),
    operator=True,
)
REQUEST_HANDLER_IDLE = _counter(
    "request_handler_idle_seconds",
    "Seconds the average request handler of a plane waited for a request",
    ("plane",),
    operator=True,
)


#: every declaration above, in declaration order
DECLARED: tuple[MetricDef, ...] = tuple(_declared)

#: Every metric the alert rules and the dashboard may use, as exposed (a counter with its
#: ``_total``, a histogram by its base name), with its labels; derived from the flags.
OPERATOR_METRICS: dict[str, tuple[str, ...]] = {
    d.exposed_name: d.labels for d in DECLARED if d.operator
}
