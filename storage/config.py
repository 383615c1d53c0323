"""Log configuration: what one partition's log obeys, and what the LogManager itself obeys.

A :class:`LogConfig` is a topic's effective configuration reduced to the fields the log
reads (and ``min_insync_replicas``, which acks=all reads): each field is
``config.effective.effective_value`` of its topic key over the layers (the topic's
overrides, this broker's dynamic config, the cluster default, the static configuration,
the key's default). The broker builds the broker-wide one from its layers
(:meth:`LogConfig.from_layers`); a topic's is that one with the topic's overrides of
``/config/topics/<t>`` on top (:meth:`LogConfig.with_overrides`), which gives the same
values, since a topic override beats every broker layer. The field defaults are the
values with no layer set. :class:`LogManagerConfig` holds the settings of the LogManager
itself (directories, recovery threads and the periods of its scheduled tasks).

Unlike ``effective_value``, which skips a value its key refuses, the constructors from
text (``from_broker_props``, ``with_overrides``) refuse it with ``ConfigError`` naming
the key: they are where storage is handed new text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from config.definitions import LONG_MAX, typed_values
from config.effective import ConfigLayers, effective_value
from config.log_keys import (
    BROKER_LOG_KEYS,
    CLEANUP_COMPACT,
    CLEANUP_DELETE,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    known_topic_configs,
    log_dirs,
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
    "min.insync.replicas": ("min_insync_replicas", int),
    "message.downconversion.enable": ("message_downconversion_enable", bool),
}


def _fields(topic_values: Mapping[str, Any]) -> dict[str, Any]:
    return {
        attr: convert(topic_values[key])
        for key, (attr, convert) in _FIELDS.items()
        if key in topic_values
    }


def _effective_fields(layers: ConfigLayers) -> dict[str, Any]:
    """Every field's effective value over ``layers``."""
    return _fields({key: effective_value(key, layers) for key in _FIELDS})


_NO_LAYERS: Final = ConfigLayers()
_D: Final = _effective_fields(_NO_LAYERS)
_BROKER_DEFAULTS: Final = typed_values(BROKER_LOG_KEYS, {})


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
    #: in-sync replicas an acks=all produce needs (read by the broker, not by the log)
    min_insync_replicas: int = _D["min_insync_replicas"]
    #: whether fetches below v4 may have the log down-converted (read by the broker)
    message_downconversion_enable: bool = _D["message_downconversion_enable"]

    @property
    def deletes(self) -> bool:
        """Whether retention deletes segments (cleanup.policy contains delete)."""
        return CLEANUP_DELETE in self.cleanup_policy.split(",")

    @property
    def compacts(self) -> bool:
        """Whether the log cleaner compacts the log (cleanup.policy contains compact)."""
        return CLEANUP_COMPACT in self.cleanup_policy.split(",")

    @classmethod
    def from_layers(cls, layers: ConfigLayers) -> LogConfig:
        """The effective values over the layers (values a key refuses are skipped)."""
        return cls(**_effective_fields(layers))

    @classmethod
    def from_broker_props(cls, props: Mapping[str, str]) -> LogConfig:
        """The broker-wide default from static broker keys as text. Raises ConfigError (a
        ValueError) naming the key."""
        typed_values(BROKER_LOG_KEYS, props)  # refuses a bad value
        return cls.from_layers(ConfigLayers(static=props))

    def with_overrides(self, topic_props: Mapping[str, str]) -> LogConfig:
        """Apply topic-level keys (``segment.bytes``, ``retention.ms``, ...), which beat
        every broker layer. Keys that are not topic keys are ignored; a bad value of a
        topic key raises ConfigError naming it."""
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
    def from_layers(cls, layers: ConfigLayers) -> CleanerConfig:
        return cls(
            enable=effective_value("log.cleaner.enable", layers),
            threads=effective_value("log.cleaner.threads", layers),
            dedupe_buffer_size=effective_value("log.cleaner.dedupe.buffer.size", layers),
            io_max_bytes_per_second=effective_value("log.cleaner.io.max.bytes.per.second", layers),
            backoff_ms=effective_value("log.cleaner.backoff.ms", layers),
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
    def from_layers(cls, layers: ConfigLayers) -> LogManagerConfig:
        """From the broker's layers: ``log.dirs`` (or ``log.dir``), the recovery threads,
        the periods of the scheduled tasks, the cleaner and the broker-wide log config."""

        def value(key: str) -> Any:
            return effective_value(key, layers)

        return cls(
            log_dirs=tuple(log_dirs({"log.dirs": value("log.dirs"), "log.dir": value("log.dir")})),
            num_recovery_threads_per_data_dir=value("num.recovery.threads.per.data.dir"),
            retention_check_interval_ms=value("log.retention.check.interval.ms"),
            flush_scheduler_interval_ms=value("log.flush.scheduler.interval.ms"),
            flush_offset_checkpoint_interval_ms=value("log.flush.offset.checkpoint.interval.ms"),
            flush_start_offset_checkpoint_interval_ms=value(
                "log.flush.start.offset.checkpoint.interval.ms"
            ),
            initial_task_delay_ms=value("log.initial.task.delay.ms"),
            cleaner=CleanerConfig.from_layers(layers),
            default=LogConfig.from_layers(layers),
        )

    @classmethod
    def from_broker_props(cls, props: Mapping[str, str]) -> LogManagerConfig:
        """As :meth:`from_layers`, from static broker keys as text. Raises ConfigError
        naming a key whose value is bad."""
        typed_values(BROKER_LOG_KEYS, props)  # refuses a bad value
        return cls.from_layers(ConfigLayers(static=props))
