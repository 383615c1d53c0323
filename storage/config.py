"""Log configuration: what one partition's log obeys, and what the LogManager itself obeys.

A :class:`LogConfig` is a topic's effective configuration (``storage.log_keys``: the
broker's defaults with the topic's overrides on top) reduced to the fields the log
reads. The broker builds the default one from its typed key values
(:meth:`LogManagerConfig.from_broker_values`) and a topic's by applying the topic-level
keys of ``/config/topics/<t>`` (:meth:`LogConfig.with_overrides`). The field defaults are
the tables' defaults. :class:`LogManagerConfig` holds the settings of the LogManager
itself (directories, recovery threads and the periods of its scheduled tasks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from config.definitions import LONG_MAX, typed_values
from config.log_keys import (
    BROKER_LOG_KEYS,
    CLEANUP_COMPACT,
    CLEANUP_DELETE,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    broker_value,
    known_topic_configs,
    log_dirs,
    topic_defaults,
)

__all__ = [
    "LONG_MAX",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "CleanerConfig",
    "LogConfig",
    "LogManagerConfig",
]


def _joined(value: Any) -> str:
    """cleanup.policy is typed as a list; the log keeps Kafka's text form ``delete,compact``."""
    return ",".join(value)


#: topic key -> (LogConfig field, conversion of the typed value)
_FIELDS: Final[dict[str, tuple[str, Callable[[Any], Any]]]] = {
    "segment.bytes": ("segment_bytes", int),
    "segment.ms": ("segment_ms", int),
    "segment.jitter.ms": ("segment_jitter_ms", int),
    "segment.index.bytes": ("segment_index_bytes", int),
    "index.interval.bytes": ("index_interval_bytes", int),
    "retention.ms": ("retention_ms", int),
    "retention.bytes": ("retention_bytes", int),
    "flush.messages": ("flush_messages", int),
    "flush.ms": ("flush_ms", int),
    "file.delete.delay.ms": ("file_delete_delay_ms", int),
    "max.message.bytes": ("max_message_bytes", int),
    "message.timestamp.type": ("message_timestamp_type", str),
    "cleanup.policy": ("cleanup_policy", _joined),
    "delete.retention.ms": ("delete_retention_ms", int),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", int),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", int),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", float),
}


def _fields(topic_values: Mapping[str, Any]) -> dict[str, Any]:
    return {
        attr: convert(topic_values[key])
        for key, (attr, convert) in _FIELDS.items()
        if key in topic_values
    }


_BROKER_DEFAULTS: Final = typed_values(BROKER_LOG_KEYS, {})
_D: Final = _fields(topic_defaults(_BROKER_DEFAULTS))


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = _D["segment_bytes"]
    segment_ms: int = _D["segment_ms"]
    #: the roll age of each segment is segment_ms less a random part of this
    segment_jitter_ms: int = _D["segment_jitter_ms"]
    segment_index_bytes: int = _D["segment_index_bytes"]
    index_interval_bytes: int = _D["index_interval_bytes"]
    retention_ms: int = _D["retention_ms"]
    retention_bytes: int = _D["retention_bytes"]
    flush_messages: int = _D["flush_messages"]
    flush_ms: int = _D["flush_ms"]
    file_delete_delay_ms: int = _D["file_delete_delay_ms"]
    max_message_bytes: int = _D["max_message_bytes"]
    message_timestamp_type: str = _D["message_timestamp_type"]
    cleanup_policy: str = _D["cleanup_policy"]
    #: how long a tombstone outlives the cleaning pass that first kept it
    delete_retention_ms: int = _D["delete_retention_ms"]
    min_compaction_lag_ms: int = _D["min_compaction_lag_ms"]
    max_compaction_lag_ms: int = _D["max_compaction_lag_ms"]
    min_cleanable_dirty_ratio: float = _D["min_cleanable_dirty_ratio"]

    @property
    def deletes(self) -> bool:
        """Whether retention deletes segments (cleanup.policy contains delete)."""
        return CLEANUP_DELETE in self.cleanup_policy.split(",")

    @property
    def compacts(self) -> bool:
        """Whether the log cleaner compacts the log (cleanup.policy contains compact)."""
        return CLEANUP_COMPACT in self.cleanup_policy.split(",")

    @classmethod
    def from_broker_values(cls, values: Mapping[str, Any]) -> LogConfig:
        """The broker-wide default from typed broker key values (``log.segment.bytes``, ...)."""
        return cls(**_fields(topic_defaults(values)))

    @classmethod
    def from_broker_props(cls, props: Mapping[str, str]) -> LogConfig:
        """The broker-wide default from broker keys as text. Raises ConfigError (a
        ValueError) naming the key."""
        return cls.from_broker_values(typed_values(BROKER_LOG_KEYS, props))

    def with_overrides(self, topic_props: Mapping[str, str]) -> LogConfig:
        """Apply topic-level keys (``segment.bytes``, ``retention.ms``, ...). Keys that are
        not log settings (``min.insync.replicas``, ...) are ignored here."""
        values = _fields(known_topic_configs(topic_props))
        return dataclasses.replace(self, **values) if values else self


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The log cleaner's own settings (``log.cleaner.*``)."""

    enable: bool = _BROKER_DEFAULTS["log.cleaner.enable"]
    threads: int = _BROKER_DEFAULTS["log.cleaner.threads"]
    dedupe_buffer_size: int = _BROKER_DEFAULTS["log.cleaner.dedupe.buffer.size"]
    io_max_bytes_per_second: float = _BROKER_DEFAULTS["log.cleaner.io.max.bytes.per.second"]
    backoff_ms: int = _BROKER_DEFAULTS["log.cleaner.backoff.ms"]

    @classmethod
    def from_broker_values(cls, values: Mapping[str, Any]) -> CleanerConfig:
        return cls(
            enable=values["log.cleaner.enable"],
            threads=values["log.cleaner.threads"],
            dedupe_buffer_size=values["log.cleaner.dedupe.buffer.size"],
            io_max_bytes_per_second=values["log.cleaner.io.max.bytes.per.second"],
            backoff_ms=values["log.cleaner.backoff.ms"],
        )


@dataclass(frozen=True, slots=True)
class LogManagerConfig:
    log_dirs: tuple[str, ...] = tuple(log_dirs(_BROKER_DEFAULTS))
    num_recovery_threads_per_data_dir: int = _BROKER_DEFAULTS["num.recovery.threads.per.data.dir"]
    retention_check_interval_ms: int = _BROKER_DEFAULTS["log.retention.check.interval.ms"]
    flush_scheduler_interval_ms: int = _BROKER_DEFAULTS["log.flush.scheduler.interval.ms"]
    flush_offset_checkpoint_interval_ms: int = _BROKER_DEFAULTS[
        "log.flush.offset.checkpoint.interval.ms"
    ]
    flush_start_offset_checkpoint_interval_ms: int = _BROKER_DEFAULTS[
        "log.flush.start.offset.checkpoint.interval.ms"
    ]
    #: How often the delete-logs task looks for deleted logs and segments whose
    #: file.delete.delay.ms has passed (Kafka reschedules it dynamically instead).
    delete_check_interval_ms: int = 1_000
    initial_task_delay_ms: int = _BROKER_DEFAULTS["log.initial.task.delay.ms"]
    cleaner: CleanerConfig = field(default_factory=lambda: CleanerConfig())
    default: LogConfig = field(default_factory=LogConfig)

    @classmethod
    def from_broker_values(cls, values: Mapping[str, Any]) -> LogManagerConfig:
        """From typed broker key values: ``log.dirs`` (or ``log.dir``), the recovery
        threads, the periods of the scheduled tasks and the ``log.*`` defaults."""
        return cls(
            log_dirs=tuple(log_dirs(values)),
            num_recovery_threads_per_data_dir=values["num.recovery.threads.per.data.dir"],
            retention_check_interval_ms=values["log.retention.check.interval.ms"],
            flush_scheduler_interval_ms=broker_value(values, "log.flush.scheduler.interval.ms"),
            flush_offset_checkpoint_interval_ms=values["log.flush.offset.checkpoint.interval.ms"],
            flush_start_offset_checkpoint_interval_ms=values[
                "log.flush.start.offset.checkpoint.interval.ms"
            ],
            initial_task_delay_ms=values["log.initial.task.delay.ms"],
            cleaner=CleanerConfig.from_broker_values(values),
            default=LogConfig.from_broker_values(values),
        )

    @classmethod
    def from_broker_props(cls, props: Mapping[str, str]) -> LogManagerConfig:
        """As :meth:`from_broker_values`, from broker keys as text."""
        return cls.from_broker_values(typed_values(BROKER_LOG_KEYS, props))
