"""The broker's configuration keys as data: one ``ConfigDef`` per key, Kafka's names and defaults.

The log keys (``log.*`` and the broker-wide defaults of topic-level keys) are declared in
the config package (``config.log_keys.BROKER_LOG_KEYS``); this table adds the broker's
own keys around them. ``broker.config`` parses a server.properties against it and
DescribeConfigs answers from it; the topic-level keys are ``config.log_keys.TOPIC_KEYS``.
"""

from __future__ import annotations

from typing import Any, Final

from config.definitions import (
    INT_MAX,
    LONG_MAX,
    ConfigDef,
    ConfigType,
    at_least,
    between,
    key_table,
    one_of,
)
from config.log_keys import BROKER_LOG_KEYS, TOPIC_KEYS, related_broker_keys

DEFAULT_SECURITY_PROTOCOL_MAP: Final = (
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)

B, S, I, SH, L, LS, P = (  # noqa: E741 -- short names keep the table readable
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
    ConfigType.LIST,
    ConfigType.PASSWORD,
)


def _def(row: ConfigDef | tuple[Any, ...]) -> ConfigDef:
    """A row of the table below: a definition storage made, or the fields of a new one."""
    return row if isinstance(row, ConfigDef) else ConfigDef(*row)


#: the class names of Kafka's ZooKeeper ACL authorizer that ``authorizer.class.name``
#: accepts (``broker.auth`` implements its rules)
ACL_AUTHORIZER_CLASS_NAMES: Final = (
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
)


def _principal_list(value: Any) -> str | None:
    """``super.users``: ``Type:name`` entries separated by ``;``."""
    for raw in (value or "").split(";"):
        entry = raw.strip()
        kind, sep, name = entry.partition(":")
        if entry and (not sep or not kind or not name):
            return f"{entry!r} is not a principal of the form Type:name"
    return None


# fmt: off
#: name, type, default, doc, validator
_ROWS: Final[tuple[ConfigDef | tuple[Any, ...], ...]] = (
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
    # --- security: TLS (per listener as listener.name.<name>.<key>; PEM stores only)
    ("ssl.keystore.type", S, "JKS",
     "format of the key store; minikafka reads PEM only and refuses JKS and PKCS12 at startup"),
    ("ssl.keystore.location", S, None, "PEM file holding the private key and certificate chain"),
    ("ssl.keystore.password", P, None, "password of the key store file (PEM: ssl.key.password)"),
    ("ssl.keystore.certificate.chain", P, None, "the certificate chain in PEM, inline"),
    ("ssl.keystore.key", P, None, "the private key in PEM, inline"),
    ("ssl.key.password", P, None, "password of an encrypted private key"),
    ("ssl.truststore.type", S, "JKS",
     "format of the trust store; minikafka reads PEM only and refuses JKS and PKCS12 at startup"),
    ("ssl.truststore.location", S, None, "PEM file of the certificates trusted to sign peers"),
    ("ssl.truststore.password", P, None, "password of the trust store file (unused for PEM)"),
    ("ssl.truststore.certificates", P, None, "trusted certificates in PEM, inline"),
    ("ssl.client.auth", S, "none", "client certificates: none, requested or required (mTLS)",
     one_of("none", "requested", "required")),
    ("ssl.enabled.protocols", LS, "TLSv1.2,TLSv1.3", "TLS versions accepted",
     one_of("TLSv1.2", "TLSv1.3")),
    ("ssl.protocol", S, "TLSv1.3", "TLS protocol family of the context (informational)"),
    ("ssl.cipher.suites", LS, "",
     "TLS 1.2 cipher suites by IANA name; empty allows the defaults (TLS 1.3 suites cannot be "
     "restricted)"),
    ("ssl.principal.mapping.rules", S, "DEFAULT",
     "rules mapping a client certificate's distinguished name to a principal name"),
    ("ssl.endpoint.identification.algorithm", S, "https",
     "https checks the broker's host name against its certificate; empty turns the check off"),
    # --- security: SASL (per listener; JAAS as listener.name.<l>.<mechanism>.sasl.jaas.config)
    ("sasl.enabled.mechanisms", LS, "GSSAPI",
     "SASL mechanisms served: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (GSSAPI is not supported)"),
    ("sasl.mechanism.inter.broker.protocol", S, "GSSAPI",
     "SASL mechanism brokers use with each other on a SASL inter-broker listener"),
    ("sasl.jaas.config", P, None,
     "JAAS login context; on a broker given per listener and mechanism"),
    ("sasl.server.max.receive.size", I, 524288,
     "largest frame accepted before authentication completes", at_least(1)),
    ("connections.max.reauth.ms", L, 0,
     "session lifetime of an authenticated connection before it must re-authenticate; "
     "0 never expires", at_least(0)),
    ("connection.failed.authentication.delay.ms", I, 100,
     "delay before a failed authentication is answered and its connection closed",
     at_least(0)),
    # --- security: authorization (broker.auth)
    ("authorizer.class.name", S, "",
     "the authorizer: kafka.security.authorizer.AclAuthorizer (or Kafka's older "
     "kafka.security.auth.SimpleAclAuthorizer) checks ACLs kept in ZooKeeper; empty "
     "authorizes nothing", one_of("", *ACL_AUTHORIZER_CLASS_NAMES)),
    ("super.users", S, "",
     "principals allowed everything, separated by ';' (User:admin;User:broker)",
     _principal_list),
    ("allow.everyone.if.no.acl.found", B, False,
     "with the authorizer on, a resource without any ACL is open to everyone"),
    ("fetch.max.bytes", I, 57671680, "largest fetch response", at_least(1024)),
    # --- logs (declared in config.log_keys)
    *BROKER_LOG_KEYS.values(),
    # --- topics and replication
    ("num.partitions", I, 1, "partitions of auto-created topics", at_least(1)),
    ("default.replication.factor", I, 1, "replication factor of auto-created topics",
     at_least(1)),
    ("auto.create.topics.enable", B, True, "create topics on first metadata/produce request"),
    ("delete.topic.enable", B, True, "allow DeleteTopics (false: refused, queued ones dropped)"),
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
    ("leader.replication.throttled.rate", L, LONG_MAX,
     "bytes/s a leader sends to followers of its throttled replicas (dynamic)", at_least(0)),
    ("follower.replication.throttled.rate", L, LONG_MAX,
     "bytes/s a follower fetches for its throttled replicas (dynamic)", at_least(0)),
    ("replication.quota.window.num", I, 11, "samples of the replication quotas' rates",
     at_least(1)),
    ("replication.quota.window.size.seconds", I, 1,
     "length of one sample of the replication quotas' rates", at_least(1)),
    ("quota.window.num", I, 11, "samples of the client quotas' byte rates", at_least(1)),
    ("quota.window.size.seconds", I, 1, "length of one sample of the client quotas' byte rates",
     at_least(1)),
    ("fetch.purgatory.purge.interval.requests", I, 1000, "fetch purgatory purge interval"),
    ("max.incremental.fetch.session.cache.slots", I, 1000,
     "incremental fetch sessions (KIP-227) a broker keeps", at_least(0)),
    ("producer.purgatory.purge.interval.requests", I, 1000, "produce purgatory purge interval"),
    ("delete.records.purgatory.purge.interval.requests", I, 1,
     "delete-records purgatory purge interval"),
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
    ("offset.metadata.max.bytes", I, 4096, "metadata of one committed offset, at most",
     at_least(0)),
    ("offsets.topic.replication.factor", SH, 3, "replication of __consumer_offsets",
     at_least(1)),
    ("offsets.topic.num.partitions", I, 50, "partitions of __consumer_offsets", at_least(1)),
    ("offsets.topic.segment.bytes", I, 104857600, "segment size of __consumer_offsets",
     at_least(1)),
    ("offsets.topic.compression.codec", I, 0, "compression of __consumer_offsets",
     between(0, 4)),
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
    ("transaction.state.log.segment.bytes", I, 104857600, "segment size of __transaction_state",
     at_least(1)),
    ("transaction.state.log.load.buffer.size", I, 5242880,
     "read size when loading transactions", at_least(1)),
    ("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10000,
     "how often transactions past their timeout are aborted", at_least(1)),
    ("transaction.remove.expired.transaction.cleanup.interval.ms", I, 3600000,
     "how often expired transactional ids are removed", at_least(1)),
    ("transaction.marker.retry.backoff.ms", I, 100,
     "minikafka: wait before resending a transaction marker that failed", at_least(1)),
    ("transaction.partition.verification.enable", B, True,
     "a leader asks the coordinator before a transactional batch opens a transaction (KIP-890)"),
    # --- minikafka's own
    ("minikafka.transactions.enable", B, True,
     "minikafka: offer transactions (the transaction coordinator, transactional produce); "
     "false refuses transactional producers with TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    ("metrics.port", I, 9600,
     "minikafka: Prometheus /metrics HTTP port (on metrics.host); 0 picks a free port, -1 disables",
     between(-1, 65535)),
    ("metrics.host", S, "127.0.0.1",
     "minikafka: address the /metrics HTTP server binds (0.0.0.0 in a container)"),
    ("event.loop", S, "uvloop", "minikafka: asyncio event loop, uvloop or asyncio",
     one_of("uvloop", "asyncio")),
)
# fmt: on

BROKER_CONFIG_DEFS: Final[dict[str, ConfigDef]] = key_table(*map(_def, _ROWS))

#: key prefixes whose keys are passed through without a warning (Kafka's per-listener keys)
KNOWN_PREFIXES: Final[tuple[str, ...]] = ("listener.name.",)

#: the replication throttles' rates, read afresh by every quota check
REPLICATION_THROTTLE_RATE_KEYS: Final = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
)

#: the sizes of the broker's worker pools, resized on a running broker: request handler
#: tasks, Processors per listener, fetchers per source broker, log recovery threads (used
#: by the next startup's log loading) and the scheduler's worker threads. A change may at
#: most double a size or halve it (broker.config.thread_counts)
THREAD_COUNT_KEYS: Final = (
    "num.io.threads",
    "num.network.threads",
    "num.replica.fetchers",
    "num.recovery.threads.per.data.dir",
    "background.threads",
)

#: the log cleaner's settings a running broker takes at once (its thread count under
#: the same halve-or-double rule); Kafka's log.cleaner.io.buffer.* have no counterpart
DYNAMIC_CLEANER_KEYS: Final = (
    "log.cleaner.threads",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.backoff.ms",
)

#: the connection caps (broker.network.quotas), applied to new connections at once
CONNECTION_QUOTA_KEYS: Final = (
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
)

#: broker keys a running broker applies without a restart (AlterConfigs on a BROKER
#: resource): the broker-wide defaults of the topic-level keys, the keys that supply
#: them (``log.retention.hours`` ...), the replication throttles' rates, the worker pool
#: sizes, the log cleaner's settings and the connection caps. Every other key needs a
#: restart: DescribeConfigs reports it read-only and AlterConfigs refuses it.
DYNAMIC_BROKER_KEYS: Final[frozenset[str]] = frozenset(
    (
        *(key for d in TOPIC_KEYS.values() if d.synonym for key in related_broker_keys(d.synonym)),
        *REPLICATION_THROTTLE_RATE_KEYS,
        *THREAD_COUNT_KEYS,
        *DYNAMIC_CLEANER_KEYS,
        *CONNECTION_QUOTA_KEYS,
    )
)

#: a TLS listener's key store and trust store keys: dynamic when given with the
#: listener's prefix (``listener.name.<l>.ssl.keystore.location``), as Kafka has them;
#: the new files are loaded and checked before the change is accepted, and the listener's
#: new connections use them without a restart
DYNAMIC_LISTENER_SSL_KEYS: Final[frozenset[str]] = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
    }
)
