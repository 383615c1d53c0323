"""Log configuration: Kafka's broker-level defaults and per-topic overrides.

A :class:`LogConfig` is what one partition's log obeys. The broker builds the default one
from server.properties (``log.*`` keys, :meth:`LogConfig.from_broker_props`) and derives a
topic's by applying the topic-level keys of ``/config/topics/<t>``
(:meth:`LogConfig.with_overrides`). Values are Kafka's defaults.
:class:`LogManagerConfig` holds the settings of the LogManager itself (directories,
recovery threads and the periods of its scheduled tasks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

LONG_MAX = (1 << 63) - 1
CLEANUP_DELETE = "delete"
CLEANUP_COMPACT = "compact"
TIMESTAMP_CREATE_TIME = "CreateTime"
TIMESTAMP_LOG_APPEND_TIME = "LogAppendTime"


def _int(value: str) -> int:
    return int(value.strip())


def _timestamp_type(value: str) -> str:
    v = value.strip()
    if v not in (TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME):
        raise ValueError(f"must be {TIMESTAMP_CREATE_TIME} or {TIMESTAMP_LOG_APPEND_TIME}")
    return v


def _cleanup_policy(value: str) -> str:
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not parts or any(p not in (CLEANUP_DELETE, CLEANUP_COMPACT) for p in parts):
        raise ValueError("must be a list of 'delete' and 'compact'")
    return ",".join(parts)


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60_000
    max_message_bytes: int = 1_048_588
    message_timestamp_type: str = TIMESTAMP_CREATE_TIME
    cleanup_policy: str = CLEANUP_DELETE

    @property
    def deletes(self) -> bool:
        """Whether retention deletes segments (cleanup.policy contains delete)."""
        return CLEANUP_DELETE in self.cleanup_policy.split(",")

    @classmethod
    def from_broker_props(cls, props: Mapping[str, str]) -> LogConfig:
        """Build the default log config from broker keys (``log.segment.bytes``, ...).
        ``log.retention.ms`` wins over ``.minutes`` over ``.hours``, ``log.roll.ms`` over
        ``log.roll.hours``, as in Kafka. Raises ValueError naming the key."""
        values: dict[str, Any] = {}
        for key, (attr, parse) in _BROKER_KEYS.items():
            if key in props:
                values[attr] = _parse(key, props[key], parse)
        for keys, attr in (
            (
                (
                    ("log.retention.ms", 1),
                    ("log.retention.minutes", 60_000),
                    ("log.retention.hours", 3_600_000),
                ),
                "retention_ms",
            ),
            ((("log.roll.ms", 1), ("log.roll.hours", 3_600_000)), "segment_ms"),
        ):
            for key, unit in keys:
                if key in props:
                    v = _parse(key, props[key], _int)
                    values[attr] = v * unit if v >= 0 else -1
                    break
        return cls(**values)

    def with_overrides(self, topic_props: Mapping[str, str]) -> LogConfig:
        """Apply topic-level keys (``segment.bytes``, ``retention.ms``, ...). Keys that are
        not log settings (``min.insync.replicas``, ...) are ignored here."""
        values: dict[str, Any] = {}
        for key, raw in topic_props.items():
            spec = _TOPIC_KEYS.get(key)
            if spec is not None:
                values[spec[0]] = _parse(key, raw, spec[1])
        return dataclasses.replace(self, **values) if values else self


def _parse(key: str, raw: str, parse: Callable[[str], Any]) -> Any:
    try:
        return parse(raw)
    except ValueError as exc:
        raise ValueError(f"invalid value {raw!r} for {key}: {exc}") from None


_Spec = tuple[str, Callable[[str], Any]]

_TOPIC_KEYS: dict[str, _Spec] = {
    "segment.bytes": ("segment_bytes", _int),
    "segment.ms": ("segment_ms", _int),
    "segment.index.bytes": ("segment_index_bytes", _int),
    "index.interval.bytes": ("index_interval_bytes", _int),
    "retention.ms": ("retention_ms", _int),
    "retention.bytes": ("retention_bytes", _int),
    "flush.messages": ("flush_messages", _int),
    "flush.ms": ("flush_ms", _int),
    "file.delete.delay.ms": ("file_delete_delay_ms", _int),
    "max.message.bytes": ("max_message_bytes", _int),
    "message.timestamp.type": ("message_timestamp_type", _timestamp_type),
    "cleanup.policy": ("cleanup_policy", _cleanup_policy),
}

_BROKER_KEYS: dict[str, _Spec] = {
    "log.segment.bytes": ("segment_bytes", _int),
    "log.index.size.max.bytes": ("segment_index_bytes", _int),
    "log.index.interval.bytes": ("index_interval_bytes", _int),
    "log.retention.bytes": ("retention_bytes", _int),
    "log.flush.interval.messages": ("flush_messages", _int),
    "log.flush.interval.ms": ("flush_ms", _int),
    "log.segment.delete.delay.ms": ("file_delete_delay_ms", _int),
    "message.max.bytes": ("max_message_bytes", _int),
    "log.message.timestamp.type": ("message_timestamp_type", _timestamp_type),
    "log.cleanup.policy": ("cleanup_policy", _cleanup_policy),
}

#: Topic-level keys storage understands, for validating CreateTopics configs.
TOPIC_CONFIG_KEYS: frozenset[str] = frozenset(_TOPIC_KEYS)


@dataclass(frozen=True, slots=True)
class LogManagerConfig:
    log_dirs: tuple[str, ...] = ("/tmp/kafka-logs",)
    num_recovery_threads_per_data_dir: int = 1
    retention_check_interval_ms: int = 300_000
    flush_scheduler_interval_ms: int = LONG_MAX
    flush_offset_checkpoint_interval_ms: int = 60_000
    flush_start_offset_checkpoint_interval_ms: int = 60_000
    #: How often the delete-logs task looks for deleted logs and segments whose
    #: file.delete.delay.ms has passed (Kafka reschedules it dynamically instead).
    delete_check_interval_ms: int = 1_000
    initial_task_delay_ms: int = 30_000
    default: LogConfig = field(default_factory=LogConfig)

    @classmethod
    def from_broker_props(cls, props: Mapping[str, str]) -> LogManagerConfig:
        """``log.dirs`` (or ``log.dir``), ``num.recovery.threads.per.data.dir``,
        ``log.retention.check.interval.ms``, ``log.flush.scheduler.interval.ms``,
        ``log.flush.offset.checkpoint.interval.ms``,
        ``log.flush.start.offset.checkpoint.interval.ms`` and the ``log.*`` defaults."""
        values: dict[str, Any] = {"default": LogConfig.from_broker_props(props)}
        dirs = props.get("log.dirs") or props.get("log.dir")
        if dirs:
            values["log_dirs"] = tuple(d.strip() for d in dirs.split(",") if d.strip())
        for key, attr in (
            ("num.recovery.threads.per.data.dir", "num_recovery_threads_per_data_dir"),
            ("log.retention.check.interval.ms", "retention_check_interval_ms"),
            ("log.flush.scheduler.interval.ms", "flush_scheduler_interval_ms"),
            ("log.flush.offset.checkpoint.interval.ms", "flush_offset_checkpoint_interval_ms"),
            (
                "log.flush.start.offset.checkpoint.interval.ms",
                "flush_start_offset_checkpoint_interval_ms",
            ),
        ):
            if key in props:
                values[attr] = _parse(key, props[key], _int)
        return cls(**values)
