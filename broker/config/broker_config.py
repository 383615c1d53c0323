"""BrokerConfig: a server.properties checked against Kafka's keys, types and defaults.

Where values come from, weakest first (each layer replaces keys of the one before):

1. the defaults in ``broker.config.keys.BROKER_CONFIG_DEFS``;
2. the properties file (Java ``.properties`` syntax, see ``config.properties``);
3. ``KAFKA_``-prefixed environment variables (``config.sources``);
4. ``--override key=value`` arguments;
5. dynamic configs from ZooKeeper, on a running broker (``with_dynamic``): the cluster
   default ``/config/brokers/<default>``, then this broker's ``/config/brokers/<id>``.

``config_layers`` hands the layers (file, environment and ``--override`` merged into the
static one) to ``config.effective``, which works out a topic key's value from them under
a topic's overrides: ``topic_value`` (remembered, as acks=all asks on every produce) and
``topic_defaults``.

Every value is parsed to its type and validated once, at startup; a bad value raises
``ConfigError`` naming the key. Keys not in the table are kept (``unknown_keys``) so the
caller can warn about them, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from broker.config.describe import ConfigEntry, ConfigSource, describe_broker_config
from broker.config.keys import BROKER_CONFIG_DEFS, KNOWN_PREFIXES
from broker.config.listener_config import ListenerConfig
from broker.config.listeners import (
    SUPPORTED_SECURITY_PROTOCOLS,
    parse_ip_overrides,
    parse_listeners,
    parse_security_protocol_map,
)
from config.definitions import typed_values
from config.effective import ConfigLayers, EffectiveValueMemo, effective_value
from config.errors import ConfigError
from config.log_keys import TOPIC_KEYS, log_dirs
from config.properties import read_properties
from config.sources import parse_overrides, properties_from_env
from zk.model import EndPoint

_T = TypeVar("_T")

#: how many (topic key, overrides) answers ``topic_value`` remembers per configuration
TOPIC_VALUE_MEMO_CAPACITY = 10_000

#: DescribeConfigs' source of each of ``ConfigLayers.broker_layers()``, strongest first
_BROKER_LAYER_SOURCES = (
    ConfigSource.DYNAMIC_BROKER_CONFIG,
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    ConfigSource.STATIC_BROKER_CONFIG,
)


@dataclass(frozen=True)
class BrokerConfig:
    """A validated broker configuration. Immutable; ``values`` holds every defined key."""

    values: Mapping[str, Any]
    #: the static layers (file, environment, --override), as text
    originals: Mapping[str, str]
    unknown_keys: tuple[str, ...] = ()
    #: the dynamic layers, as text: the cluster default's and this broker's own
    dynamic_default: Mapping[str, str] = field(default_factory=dict)
    dynamic_broker: Mapping[str, str] = field(default_factory=dict)
    _derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: topic_value's answers under this configuration's layers
    _memo: EffectiveValueMemo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        memo = EffectiveValueMemo(self.config_layers, TOPIC_VALUE_MEMO_CAPACITY)
        object.__setattr__(self, "_memo", memo)

    # construction ---------------------------------------------------------------------

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        """Type and validate ``props`` (text values) on top of the defaults."""
        values = typed_values(BROKER_CONFIG_DEFS, props)
        unknown = tuple(
            sorted(
                key
                for key in props
                if key not in BROKER_CONFIG_DEFS and not key.startswith(KNOWN_PREFIXES)
            )
        )
        config = cls(values=values, originals=dict(props), unknown_keys=unknown)
        config._validate()
        return config

    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        overrides: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> BrokerConfig:
        """File, then KAFKA_ environment variables, then ``--override key=value``."""
        props: dict[str, str] = dict(read_properties(path)) if path is not None else {}
        if environ is not None:
            props.update(properties_from_env(environ))
        props.update(parse_overrides(overrides))
        return cls.from_properties(props)

    def with_overrides(self, overrides: Mapping[str, str]) -> BrokerConfig:
        return BrokerConfig.from_properties({**self.originals, **overrides})

    def with_dynamic(self, *, default: bool, config: Mapping[str, str]) -> BrokerConfig:
        """This configuration with a new dynamic layer: the cluster default's
        (``default``) or this broker's own. ConfigError if a value is bad."""
        dynamic_default = dict(config) if default else dict(self.dynamic_default)
        dynamic_broker = dict(self.dynamic_broker) if default else dict(config)
        layered = {**self.originals, **dynamic_default, **dynamic_broker}
        values = typed_values(BROKER_CONFIG_DEFS, layered)
        return BrokerConfig(
            values, self.originals, self.unknown_keys, dynamic_default, dynamic_broker
        )

    # access ---------------------------------------------------------------------------------

    def get(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise KeyError(f"unknown configuration key {name!r}") from None

    def get_int(self, name: str) -> int:
        value = self.get(name)
        assert isinstance(value, int), name
        return value

    def get_bool(self, name: str) -> bool:
        value = self.get(name)
        assert isinstance(value, bool), name
        return value

    def get_str(self, name: str) -> str | None:
        value = self.get(name)
        assert value is None or isinstance(value, str), name
        return value

    def layers(self, name: str) -> list[tuple[str, ConfigSource]]:
        """The text values ``name`` is given, strongest layer first (defaults not
        included): Kafka's order of DescribeConfigs synonyms."""
        found = []
        for layer, source in zip(self.config_layers.broker_layers(), _BROKER_LAYER_SOURCES):
            if name in layer:
                found.append((layer[name], source))
        return found

    def source(self, name: str) -> ConfigSource:
        """Where ``name``'s value comes from: its strongest layer."""
        layers = self.layers(name)
        return layers[0][1] if layers else ConfigSource.DEFAULT_CONFIG

    def describe(self, names: Iterable[str] | None = None) -> list[ConfigEntry]:
        """DescribeConfigs for this broker: every key (or ``names``; unknown ones skipped).
        Keys a running broker cannot change are read-only."""
        return describe_broker_config(self, names)

    # derived values (Kafka's precedence rules between related keys) -----------------------

    @property
    def broker_id(self) -> int:
        return self.get_int("broker.id")

    @property
    def log_dirs(self) -> list[str]:
        return log_dirs(self.values)

    @property
    def log_retention_ms(self) -> int:
        """ms beats minutes beats hours; any negative value means keep forever (-1)."""
        return int(effective_value("log.retention.ms", self.config_layers))

    @property
    def log_roll_ms(self) -> int:
        return int(effective_value("log.roll.ms", self.config_layers))

    @property
    def log_roll_jitter_ms(self) -> int:
        return int(effective_value("log.roll.jitter.ms", self.config_layers))

    @property
    def log_flush_interval_ms(self) -> int:
        return int(effective_value("log.flush.interval.ms", self.config_layers))

    @property
    def zookeeper_connection_timeout_ms(self) -> int:
        ms = self.get("zookeeper.connection.timeout.ms")
        return int(ms) if ms is not None else self.get_int("zookeeper.session.timeout.ms")

    @property
    def security_protocol_map(self) -> dict[str, str]:
        return self._cached(
            "protocol_map",
            lambda: parse_security_protocol_map(
                "listener.security.protocol.map", self.get("listener.security.protocol.map")
            ),
        )

    @property
    def listeners(self) -> list[EndPoint]:
        return self._cached(
            "listeners",
            lambda: parse_listeners("listeners", self.get("listeners"), self.security_protocol_map),
        )

    @property
    def advertised_listeners(self) -> list[EndPoint]:
        raw = self.get_str("advertised.listeners")
        if not raw:
            return self.listeners
        return self._cached(
            "advertised",
            lambda: parse_listeners("advertised.listeners", raw, self.security_protocol_map),
        )

    @property
    def control_plane_listener(self) -> EndPoint | None:
        name = self.get_str("control.plane.listener.name")
        if not name:
            return None
        return next(e for e in self.listeners if e.listener_name == name.upper())

    @property
    def data_plane_listeners(self) -> list[EndPoint]:
        control = self.control_plane_listener
        return [e for e in self.listeners if control is None or e != control]

    @property
    def inter_broker_listener_name(self) -> str:
        name = self.get_str("inter.broker.listener.name")
        return name.upper() if name else str(self.get("security.inter.broker.protocol"))

    def listener_config(self, listener_name: str) -> ListenerConfig:
        """The keys of listener ``listener_name`` (``listener.name.<name>.<key>`` first)."""
        name = listener_name.upper()
        return self._cached(
            f"listener:{name}",
            lambda: ListenerConfig(
                name,
                self.security_protocol_map.get(name, name),
                {**self.originals, **self.dynamic_default, **self.dynamic_broker},
                self.values,
            ),
        )

    @property
    def max_connections_per_ip_overrides(self) -> dict[str, int]:
        return parse_ip_overrides(
            "max.connections.per.ip.overrides", self.get("max.connections.per.ip.overrides")
        )

    @property
    def config_layers(self) -> ConfigLayers:
        """This broker's layers (no topic override): this broker's dynamic config, the
        cluster default, the static configuration."""
        return self._cached(
            "layers",
            lambda: ConfigLayers(
                dynamic_broker=self.dynamic_broker,
                dynamic_default=self.dynamic_default,
                static=self.originals,
            ),
        )

    def topic_value(self, key: str, overrides: Mapping[str, str]) -> Any:
        """Topic key ``key``'s effective value for a topic with ``overrides`` (an override
        the key refuses is skipped). Remembered per overrides mapping, which must be
        replaced, never changed in place (TopicConfigs stores each topic's anew)."""
        return self._memo.value(key, overrides)

    def topic_defaults(self) -> dict[str, Any]:
        """Every topic-level key with the value this broker gives it (its synonym's)."""
        layers = self.config_layers
        return {name: effective_value(name, layers) for name in TOPIC_KEYS}

    # checks across keys ---------------------------------------------------------------------

    def _cached(self, key: str, make: Callable[[], _T]) -> _T:
        if key not in self._derived:
            self._derived[key] = make()
        value: _T = self._derived[key]
        return value

    def _validate(self) -> None:
        broker_id, reserved = self.broker_id, self.get_int("reserved.broker.max.id")
        if broker_id > reserved and broker_id != -1:
            raise ConfigError(
                "broker.id", f"{broker_id} is above reserved.broker.max.id ({reserved})"
            )
        if not self.log_dirs:
            raise ConfigError("log.dirs", "no log directory given (log.dirs or log.dir)")
        listeners = self.listeners
        if not listeners:
            raise ConfigError("listeners", "at least one listener is required")
        for endpoint in listeners:
            if endpoint.security_protocol not in SUPPORTED_SECURITY_PROTOCOLS:
                raise ConfigError(
                    "listeners",
                    f"listener {endpoint.listener_name} uses {endpoint.security_protocol}; "
                    f"minikafka serves {', '.join(sorted(SUPPORTED_SECURITY_PROTOCOLS))}",
                )
        ports = [e.port for e in listeners if e.port != 0]
        if len(ports) != len(set(ports)):
            raise ConfigError("listeners", "two listeners share a port")
        names = {e.listener_name for e in listeners}
        for endpoint in self.advertised_listeners:
            if endpoint.listener_name not in names:
                raise ConfigError(
                    "advertised.listeners",
                    f"{endpoint.listener_name} is not one of listeners {sorted(names)}",
                )
            if endpoint.host == "0.0.0.0":
                raise ConfigError("advertised.listeners", "cannot advertise the 0.0.0.0 address")
        control = self.get_str("control.plane.listener.name")
        if control and control.upper() not in names:
            raise ConfigError(
                "control.plane.listener.name", f"{control} is not one of {sorted(names)}"
            )
        inter = self.get_str("inter.broker.listener.name")
        if inter and inter.upper() not in names:
            raise ConfigError(
                "inter.broker.listener.name", f"{inter} is not one of {sorted(names)}"
            )
        if control and inter and control.upper() == inter.upper():
            raise ConfigError(
                "control.plane.listener.name", "must differ from inter.broker.listener.name"
            )
        self.max_connections_per_ip_overrides  # noqa: B018 -- parse now to refuse bad values
