"""A key's effective value over its layers: the one rule broker, controller and storage share.

A topic-level key (``retention.ms``, ``min.insync.replicas``, ...) takes its value from
the first of these layers that sets it, strongest first, as Kafka does:

1. the topic's override, ``/config/topics/<t>`` (the topic key itself);
2. this broker's dynamic config, ``/config/brokers/<id>``;
3. the cluster-wide dynamic default, ``/config/brokers/<default>``;
4. the static configuration: server.properties, then ``KAFKA_`` variables, then
   ``--override`` (``config.sources``);
5. the default in the key table.

Layers 2 to 4 hold broker keys: the topic key's synonym from ``config.log_keys``
(``retention.ms`` <- ``log.retention.ms``) and the keys that give it in another unit
(``log.retention.minutes``, ``log.retention.hours``). Those are looked up one at a time,
each through the broker layers strongest first, and the first one set wins: a static
``log.retention.ms`` beats a dynamic ``log.retention.hours``, because Kafka merges the
broker layers into one map before it applies its unit rules (``broker_value``). A broker
key asked for directly starts at layer 2.

Every layer is text, as its source holds it. A value its key refuses is skipped as if
unset: the broker refuses such values where they are written (startup, CreateTopics,
AlterConfigs), so one that is there anyway was written by another tool, and a running
broker serves the next layer's value rather than fail. Callers that must refuse bad input
check it first (``validate_topic_configs``, ``typed_values``).

``EffectiveValueMemo`` remembers answers under fixed broker layers for callers that ask
often (acks=all asks on every produce), keyed by the identity of the topic's overrides
mapping: it is only correct for overrides that are replaced, never changed in place, and
it is bounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from config.definitions import AnyDef, checked
from config.errors import ConfigError
from config.log_keys import BROKER_LOG_KEYS, TOPIC_KEYS, broker_value, related_broker_keys

#: a layer: key -> value as text
Layer = Mapping[str, str]

NO_LAYER: Final[Layer] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ConfigLayers:
    """The text layers of a topic's configuration, strongest first; a layer nobody set is
    empty, and then the key tables' defaults apply."""

    #: the topic's overrides (topic keys)
    topic: Layer = field(default_factory=lambda: NO_LAYER)
    #: this broker's dynamic config (broker keys)
    dynamic_broker: Layer = field(default_factory=lambda: NO_LAYER)
    #: the cluster-wide dynamic default (broker keys)
    dynamic_default: Layer = field(default_factory=lambda: NO_LAYER)
    #: the static configuration: file, environment, --override (broker keys)
    static: Layer = field(default_factory=lambda: NO_LAYER)

    def broker_layers(self) -> tuple[Layer, Layer, Layer]:
        """The layers holding broker keys, strongest first."""
        return (self.dynamic_broker, self.dynamic_default, self.static)

    def with_topic(self, topic: Layer) -> ConfigLayers:
        """These broker layers under another topic's overrides."""
        return ConfigLayers(topic, self.dynamic_broker, self.dynamic_default, self.static)


def _usable(definition: AnyDef, raw: str) -> Any:
    """The typed value of ``raw``, or None when the key refuses it (skipped as unset)."""
    try:
        return checked(definition, raw)
    except ConfigError:
        return None


def _broker_key_value(name: str, layers: ConfigLayers) -> Any:
    """Broker key ``name`` as set by its strongest broker layer, else its default."""
    definition = BROKER_LOG_KEYS[name]
    for layer in layers.broker_layers():
        raw = layer.get(name)
        if raw is not None:
            value = _usable(definition, raw)
            if value is not None:
                return value
    return definition.typed_default()


def effective_value(key: str, layers: ConfigLayers) -> Any:
    """The typed value of ``key`` (a topic-level key, or a broker key of ``BROKER_LOG_KEYS``)
    over ``layers``. KeyError for a key neither table declares."""
    topic_definition = TOPIC_KEYS.get(key)
    if topic_definition is not None:
        raw = layers.topic.get(key)
        if raw is not None:
            value = _usable(topic_definition, raw)
            if value is not None:
                return value
        if topic_definition.synonym is None:
            return topic_definition.typed_default()
        broker_key = topic_definition.synonym
    elif key in BROKER_LOG_KEYS:
        broker_key = key
    else:
        raise KeyError(f"no topic or log configuration key {key!r}")
    values = {name: _broker_key_value(name, layers) for name in related_broker_keys(broker_key)}
    return broker_value(values, broker_key)


class EffectiveValueMemo:
    """``effective_value`` under fixed broker layers, remembered for up to ``capacity``
    (key, topic overrides) pairs.

    An entry is found again only for the very same overrides mapping (its identity is the
    key, and the entry holds it so that no other mapping can take its id), so overrides
    must be replaced, never changed in place, as the broker's are (TopicConfigs stores
    each topic's anew; a dynamic broker config builds a new BrokerConfig, with a new
    memo). When full, the memo starts again empty: topics come and go, and a stale entry
    is never found again.
    """

    def __init__(self, broker_layers: ConfigLayers, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a memo holds at least one entry")
        self._layers = broker_layers
        self._capacity = capacity
        self._known: dict[tuple[str, int], tuple[Layer, Any]] = {}

    def __len__(self) -> int:
        return len(self._known)

    def value(self, key: str, topic: Layer) -> Any:
        """``effective_value(key, broker_layers.with_topic(topic))``."""
        entry = self._known.get((key, id(topic)))
        if entry is not None:
            return entry[1]
        value = effective_value(key, self._layers.with_topic(topic))
        if len(self._known) >= self._capacity:
            self._known.clear()
        self._known[(key, id(topic))] = (topic, value)
        return value
