"""DescribeConfigs answers: every key's value as text, where it came from, and its synonyms.

A broker's entries layer its dynamic configs (this broker's, then the cluster default's)
over its static configuration and the defaults; the keys that need a restart are
read-only. A topic's entries layer its
overrides (DYNAMIC_TOPIC_CONFIG) over the broker's value of the synonym key (its source
the strongest broker layer setting that key or one that supplies it, else DEFAULT_CONFIG);
AlterConfigs may change them, so they are not read-only.
Synonyms are listed strongest first, the entry's own value leading.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.config.keys import BROKER_CONFIG_DEFS, DYNAMIC_BROKER_KEYS
from config.definitions import ConfigType, format_value
from config.log_keys import TOPIC_KEYS, related_broker_keys, validate_topic_configs

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
    source: ConfigSource,
    synonyms: list[Synonym],
    read_only: bool,
) -> ConfigEntry:
    """The entry whose value is its strongest synonym's; a password's values are hidden."""
    value = synonyms[0][1]
    sensitive = kind is ConfigType.PASSWORD
    if sensitive:
        value = None
        synonyms = [(n, None, s) for n, _, s in synonyms]
    return ConfigEntry(name, value, source, kind, doc, read_only, sensitive, tuple(synonyms))


def describe_broker_config(
    broker: BrokerConfig, names: Iterable[str] | None = None
) -> list[ConfigEntry]:
    """Every broker key (or ``names``; unknown ones skipped)."""
    entries = []
    for name in BROKER_CONFIG_DEFS if names is None else names:
        definition = BROKER_CONFIG_DEFS.get(name)
        if definition is None:
            continue
        layers = broker.layers(name)
        synonyms: list[Synonym] = [(name, raw, source) for raw, source in layers]
        if synonyms:  # the strongest layer's value as the broker parsed it
            synonyms[0] = (name, format_value(broker.values[name]), layers[0][1])
        synonyms.append((name, format_value(definition.default), ConfigSource.DEFAULT_CONFIG))
        read_only = name not in DYNAMIC_BROKER_KEYS
        entries.append(
            _entry(name, definition.type, definition.doc, synonyms[0][2], synonyms, read_only)
        )
    return entries


def describe_topic_config(
    broker: BrokerConfig,
    overrides: Mapping[str, str | None],
    names: Iterable[str] | None = None,
) -> list[ConfigEntry]:
    """Every topic key (or ``names``; unknown ones skipped) of a topic with ``overrides``."""
    typed_overrides = validate_topic_configs(overrides)  # ConfigError for a bad one
    defaults = broker.topic_defaults()
    entries = []
    for name in TOPIC_KEYS if names is None else names:
        definition = TOPIC_KEYS.get(name)
        if definition is None:
            continue
        synonyms: list[Synonym] = []
        if name in overrides:
            synonyms.append(
                (name, format_value(typed_overrides[name]), ConfigSource.DYNAMIC_TOPIC_CONFIG)
            )
        # the strongest layer setting any key that decides the broker's value
        source = min(broker.source(key) for key in related_broker_keys(definition.synonym))
        synonyms.append((definition.synonym, format_value(defaults[name]), source))
        entries.append(
            _entry(name, definition.type, definition.doc, synonyms[0][2], synonyms, False)
        )
    return entries
