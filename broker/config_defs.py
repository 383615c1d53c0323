"""The broker's configuration keys as data: one ``ConfigDef`` per key, Kafka's names and defaults.

Each definition carries the key, its type, its default (``NO_DEFAULT`` when the key is
required and ``None`` when Kafka's default is null), an optional validator and a one-line
doc. ``broker.config`` parses a server.properties against this table; DescribeConfigs
answers from it (``ConfigType`` values are the wire ids of the DescribeConfigs
``config_type`` field, v3+).

The per-topic table (``TOPIC_CONFIG_DEFS``) maps every topic-level key to the broker key
that supplies its default (Kafka's "synonym"), e.g. ``retention.ms`` <- ``log.retention.ms``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

INT_MAX: Final = 2**31 - 1
LONG_MAX: Final = 2**63 - 1


class ConfigType(enum.IntEnum):
    """Value types; the numbers are DescribeConfigs' ``config_type`` wire values."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


#: marks a key that has to be given (Kafka's ConfigDef.NO_DEFAULT_VALUE)
NO_DEFAULT: Final = _NoDefault()

#: a validator returns None when the (already typed) value is acceptable, else the reason
Validator = Callable[[Any], str | None]


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT


# --- validators -------------------------------------------------------------------------


def at_least(minimum: float) -> Validator:
    def check(value: Any) -> str | None:
        if value is None or value >= minimum:
            return None
        return f"must be at least {minimum}"

    return check


def between(low: float, high: float) -> Validator:
    def check(value: Any) -> str | None:
        if value is None or low <= value <= high:
            return None
        return f"must be between {low} and {high}"

    return check


def one_of(*choices: str) -> Validator:
    def check(value: Any) -> str | None:
        values = value if isinstance(value, list) else [value]
        bad = [v for v in values if v is not None and v not in choices]
        return f"must be one of {', '.join(choices)}" if bad else None

    return check


def port_or_zero(value: Any) -> str | None:
    if value is None or 0 <= value <= 65535:
        return None
    return "must be a TCP port (0-65535; 0 picks a free one)"


COMPRESSION_TYPES: Final = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
CLEANUP_POLICIES: Final = ("delete", "compact")
TIMESTAMP_TYPES: Final = ("CreateTime", "LogAppendTime")
DEFAULT_SECURITY_PROTOCOL_MAP: Final = (
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)

B, S, I, SH, L, D, LS, P = (  # noqa: E741 -- short names keep the table readable
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
    ConfigType.PASSWORD,
)


def _defs(*rows: tuple[Any, ...]) -> dict[str, ConfigDef]:
    table: dict[str, ConfigDef] = {}
    for row in rows:
        d = ConfigDef(*row)
        assert d.name not in table, f"duplicate config key {d.name}"
        table[d.name] = d
    return table


# fmt: off
#: name, type, default, doc, validator
BROKER_CONFIG_DEFS: Final[dict[str, ConfigDef]] = _defs(
    # --- identity and ZooKeeper
    ("broker.id", I, -1, "this broker's id; -1 generates one from /brokers/seqid", at_least(-1)),
    ("broker.id.generation.enable", B, True, "allow generated broker ids when broker.id is -1"),
    ("reserved.broker.max.id", I, 1000, "generated ids start above this", at_least(0)),
    ("broker.rack", S, None, "rack of this broker, for rack-aware replica assignment"),
    ("zookeeper.connect", S, None, "ZooKeeper connect string host:port[,host:port][/chroot]"),
    ("zookeeper.session.timeout.ms", I, 18000, "ZooKeeper session timeout", at_least(1)),
    ("zookeeper.connection.timeout.ms", I, None,
     "max wait to connect to ZooKeeper; null uses zookeeper.session.timeout.ms", at_least(1)),
    ("zookeeper.max.in.flight.requests", I, 10, "unacknowledged ZooKeeper requests", at_least(1)),
    ("zookeeper.set.acl", B, False, "set secure ACLs on created znodes"),
    # --- sockets and request handling
    ("listeners", S, "PLAINTEXT://:9092",
     "comma-separated NAME://host:port to bind; empty host binds every interface"),
    ("advertised.listeners", S, None,
     "listeners published in ZooKeeper for clients; null uses listeners"),
    ("listener.security.protocol.map", S, DEFAULT_SECURITY_PROTOCOL_MAP,
     "listener name -> security protocol, NAME:PROTOCOL pairs"),
    ("inter.broker.listener.name", S, None, "listener brokers use to talk to each other"),
    ("security.inter.broker.protocol", S, "PLAINTEXT", "protocol between brokers",
     one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    ("control.plane.listener.name", S, None,
     "listener for controller requests, own queue and handler; null shares the data plane"),
    ("num.network.threads", I, 3, "processors (connection owners) per listener", at_least(1)),
    ("num.io.threads", I, 8, "request handler tasks", at_least(1)),
    ("background.threads", I, 10, "background task workers (the scheduler)", at_least(1)),
    ("queued.max.requests", I, 500,
     "requests waiting for a handler before processors stop reading", at_least(1)),
    ("queued.max.request.bytes", L, -1, "bytes of queued requests; -1 is unbounded"),
    ("socket.request.max.bytes", I, 104857600, "largest request frame accepted", at_least(1)),
    ("socket.send.buffer.bytes", I, 102400, "SO_SNDBUF; -1 keeps the OS default"),
    ("socket.receive.buffer.bytes", I, 102400, "SO_RCVBUF; -1 keeps the OS default"),
    ("socket.listen.backlog.size", I, 50, "pending connections in the listen queue", at_least(1)),
    ("connections.max.idle.ms", L, 600000, "close connections idle this long", at_least(1)),
    ("max.connections", I, INT_MAX, "connections the broker accepts at once", at_least(0)),
    ("max.connections.per.ip", I, INT_MAX, "connections accepted from one address", at_least(0)),
    ("max.connections.per.ip.overrides", S, "",
     "per-address caps as host:count pairs, comma-separated"),
    ("request.timeout.ms", I, 30000, "how long a request may wait for acks", at_least(0)),
    ("message.max.bytes", I, 1048588, "largest record batch accepted", at_least(0)),
    ("fetch.max.bytes", I, 57671680, "largest fetch response", at_least(1024)),
    # --- logs
    ("log.dir", S, "/tmp/kafka-logs", "log directory when log.dirs is not set"),
    ("log.dirs", S, None, "comma-separated log directories; null uses log.dir"),
    ("log.segment.bytes", I, 1073741824, "size at which a segment rolls", at_least(14)),
    ("log.roll.ms", L, None, "age at which a segment rolls; null uses log.roll.hours", at_least(1)),
    ("log.roll.hours", I, 168, "age in hours at which a segment rolls", at_least(1)),
    ("log.roll.jitter.ms", L, None, "jitter subtracted from the roll age", at_least(0)),
    ("log.roll.jitter.hours", I, 0, "jitter in hours", at_least(0)),
    ("log.retention.ms", L, None, "keep segments this long; -1 forever; null uses minutes/hours"),
    ("log.retention.minutes", I, None, "retention in minutes; null uses log.retention.hours"),
    ("log.retention.hours", I, 168, "retention in hours"),
    ("log.retention.bytes", L, -1, "size cap per partition; -1 unlimited"),
    ("log.retention.check.interval.ms", L, 300000, "how often retention runs", at_least(1)),
    ("log.index.interval.bytes", I, 4096, "bytes between sparse index entries", at_least(0)),
    ("log.index.size.max.bytes", I, 10485760, "largest offset index file", at_least(4)),
    ("log.flush.interval.messages", L, LONG_MAX, "messages between fsyncs", at_least(1)),
    ("log.flush.interval.ms", L, None,
     "max age of unflushed data; null uses log.flush.scheduler.interval.ms"),
    ("log.flush.scheduler.interval.ms", L, LONG_MAX, "how often the flusher checks"),
    ("log.flush.offset.checkpoint.interval.ms", I, 60000,
     "how often the recovery point checkpoint is written", at_least(0)),
    ("log.flush.start.offset.checkpoint.interval.ms", I, 60000,
     "how often the log start offset checkpoint is written", at_least(0)),
    ("log.segment.delete.delay.ms", L, 60000, "delay before a deleted segment's files go",
     at_least(0)),
    ("log.cleanup.policy", LS, "delete", "delete and/or compact", one_of(*CLEANUP_POLICIES)),
    ("log.cleaner.enable", B, True, "run the log cleaner (compaction)"),
    ("log.cleaner.delete.retention.ms", L, 86400000, "tombstone retention for compacted topics",
     at_least(0)),
    ("log.cleaner.min.compaction.lag.ms", L, 0, "min age before compaction", at_least(0)),
    ("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, "max age before compaction", at_least(1)),
    ("log.cleaner.min.cleanable.ratio", D, 0.5, "dirty ratio that triggers cleaning",
     between(0, 1)),
    ("log.preallocate", B, False, "preallocate segment files"),
    ("log.message.timestamp.type", S, "CreateTime", "CreateTime or LogAppendTime",
     one_of(*TIMESTAMP_TYPES)),
    ("log.message.timestamp.difference.max.ms", L, LONG_MAX,
     "max skew between a record's timestamp and the broker's clock", at_least(0)),
    ("log.message.format.version", S, "3.0-IV1", "message format (only v2 batches are written)"),
    ("log.message.downconversion.enable", B, True, "down-convert for old fetchers"),
    ("num.recovery.threads.per.data.dir", I, 1, "threads recovering logs at startup",
     at_least(1)),
    # --- topics and replication
    ("num.partitions", I, 1, "partitions of auto-created topics", at_least(1)),
    ("default.replication.factor", I, 1, "replication factor of auto-created topics",
     at_least(1)),
    ("min.insync.replicas", I, 1, "replicas that must acknowledge acks=all", at_least(1)),
    ("auto.create.topics.enable", B, True, "create topics on first metadata/produce request"),
    ("delete.topic.enable", B, True, "allow DeleteTopics"),
    ("unclean.leader.election.enable", B, False, "allow leaders from outside the ISR"),
    ("auto.leader.rebalance.enable", B, True, "move leadership back to preferred replicas"),
    ("leader.imbalance.per.broker.percentage", I, 10, "imbalance that triggers a rebalance",
     at_least(0)),
    ("leader.imbalance.check.interval.seconds", L, 300, "how often imbalance is checked",
     at_least(1)),
    ("replica.lag.time.max.ms", L, 30000, "a follower this far behind leaves the ISR",
     at_least(1)),
    ("replica.fetch.max.bytes", I, 1048576, "bytes per partition a follower fetches",
     at_least(0)),
    ("replica.fetch.response.max.bytes", I, 10485760, "bytes per follower fetch", at_least(0)),
    ("replica.fetch.wait.max.ms", I, 500, "follower fetch long-poll time", at_least(0)),
    ("replica.fetch.min.bytes", I, 1, "follower fetch min bytes", at_least(0)),
    ("replica.fetch.backoff.ms", I, 1000, "follower backoff after an error", at_least(0)),
    ("replica.socket.timeout.ms", I, 30000, "follower socket timeout"),
    ("replica.high.watermark.checkpoint.interval.ms", L, 5000,
     "how often the high watermark checkpoint is written", at_least(1)),
    ("num.replica.fetchers", I, 1, "fetcher tasks per source broker", at_least(1)),
    ("fetch.purgatory.purge.interval.requests", I, 1000, "fetch purgatory purge interval"),
    ("producer.purgatory.purge.interval.requests", I, 1000, "produce purgatory purge interval"),
    ("delete.records.purgatory.purge.interval.requests", I, 1,
     "delete-records purgatory purge interval"),
    ("compression.type", S, "producer", "final compression of topics", one_of(*COMPRESSION_TYPES)),
    ("controlled.shutdown.enable", B, True, "move leadership away before shutting down"),
    ("controlled.shutdown.max.retries", I, 3, "controlled shutdown attempts", at_least(0)),
    ("controlled.shutdown.retry.backoff.ms", L, 5000, "backoff between attempts", at_least(0)),
    ("controller.socket.timeout.ms", I, 30000, "controller-to-broker socket timeout"),
    ("inter.broker.protocol.version", S, "3.0-IV1", "inter-broker protocol version"),
    ("producer.id.expiration.ms", I, 86400000, "idle producer ids expire after this",
     at_least(1)),
    # --- group coordinator and offsets
    ("group.min.session.timeout.ms", I, 6000, "smallest consumer session timeout"),
    ("group.max.session.timeout.ms", I, 1800000, "largest consumer session timeout"),
    ("group.initial.rebalance.delay.ms", I, 3000, "wait for more members of a new group"),
    ("group.max.size", I, INT_MAX, "members per group", at_least(1)),
    ("offsets.topic.replication.factor", SH, 3, "replication of __consumer_offsets",
     at_least(1)),
    ("offsets.topic.num.partitions", I, 50, "partitions of __consumer_offsets", at_least(1)),
    ("offsets.topic.segment.bytes", I, 104857600, "segment size of __consumer_offsets",
     at_least(1)),
    ("offsets.topic.compression.codec", I, 0, "compression of __consumer_offsets"),
    ("offsets.retention.minutes", I, 10080, "committed offsets of empty groups expire after",
     at_least(1)),
    ("offsets.retention.check.interval.ms", L, 600000, "how often offsets expire", at_least(1)),
    ("offsets.commit.timeout.ms", I, 5000, "offset commit wait for replication", at_least(1)),
    ("offsets.commit.required.acks", SH, -1, "acks of offset commits"),
    ("offsets.load.buffer.size", I, 5242880, "read size when loading offsets", at_least(1)),
    ("transaction.state.log.replication.factor", SH, 3, "replication of __transaction_state",
     at_least(1)),
    ("transaction.state.log.num.partitions", I, 50, "partitions of __transaction_state",
     at_least(1)),
    ("transaction.state.log.min.isr", I, 2, "min ISR of __transaction_state", at_least(1)),
    ("transactional.id.expiration.ms", I, 604800000, "idle transactional ids expire after",
     at_least(1)),
    ("transaction.max.timeout.ms", I, 900000, "largest transaction timeout", at_least(1)),
    # --- minikafka's own
    ("metrics.port", I, 9600,
     "minikafka: Prometheus /metrics HTTP port on 127.0.0.1; 0 picks a free port, -1 disables",
     between(-1, 65535)),
    ("event.loop", S, "uvloop", "minikafka: asyncio event loop, uvloop or asyncio",
     one_of("uvloop", "asyncio")),
)

#: key prefixes whose keys are passed through without a warning (Kafka's per-listener keys)
KNOWN_PREFIXES: Final[tuple[str, ...]] = ("listener.name.",)


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """A topic-level key; its default comes from the broker key ``synonym``."""

    name: str
    type: ConfigType
    synonym: str
    doc: str
    validator: Validator | None = None


#: name, type, broker synonym, doc, validator (the broker key carries the default)
TOPIC_CONFIG_DEFS: Final[dict[str, TopicConfigDef]] = {
    d.name: d for d in (
        TopicConfigDef(*row) for row in (
            ("segment.bytes", I, "log.segment.bytes", "segment size", at_least(14)),
            ("segment.ms", L, "log.roll.ms", "segment age before rolling", at_least(1)),
            ("segment.jitter.ms", L, "log.roll.jitter.ms", "roll jitter", at_least(0)),
            ("segment.index.bytes", I, "log.index.size.max.bytes", "offset index size",
             at_least(4)),
            ("index.interval.bytes", I, "log.index.interval.bytes", "bytes per index entry",
             at_least(0)),
            ("flush.messages", L, "log.flush.interval.messages", "messages between fsyncs",
             at_least(1)),
            ("flush.ms", L, "log.flush.interval.ms", "max age of unflushed data", at_least(0)),
            ("retention.bytes", L, "log.retention.bytes", "size cap per partition"),
            ("retention.ms", L, "log.retention.ms", "retention time; -1 forever", at_least(-1)),
            ("max.message.bytes", I, "message.max.bytes", "largest batch", at_least(0)),
            ("cleanup.policy", LS, "log.cleanup.policy", "delete and/or compact",
             one_of(*CLEANUP_POLICIES)),
            ("delete.retention.ms", L, "log.cleaner.delete.retention.ms", "tombstone retention",
             at_least(0)),
            ("min.compaction.lag.ms", L, "log.cleaner.min.compaction.lag.ms",
             "min age before compaction", at_least(0)),
            ("max.compaction.lag.ms", L, "log.cleaner.max.compaction.lag.ms",
             "max age before compaction", at_least(1)),
            ("min.cleanable.dirty.ratio", D, "log.cleaner.min.cleanable.ratio",
             "dirty ratio that triggers cleaning", between(0, 1)),
            ("file.delete.delay.ms", L, "log.segment.delete.delay.ms",
             "delay before deleted files go", at_least(0)),
            ("preallocate", B, "log.preallocate", "preallocate segment files"),
            ("min.insync.replicas", I, "min.insync.replicas", "replicas for acks=all",
             at_least(1)),
            ("unclean.leader.election.enable", B, "unclean.leader.election.enable",
             "allow leaders from outside the ISR"),
            ("compression.type", S, "compression.type", "final compression",
             one_of(*COMPRESSION_TYPES)),
            ("message.timestamp.type", S, "log.message.timestamp.type",
             "CreateTime or LogAppendTime", one_of(*TIMESTAMP_TYPES)),
            ("message.timestamp.difference.max.ms", L,
             "log.message.timestamp.difference.max.ms", "max timestamp skew", at_least(0)),
            ("message.downconversion.enable", B, "log.message.downconversion.enable",
             "down-convert for old fetchers"),
            ("message.format.version", S, "log.message.format.version", "message format"),
        )
    )
}
# fmt: on
