"""The broker's configuration, one concept per module:

- :mod:`.listeners`      ``listeners`` values parsed into zk.model EndPoints
- :mod:`.keys`           the broker's key table (the log keys plus the broker's own)
- :mod:`.broker_config`  BrokerConfig: the layered, typed, validated configuration
- :mod:`.describe`       DescribeConfigs entries: values, sources and synonyms
- :mod:`.alter`          AlterConfigs and IncrementalAlterConfigs as pure decisions
- :mod:`.docs`           the README's configuration tables

The key machinery (types, validators, ``ConfigError``), the log and topic-level keys,
``.properties`` parsing, the ``KAFKA_*`` and ``--override`` sources and the rule that
combines a key's layers are the top-level ``config`` package's, which storage and the
controller use too; this package re-exports the names its callers have always used.
"""

from broker.config.broker_config import BrokerConfig
from broker.config.describe import (
    ConfigEntry,
    ConfigSource,
    describe_broker_config,
    describe_topic_config,
)
from broker.config.keys import BROKER_CONFIG_DEFS, KNOWN_PREFIXES
from broker.config.listeners import parse_listeners, parse_security_protocol_map
from config.definitions import format_value
from config.errors import ConfigError
from config.log_keys import validate_topic_configs
from config.properties import format_properties, parse_properties, read_properties
from config.sources import env_key, parse_overrides, properties_from_env

__all__ = [
    "BROKER_CONFIG_DEFS",
    "KNOWN_PREFIXES",
    "BrokerConfig",
    "ConfigEntry",
    "ConfigError",
    "ConfigSource",
    "describe_broker_config",
    "describe_topic_config",
    "env_key",
    "format_properties",
    "format_value",
    "parse_listeners",
    "parse_overrides",
    "parse_properties",
    "parse_security_protocol_map",
    "properties_from_env",
    "read_properties",
    "validate_topic_configs",
]
