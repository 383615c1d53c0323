"""The broker's configuration, one concept per module:

- :mod:`.properties`     Java ``.properties`` text, read and written
- :mod:`.layering`       the environment (``KAFKA_*``) and ``--override`` sources
- :mod:`.listeners`      ``listeners`` values parsed into zk.model EndPoints
- :mod:`.keys`           the broker's key table (storage's log keys plus the broker's own)
- :mod:`.broker_config`  BrokerConfig: the layered, typed, validated configuration
- :mod:`.describe`       DescribeConfigs entries: values, sources and synonyms

The key machinery (types, validators, ``ConfigError``) and the log and topic-level keys
are storage's (``storage.config_def``, ``storage.log_keys``): storage obeys them and may
not import the broker.
"""

from broker.config.broker_config import BrokerConfig
from broker.config.describe import (
    ConfigEntry,
    ConfigSource,
    describe_broker_config,
    describe_topic_config,
    format_value,
)
from broker.config.keys import BROKER_CONFIG_DEFS, KNOWN_PREFIXES
from broker.config.layering import env_key, parse_overrides, properties_from_env
from broker.config.listeners import parse_listeners, parse_security_protocol_map
from broker.config.properties import format_properties, parse_properties, read_properties
from storage.config_def import ConfigError
from storage.log_keys import validate_topic_configs

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
