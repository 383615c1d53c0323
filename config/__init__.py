"""minikafka's configuration: the key tables, their parsing and how layers combine.

Broker, controller and storage all read configuration through this package; it imports
only the standard library and ``javaproperties``. One concept per module:

- :mod:`.errors`       ConfigError, the one error a bad value raises
- :mod:`.definitions`  a key as data (ConfigDef, TopicConfigDef): type, default,
                       validator, doc; parsing text to typed values and back
- :mod:`.log_keys`     the log keys and the topic-level keys, each topic key with its
                       broker synonym (``retention.ms`` <- ``log.retention.ms``)
- :mod:`.effective`    a key's effective value over its layers: topic override, dynamic
                       per-broker, dynamic cluster default, static, default
- :mod:`.properties`   Java ``.properties`` text, read and written
- :mod:`.sources`      the static layer's other sources: ``KAFKA_*`` variables, ``--override``

The directory also holds the example ``server.properties``, as Kafka's distribution does.
The broker's own keys (listeners, groups, ...) and its typed BrokerConfig are the
broker's (``broker.config``).
"""

from config.definitions import ConfigDef, ConfigType, TopicConfigDef, checked, format_value
from config.effective import ConfigLayers, EffectiveValueMemo, effective_value
from config.errors import ConfigError
from config.properties import format_properties, parse_properties, read_properties

__all__ = [
    "ConfigDef",
    "ConfigError",
    "ConfigLayers",
    "ConfigType",
    "EffectiveValueMemo",
    "TopicConfigDef",
    "checked",
    "effective_value",
    "format_properties",
    "format_value",
    "parse_properties",
    "read_properties",
]
