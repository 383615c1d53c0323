"""The log keys, declared once: the broker's ``log.*`` keys and the topic-level keys.

``BROKER_LOG_KEYS`` holds the broker keys storage obeys (with Kafka's defaults): the
LogManager's own (directories, task periods) and the broker-wide defaults of every
topic-level key. ``TOPIC_KEYS`` holds the topic-level keys; each names the broker key
that supplies its default (its synonym: ``retention.ms`` <- ``log.retention.ms``,
``min.insync.replicas`` <- ``min.insync.replicas``). This is the one table of synonyms:
the broker's key table includes ``BROKER_LOG_KEYS``, and ``config.effective`` (hence
storage's ``LogConfig``, the broker's acks=all check and the controller's unclean
election), DescribeConfigs and AlterConfigs read it.

Some broker keys can be given in another unit (``log.retention.hours``) or fall back to
another key (``log.flush.interval.ms`` to ``log.flush.scheduler.interval.ms``):
``SYNONYM_FALLBACKS`` lists them, and ``broker_value`` applies them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from config.definitions import (
    LONG_MAX,
    ConfigDef,
    ConfigType,
    TopicConfigDef,
    at_least,
    between,
    checked,
    key_table,
    one_of,
)
from config.errors import ConfigError
from config.throttled_replicas import check_throttled_replicas

CLEANUP_DELETE: Final = "delete"
CLEANUP_COMPACT: Final = "compact"
TIMESTAMP_CREATE_TIME: Final = "CreateTime"
TIMESTAMP_LOG_APPEND_TIME: Final = "LogAppendTime"
COMPRESSION_TYPES: Final = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
CLEANUP_POLICIES: Final = (CLEANUP_DELETE, CLEANUP_COMPACT)
TIMESTAMP_TYPES: Final = (TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME)

B, S, I, L, D, LS = (  # noqa: E741 -- short names keep the tables readable
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)

# fmt: off
#: name, type, default, doc, validator
BROKER_LOG_KEYS: Final[dict[str, ConfigDef]] = key_table(*(ConfigDef(*row) for row in (
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
    ("log.initial.task.delay.ms", L, 30000,
     "delay before the first run of the log tasks (retention, flush, checkpoints)",
     at_least(0)),
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
    ("log.cleaner.threads", I, 1, "cleaner threads (compaction workers)", at_least(0)),
    ("log.cleaner.dedupe.buffer.size", L, 134217728,
     "memory of the cleaners' offset maps, shared by the threads", at_least(1)),
    ("log.cleaner.io.max.bytes.per.second", D, 1.7976931348623157e308,
     "cap on the bytes the cleaners read and write per second", at_least(1)),
    ("log.cleaner.backoff.ms", L, 15000, "how long a cleaner waits when no log needs cleaning",
     at_least(0)),
    ("log.preallocate", B, False, "preallocate segment files"),
    ("log.message.timestamp.type", S, "CreateTime", "CreateTime or LogAppendTime",
     one_of(*TIMESTAMP_TYPES)),
    ("log.message.timestamp.difference.max.ms", L, LONG_MAX,
     "max skew between a record's timestamp and the broker's clock", at_least(0)),
    ("log.message.format.version", S, "3.0-IV1", "message format (only v2 batches are written)"),
    ("log.message.downconversion.enable", B, True, "down-convert for old fetchers"),
    ("num.recovery.threads.per.data.dir", I, 1, "threads recovering logs at startup",
     at_least(1)),
    # broker-wide defaults of topic keys that do not read log.*
    ("message.max.bytes", I, 1048588, "largest record batch accepted", at_least(0)),
    ("min.insync.replicas", I, 1, "replicas that must acknowledge acks=all", at_least(1)),
    ("unclean.leader.election.enable", B, False, "allow leaders from outside the ISR"),
    ("compression.type", S, "producer", "final compression of topics", one_of(*COMPRESSION_TYPES)),
)))

#: name, type, broker synonym, doc, validator (the synonym supplies the default), and for
#: a key without a synonym its own default
TOPIC_KEYS: Final[dict[str, TopicConfigDef]] = key_table(*(TopicConfigDef(*row) for row in (
    ("segment.bytes", I, "log.segment.bytes", "segment size", at_least(14)),
    ("segment.ms", L, "log.roll.ms", "segment age before rolling", at_least(1)),
    ("segment.jitter.ms", L, "log.roll.jitter.ms", "roll jitter", at_least(0)),
    ("segment.index.bytes", I, "log.index.size.max.bytes", "offset index size", at_least(4)),
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
    ("min.insync.replicas", I, "min.insync.replicas", "replicas for acks=all", at_least(1)),
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
    # no broker key supplies these: their default (empty, nothing throttled) is their own
    ("leader.replication.throttled.replicas", LS, None,
     "replicas whose leader-side replication is throttled: partition:broker pairs, or *",
     check_throttled_replicas, ""),
    ("follower.replication.throttled.replicas", LS, None,
     "replicas whose follower-side replication is throttled: partition:broker pairs, or *",
     check_throttled_replicas, ""),
)))
# fmt: on

#: broker keys that other keys can supply: (key, factor to the first key's unit), strongest
#: first; the first one set (not null) gives the value
SYNONYM_FALLBACKS: Final[dict[str, tuple[tuple[str, int], ...]]] = {
    "log.retention.ms": (
        ("log.retention.ms", 1),
        ("log.retention.minutes", 60_000),
        ("log.retention.hours", 3_600_000),
    ),
    "log.roll.ms": (("log.roll.ms", 1), ("log.roll.hours", 3_600_000)),
    "log.roll.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000)),
    "log.flush.interval.ms": (
        ("log.flush.interval.ms", 1),
        ("log.flush.scheduler.interval.ms", 1),
    ),
}

#: keys where any negative value means "forever", reported as -1
_NEGATIVE_IS_FOREVER: Final = frozenset({"log.retention.ms"})


def broker_value(values: Mapping[str, Any], key: str) -> Any:
    """The effective value of broker key ``key`` given typed broker ``values``."""
    value = None
    for name, factor in SYNONYM_FALLBACKS.get(key, ((key, 1),)):
        if values.get(name) is not None:
            value = values[name] * factor if factor != 1 else values[name]
            break
    if key in _NEGATIVE_IS_FOREVER and value is not None and value < 0:
        return -1
    return value


def related_broker_keys(key: str) -> tuple[str, ...]:
    """The broker keys whose setting decides ``key``'s effective value."""
    return tuple(name for name, _ in SYNONYM_FALLBACKS.get(key, ((key, 1),)))


def log_dirs(values: Mapping[str, Any]) -> list[str]:
    """``log.dirs``, else ``log.dir``, split at commas."""
    raw = values.get("log.dirs") or values.get("log.dir") or ""
    return [d.strip() for d in str(raw).split(",") if d.strip()]


def validate_topic_configs(overrides: Mapping[str, str | None]) -> dict[str, Any]:
    """Type-check topic-level overrides (CreateTopics / AlterConfigs); unknown keys refused."""
    typed: dict[str, Any] = {}
    for key, raw in overrides.items():
        definition = TOPIC_KEYS.get(key)
        if definition is None:
            raise ConfigError(key, "is not a topic configuration")
        typed[key] = checked(definition, raw)
    return typed


def known_topic_configs(overrides: Mapping[str, str]) -> dict[str, Any]:
    """The typed values of the topic keys among ``overrides``; other keys (written by
    newer tools, say) are skipped, as a broker must still serve the topic."""
    return validate_topic_configs({k: v for k, v in overrides.items() if k in TOPIC_KEYS})
