"""The options of Spark's Kafka source, parsed (pure: no Spark, no files, no sockets).

A job written for Spark's Kafka source runs on "minikafka" by changing the format name,
so the option names, their JSON and their rules are Spark's:

- which partitions: exactly one of ``subscribe`` (topics, comma-separated),
  ``subscribePattern`` (a regex matched against whole topic names) or ``assign``
  (``{"topic": [0, 1]}``);
- where to start: ``startingOffsetsByTimestamp`` (``{"topic": {"0": ms}}``) or
  ``startingTimestamp`` (one ms for every partition): the first offset whose timestamp is
  at or after it (``startingOffsetsByTimestampStrategy``: ``error`` when a partition has
  none, or ``latest``); else ``startingOffsets``: ``earliest``, ``latest`` or
  ``{"topic": {"0": 42, "1": -2}}`` with -2 for earliest and -1 for latest (default:
  earliest for a batch query, latest for a stream);
- where to end (batch only): ``endingOffsets``, ``latest`` or JSON as above;
- ``minPartitions``, ``maxOffsetsPerTrigger``, ``failOnDataLoss`` (default true),
  ``includeHeaders`` (default false);
- where from: ``path`` (log directories, comma-separated) or
  ``kafka.bootstrap.servers``; the other ``kafka.``-prefixed options are the client's
  properties, as Spark hands them to its Kafka consumer (``kafka.security.protocol``,
  ``kafka.sasl.jaas.config``, ``kafka.ssl.truststore.location``, ...: client.properties);
  ``kafka.isolation.level``: ``read_uncommitted`` (the default) or ``read_committed``
  (no aborted transaction's records, nothing from an open transaction on:
  :mod:`spark_jobs.committed`).

Option names are case-insensitive, as Spark's are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from protocol.values import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    TopicPartition,
)

#: Offsets in Kafka-JSON: -2 is the earliest offset, -1 the latest (ListOffsets' values).
EARLIEST = EARLIEST_TIMESTAMP
LATEST = LATEST_TIMESTAMP


class OptionError(ValueError):
    """An option is missing, contradicts another, or cannot be parsed."""


@dataclass(frozen=True)
class Subscription:
    """Which partitions a query reads: by topic names, a pattern, or an assignment."""

    topics: frozenset[str] = frozenset()
    pattern: re.Pattern[str] | None = None
    assigned: frozenset[TopicPartition] = frozenset()

    def select(self, available: Iterable[TopicPartition]) -> list[TopicPartition]:
        """The partitions of ``available`` this subscription reads, sorted (an assigned
        partition that does not exist is left out)."""
        if self.assigned:
            chosen = set(self.assigned) & set(available)
        elif self.pattern is not None:
            pattern = self.pattern
            chosen = {tp for tp in available if pattern.fullmatch(tp.topic)}
        else:
            chosen = {tp for tp in available if tp.topic in self.topics}
        return sorted(chosen)


@dataclass(frozen=True)
class OffsetSpec:
    """Where a query starts or ends: per partition an offset (-2/-1 for earliest/latest)
    or a timestamp; ``default`` for partitions not named."""

    default: int = EARLIEST
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    #: start at the first offset whose timestamp is >= this (every partition)
    timestamp: int | None = None
    timestamps: Mapping[TopicPartition, int] = field(default_factory=dict)

    def timestamp_for(self, tp: TopicPartition) -> int | None:
        return self.timestamp if self.timestamp is not None else self.timestamps.get(tp)

    def offset_for(self, tp: TopicPartition) -> int:
        return self.offsets.get(tp, self.default)


@dataclass(frozen=True)
class SourceOptions:
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    log_dirs: tuple[str, ...] = ()
    bootstrap_servers: str | None = None
    #: the ``kafka.`` options but the bootstrap servers, without the prefix: the client
    #: properties every connection to the cluster is made with
    client_properties: tuple[tuple[str, str], ...] = ()
    min_partitions: int | None = None
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    #: when no record is at or after a starting timestamp: "error" or "latest"
    timestamp_strategy: str = "error"
    #: READ_UNCOMMITTED or READ_COMMITTED (``kafka.isolation.level``)
    isolation_level: int = READ_UNCOMMITTED


def parse_options(raw: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Spark's Kafka source options, checked; raises :class:`OptionError`."""
    options = {k.lower(): v for k, v in raw.items()}
    log_dirs = tuple(p.strip() for p in options.get("path", "").split(",") if p.strip())
    bootstrap = options.get("kafka.bootstrap.servers")
    if bool(log_dirs) == bool(bootstrap):
        raise OptionError("give exactly one of the options path and kafka.bootstrap.servers")
    if streaming and "endingoffsets" in options:
        raise OptionError("endingOffsets is for batch queries only")
    strategy = options.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise OptionError(f"startingOffsetsByTimestampStrategy {strategy!r}: error or latest")
    isolation = options.get("kafka.isolation.level", "read_uncommitted").strip().lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise OptionError(
            f"kafka.isolation.level {isolation!r}: read_uncommitted or read_committed"
        )
    return SourceOptions(
        subscription=_subscription(options),
        starting=_starting(options, streaming),
        ending=_offsets(options.get("endingoffsets", "latest"), "endingOffsets"),
        log_dirs=log_dirs,
        bootstrap_servers=bootstrap,
        client_properties=_client_properties(raw),
        min_partitions=_positive(options, "minpartitions"),
        max_offsets_per_trigger=_positive(options, "maxoffsetspertrigger"),
        fail_on_data_loss=_boolean(options, "failondataloss", True),
        include_headers=_boolean(options, "includeheaders", False),
        timestamp_strategy=strategy,
        isolation_level=READ_COMMITTED if isolation == "read_committed" else READ_UNCOMMITTED,
    )


def _client_properties(raw: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The ``kafka.`` options without their prefix (names as given: client properties
    are lower case), the bootstrap servers left out."""
    prefix = "kafka."
    return tuple(
        sorted(
            (name[len(prefix) :], value)
            for name, value in raw.items()
            if name.lower().startswith(prefix) and name.lower() != "kafka.bootstrap.servers"
        )
    )


def _subscription(options: Mapping[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in options]
    if len(given) != 1:
        raise OptionError("give exactly one of subscribe, subscribePattern and assign")
    value = options[given[0]]
    if given[0] == "subscribe":
        topics = frozenset(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError("subscribe names no topic")
        return Subscription(topics=topics)
    if given[0] == "subscribepattern":
        try:
            return Subscription(pattern=re.compile(value))
        except re.error as exc:
            raise OptionError(f"subscribePattern {value!r}: {exc}") from None
    assignment = _json_object(value, "assign")
    try:
        return Subscription(
            assigned=frozenset(
                TopicPartition(topic, int(p)) for topic, ps in assignment.items() for p in ps
            )
        )
    except (TypeError, ValueError):
        raise OptionError(f'assign {value!r}: expected {{"topic": [0, 1]}}') from None


def _starting(options: Mapping[str, str], streaming: bool) -> OffsetSpec:
    if "startingtimestamp" in options:
        return OffsetSpec(timestamp=_integer(options["startingtimestamp"], "startingTimestamp"))
    if "startingoffsetsbytimestamp" in options:
        by_tp = _partition_map(options["startingoffsetsbytimestamp"], "startingOffsetsByTimestamp")
        return OffsetSpec(timestamps=by_tp)
    default = "latest" if streaming else "earliest"
    return _offsets(options.get("startingoffsets", default), "startingOffsets")


def _offsets(value: str, name: str) -> OffsetSpec:
    """``earliest``, ``latest`` or Kafka-JSON offsets."""
    word = value.strip().lower()
    if word in ("earliest", "latest"):
        return OffsetSpec(default=EARLIEST if word == "earliest" else LATEST)
    offsets = _partition_map(value, name)
    if any(o < EARLIEST for o in offsets.values()):
        raise OptionError(f"{name}: offsets are >= 0, or -2 (earliest) or -1 (latest)")
    return OffsetSpec(offsets=offsets)


def _partition_map(value: str, name: str) -> dict[TopicPartition, int]:
    """``{"topic": {"0": n, ...}}`` (JSON text) as a map."""
    return flatten_offsets(_json_object(value, name), name)


def flatten_offsets(nested: Mapping[str, Any], name: str = "offsets") -> dict[TopicPartition, int]:
    """``{"topic": {"0": n, ...}}`` as a map, checked."""
    try:
        return {
            TopicPartition(topic, int(p)): int(n)
            for topic, by_partition in nested.items()
            for p, n in by_partition.items()
        }
    except (AttributeError, TypeError, ValueError):
        raise OptionError(f'{name} {nested!r}: expected {{"topic": {{"0": 42}}}}') from None


def _json_object(value: str, name: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise OptionError(f"{name}: not JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise OptionError(f"{name}: expected a JSON object")
    return parsed


def _integer(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise OptionError(f"{name} {value!r} is not an integer") from None


def _positive(options: Mapping[str, str], key: str) -> int | None:
    if key not in options:
        return None
    number = _integer(options[key], key)
    if number <= 0:
        raise OptionError(f"{key} must be positive, not {number}")
    return number


def _boolean(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = options.get(key, str(default)).strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"{key} {value!r}: true or false")
    return value == "true"


def nest_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Per-partition offsets in Kafka-JSON's shape, ``{"topic": {"0": 42}}``, sorted
    (what a stream's offsets are, in Spark's checkpoint)."""
    nested: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        nested.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return nested


def offsets_json(offsets: Mapping[TopicPartition, int]) -> str:
    return json.dumps(nest_offsets(offsets), separators=(",", ":"))


def parse_offsets_json(value: str) -> dict[TopicPartition, int]:
    return _partition_map(value, "offsets")
