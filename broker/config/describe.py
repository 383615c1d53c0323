"""DescribeConfigs answers: every key's value as text, where it came from, and its synonyms.

A broker's entries layer its dynamic configs (this broker's, then the cluster default's)
over its static configuration and the defaults; the keys that need a restart are
read-only. A topic's entries layer its overrides (DYNAMIC_TOPIC_CONFIG) over the broker's
value of the synonym key; AlterConfigs may change them, so they are not read-only.

Which synonyms an entry lists, in which order, and so which source it reports, is
Kafka's rule (broker.config.synonyms): layer by layer, strongest first, the names that
decide the broker key, cut before the key's own first appearance; a topic's override
leads its list. An entry's source is its first synonym's, DEFAULT_CONFIG when it lists
none; its value is the effective one either way (``retention.ms`` of a broker that sets
only ``log.retention.hours`` says the hours in ms, with no synonym and DEFAULT_CONFIG).
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.config.keys import BROKER_CONFIG_DEFS, DYNAMIC_BROKER_KEYS
from broker.config.synonyms import listed_synonyms, synonym_keys
from config.definitions import ConfigType, format_value
from config.log_keys import TOPIC_KEYS, validate_topic_configs

if TYPE_CHECKING:
    from broker.config.broker_config import BrokerConfig


class ConfigSource(enum.IntEnum):
    """Where a value came from; the numbers are DescribeConfigs' ``config_source`` values."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


#: (name, value, source) of one synonym
Synonym = tuple[str, str | None, ConfigSource]


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One DescribeConfigs result entry (values as the wire carries them: strings)."""

    name: str
    value: str | None
    source: ConfigSource
    type: ConfigType
    documentation: str
    read_only: bool
    is_sensitive: bool
    #: (name, value, source), strongest first; the entry's own value leads
    synonyms: tuple[Synonym, ...]


def _entry(
    name: str,
    kind: ConfigType,
    doc: str,
    value: str | None,
    synonyms: list[Synonym],
    read_only: bool,
) -> ConfigEntry:
    """The entry, its source its first synonym's; a password's values are hidden."""
    source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
    sensitive = kind is ConfigType.PASSWORD
    if sensitive:
        value = None
        synonyms = [(n, None, s) for n, _, s in synonyms]
    return ConfigEntry(name, value, source, kind, doc, read_only, sensitive, tuple(synonyms))


def describe_broker_config(
    broker: BrokerConfig, names: Iterable[str] | None = None
) -> list[ConfigEntry]:
    """Every broker key (or ``names``; unknown ones skipped)."""
    layers = _sourced_layers(broker)
    entries = []
    for name in BROKER_CONFIG_DEFS if names is None else names:
        definition = BROKER_CONFIG_DEFS.get(name)
        if definition is None:
            continue
        synonyms = listed_synonyms(name, synonym_keys(name), layers)
        value = format_value(broker.values[name])
        read_only = name not in DYNAMIC_BROKER_KEYS
        entries.append(_entry(name, definition.type, definition.doc, value, synonyms, read_only))
    return entries


def _sourced_layers(broker: BrokerConfig) -> list[tuple[Mapping[str, str], ConfigSource]]:
    """The broker's layers with their sources, strongest first, the defaults last."""
    sources = (
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    layers = list(zip(broker.config_layers.broker_layers(), sources, strict=True))
    return [*layers, (_default_layer(), ConfigSource.DEFAULT_CONFIG)]


@functools.cache
def _default_layer() -> Mapping[str, str]:
    """Every broker key's default in text form, keys without one (null) left out."""
    defaults = {name: format_value(d.default) for name, d in BROKER_CONFIG_DEFS.items()}
    return {name: text for name, text in defaults.items() if text is not None}


def describe_topic_config(
    broker: BrokerConfig,
    overrides: Mapping[str, str | None],
    names: Iterable[str] | None = None,
) -> list[ConfigEntry]:
    """Every topic key (or ``names``; unknown ones skipped) of a topic with ``overrides``."""
    typed_overrides = validate_topic_configs(overrides)  # ConfigError for a bad one
    defaults = broker.topic_defaults()
    layers = _sourced_layers(broker)
    entries = []
    for name in TOPIC_KEYS if names is None else names:
        definition = TOPIC_KEYS.get(name)
        if definition is None:
            continue
        broker_key = definition.synonym
        synonyms: list[Synonym] = []
        if broker_key is not None:  # a key without one lists no synonyms: its default
            synonyms = listed_synonyms(broker_key, synonym_keys(broker_key), layers)
        value = format_value(defaults[name])
        if name in overrides:
            value = format_value(typed_overrides[name])
            synonyms.insert(0, (name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
        entries.append(_entry(name, definition.type, definition.doc, value, synonyms, False))
    return entries
