"""BrokerConfig: a server.properties checked against Kafka's keys, types and defaults.

Where values come from, weakest first (each layer replaces keys of the one before):

1. the defaults in ``broker.config_defs.BROKER_CONFIG_DEFS``;
2. the properties file (Java ``.properties`` syntax, see ``parse_properties``);
3. ``KAFKA_``-prefixed environment variables, Confluent's convention: the rest of the name
   is lower-cased and ``___`` becomes ``-``, ``__`` becomes ``_``, ``_`` becomes ``.``
   (``KAFKA_LOG_DIRS`` -> ``log.dirs``); a few names the JVM launch scripts use are skipped;
4. ``--override key=value`` arguments.

Every value is parsed to its type and validated once, at startup; a bad value raises
``ConfigError`` naming the key. Keys not in the table are kept (``unknown_keys``) so the
caller can warn about them, as Kafka does.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from broker.config_defs import (
    BROKER_CONFIG_DEFS,
    INT_MAX,
    KNOWN_PREFIXES,
    LONG_MAX,
    NO_DEFAULT,
    TOPIC_CONFIG_DEFS,
    ConfigDef,
    ConfigType,
)

_T = TypeVar("_T")

ENV_PREFIX = "KAFKA_"

#: KAFKA_ variables that configure the launcher, not the broker (Confluent's image skips them)
ENV_EXCLUDED = frozenset({
    "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL",
    "KAFKA_LOG4J_LOGGERS", "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME", "KAFKA_JMX_PORT",
    "KAFKA_DEBUG", "KAFKA_HOME",
})

#: security protocols the network server can serve today
SUPPORTED_SECURITY_PROTOCOLS = frozenset({"PLAINTEXT"})


class ConfigError(ValueError):
    """A configuration value that cannot be used; ``key`` names the offending key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"invalid configuration {key}: {message}")
        self.key = key


class ConfigSource(enum.IntEnum):
    """Where a value came from; the numbers are DescribeConfigs' ``config_source`` values."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


# --- Java .properties --------------------------------------------------------------------

_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterable[str]:
    """Join natural lines into logical ones.

    A line ending in an odd number of backslashes continues on the next line, whose leading
    whitespace is dropped. Blank lines and comment lines (first non-blank character ``#``
    or ``!``) are skipped, but only where a logical line starts: inside a continuation a
    ``#`` is ordinary text.
    """
    pending: list[str] | None = None
    for natural in text.splitlines():
        line = natural.lstrip(_WHITESPACE)
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = [*(pending or []), line[:-1]]
            continue
        yield "".join([*(pending or []), line])
        pending = None
    if pending is not None:
        yield "".join(pending)


def _unescape(raw: str, line: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch != "\\" or i + 1 == len(raw):
            out.append(ch)
            i += 1
            continue
        nxt = raw[i + 1]
        if nxt == "u":
            digits = raw[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError("<properties>", f"malformed \\uxxxx escape in line {line!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    text = "".join(out)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        # \uXXXX escapes are UTF-16 units: join surrogate pairs into their characters
        text = text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")
    return text


def _split_key_value(line: str) -> tuple[str, str]:
    """Key ends at the first unescaped ``=``, ``:`` or whitespace; one separator is eaten."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch in _WHITESPACE:
            break
        i += 1
    key_end = min(i, len(line))
    j = key_end
    while j < len(line) and line[j] in _WHITESPACE:
        j += 1
    if j < len(line) and line[j] in "=:":
        j += 1
        while j < len(line) and line[j] in _WHITESPACE:
            j += 1
    return _unescape(line[:key_end], line), _unescape(line[j:], line)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (java.util.Properties.load rules); last key wins."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        props[key] = value
    return props


def _escape(text: str, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        elif ch in "=:#!" or (ch == " " and (is_key or i == 0)):
            out.append("\\" + ch)
        elif not " " <= ch <= "~":
            out.extend(f"\\u{unit:04x}" for unit in _utf16_units(ch))
        else:
            out.append(ch)
    return "".join(out)


def _utf16_units(ch: str) -> list[int]:
    data = ch.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def format_properties(props: Mapping[str, str]) -> str:
    """Java ``.properties`` text that ``parse_properties`` (and Java) reads back as ``props``."""
    return "".join(f"{_escape(k, True)}={_escape(v, False)}\n" for k, v in props.items())


def read_properties(path: str | Path) -> dict[str, str]:
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:  # Java reads .properties as ISO-8859-1
        text = data.decode("latin-1")
    return parse_properties(text)


def env_key(var: str) -> str | None:
    """``KAFKA_LOG_DIRS`` -> ``log.dirs``; None for variables that are not broker keys."""
    if not var.startswith(ENV_PREFIX) or var in ENV_EXCLUDED or len(var) == len(ENV_PREFIX):
        return None
    rest = var[len(ENV_PREFIX):].lower()
    return re.sub(r"_{1,3}", lambda m: {"_": ".", "__": "_", "___": "-"}[m.group()], rest)


def properties_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    props = {}
    for var, value in environ.items():
        key = env_key(var)
        if key is not None:
            props[key] = value
    return props


def parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    """``["log.dirs=/x", ...]`` -> ``{"log.dirs": "/x"}``; the value may contain ``=``."""
    props = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(item, "an override must read key=value")
        props[key.strip()] = value
    return props


# --- typed values --------------------------------------------------------------------------

_INT_RANGES = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1),
    ConfigType.INT: (-(2**31), INT_MAX),
    ConfigType.LONG: (-(2**63), LONG_MAX),
}


def parse_value(key: str, kind: ConfigType, raw: str | None) -> Any:
    """Convert the text of a value to its type, as Kafka's ConfigDef.parseType does."""
    if raw is None:
        return None
    text = raw if kind is ConfigType.PASSWORD else raw.strip()
    if kind is ConfigType.BOOLEAN:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ConfigError(key, f"expected true or false, got {raw!r}")
    if kind in _INT_RANGES:
        try:
            number = int(text, 10)
        except ValueError:
            raise ConfigError(key, f"expected an integer, got {raw!r}") from None
        low, high = _INT_RANGES[kind]
        if not low <= number <= high:
            raise ConfigError(key, f"{number} is out of range for a {kind.name.lower()}")
        return number
    if kind is ConfigType.DOUBLE:
        try:
            return float(text)
        except ValueError:
            raise ConfigError(key, f"expected a number, got {raw!r}") from None
    if kind is ConfigType.LIST:
        return [item.strip() for item in text.split(",") if item.strip()]
    return text


def _checked(definition: ConfigDef, key: str, raw: str | None) -> Any:
    value = parse_value(key, definition.type, raw)
    if definition.validator is not None and value is not None:
        problem = definition.validator(value)
        if problem:
            raise ConfigError(key, f"value {raw!r} {problem}")
    return value


# --- listeners --------------------------------------------------------------------------------

_LISTENER = re.compile(
    r"^(?P<name>[A-Za-z0-9_\-]+)://(?:\[(?P<ipv6>[0-9A-Fa-f:.%a-z]*)\]|(?P<host>[^:/\[\]]*))"
    r":(?P<port>-?\d+)$"
)


@dataclass(frozen=True, slots=True)
class EndPoint:
    """One listener: ``NAME://host:port``; an empty host binds every interface."""

    listener_name: str
    host: str
    port: int
    security_protocol: str

    @property
    def connection_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


def parse_security_protocol_map(key: str, value: str) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for pair in (p.strip() for p in value.split(",") if p.strip()):
        name, sep, protocol = pair.partition(":")
        if not sep or not name.strip() or not protocol.strip():
            raise ConfigError(key, f"{pair!r} is not NAME:PROTOCOL")
        mapping[name.strip().upper()] = protocol.strip().upper()
    return mapping


def parse_listeners(key: str, value: str, protocol_map: Mapping[str, str]) -> list[EndPoint]:
    endpoints: list[EndPoint] = []
    for item in (p.strip() for p in value.split(",") if p.strip()):
        match = _LISTENER.match(item)
        if match is None:
            raise ConfigError(key, f"{item!r} is not NAME://host:port")
        name = match["name"].upper()
        port = int(match["port"])
        if not 0 <= port <= 65535:
            raise ConfigError(key, f"port {port} of {item!r} is out of range")
        if name not in protocol_map:
            raise ConfigError(
                key, f"listener {name} has no entry in listener.security.protocol.map"
            )
        host = match["ipv6"] if match["ipv6"] is not None else match["host"]
        endpoints.append(EndPoint(name, host, port, protocol_map[name]))
    names = [e.listener_name for e in endpoints]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(key, f"listener names must be unique, repeated: {duplicates}")
    return endpoints


def _parse_ip_overrides(key: str, value: str) -> dict[str, int]:
    overrides: dict[str, int] = {}
    for pair in (p.strip() for p in value.split(",") if p.strip()):
        host, sep, count = pair.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ConfigError(key, f"{pair!r} is not host:count")
        overrides[host.strip()] = int(count)
    return overrides


# --- the broker's configuration ------------------------------------------------------------


@dataclass(frozen=True)
class BrokerConfig:
    """A validated broker configuration. Immutable; ``values`` holds every defined key."""

    values: Mapping[str, Any]
    originals: Mapping[str, str]
    unknown_keys: tuple[str, ...] = ()
    _derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    # construction ---------------------------------------------------------------------

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        """Type and validate ``props`` (text values) on top of the defaults."""
        values: dict[str, Any] = {}
        for name, definition in BROKER_CONFIG_DEFS.items():
            if name in props:
                values[name] = _checked(definition, name, props[name])
            elif definition.required:
                raise ConfigError(name, "is required and has no default")
            elif isinstance(definition.default, str):  # defaults are written as text
                values[name] = parse_value(name, definition.type, definition.default)
            else:
                values[name] = definition.default
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

    def source(self, name: str) -> ConfigSource:
        return (
            ConfigSource.STATIC_BROKER_CONFIG
            if name in self.originals
            else ConfigSource.DEFAULT_CONFIG
        )

    def describe(self, names: Iterable[str] | None = None) -> list[ConfigEntry]:
        """DescribeConfigs for this broker: every key (or ``names``; unknown ones skipped).
        Static configuration only, so every entry is read-only."""
        wanted = BROKER_CONFIG_DEFS if names is None else names
        entries = []
        for name in wanted:
            definition = BROKER_CONFIG_DEFS.get(name)
            if definition is None:
                continue
            source = self.source(name)
            value = format_value(self.values[name])
            synonyms = [(name, value, source)]
            if source is not ConfigSource.DEFAULT_CONFIG:
                default = format_value(definition.default)
                synonyms.append((name, default, ConfigSource.DEFAULT_CONFIG))
            entries.append(
                _entry(definition.name, definition.type, definition.doc, value, source, synonyms)
            )
        return entries

    # derived values (Kafka's precedence rules between related keys) -----------------------

    @property
    def broker_id(self) -> int:
        return self.get_int("broker.id")

    @property
    def log_dirs(self) -> list[str]:
        raw = self.get_str("log.dirs") or self.get_str("log.dir") or ""
        return [d.strip() for d in raw.split(",") if d.strip()]

    @property
    def log_retention_ms(self) -> int:
        """ms beats minutes beats hours; any negative value means keep forever (-1)."""
        ms = self.get("log.retention.ms")
        if ms is None:
            minutes = self.get("log.retention.minutes")
            hours = self.get_int("log.retention.hours")
            ms = minutes * 60_000 if minutes is not None else hours * 3_600_000
        return -1 if ms < 0 else int(ms)

    @property
    def log_roll_ms(self) -> int:
        ms = self.get("log.roll.ms")
        return int(ms) if ms is not None else self.get_int("log.roll.hours") * 3_600_000

    @property
    def log_roll_jitter_ms(self) -> int:
        ms = self.get("log.roll.jitter.ms")
        return int(ms) if ms is not None else self.get_int("log.roll.jitter.hours") * 3_600_000

    @property
    def log_flush_interval_ms(self) -> int:
        ms = self.get("log.flush.interval.ms")
        return int(ms) if ms is not None else self.get_int("log.flush.scheduler.interval.ms")

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

    @property
    def max_connections_per_ip_overrides(self) -> dict[str, int]:
        return _parse_ip_overrides(
            "max.connections.per.ip.overrides", self.get("max.connections.per.ip.overrides")
        )

    def topic_defaults(self) -> dict[str, Any]:
        """Every topic-level key with the value this broker gives it (its synonym's)."""
        derived = {
            "log.retention.ms": self.log_retention_ms,
            "log.roll.ms": self.log_roll_ms,
            "log.roll.jitter.ms": self.log_roll_jitter_ms,
            "log.flush.interval.ms": self.log_flush_interval_ms,
        }
        return {
            name: derived.get(d.synonym, self.values.get(d.synonym))
            for name, d in TOPIC_CONFIG_DEFS.items()
        }

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
                    "minikafka serves PLAINTEXT only",
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


# --- DescribeConfigs ---------------------------------------------------------------------------


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
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...]


def format_value(value: Any) -> str | None:
    """A typed value in Kafka's text form: ``true``, ``a,b``, ``104857600``; None stays."""
    if value is None or value is NO_DEFAULT:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _entry(
    name: str,
    kind: ConfigType,
    doc: str,
    value: str | None,
    source: ConfigSource,
    synonyms: list[tuple[str, str | None, ConfigSource]],
    read_only: bool = True,
) -> ConfigEntry:
    sensitive = kind is ConfigType.PASSWORD
    if sensitive:
        value = None
        synonyms = [(n, None, s) for n, _, s in synonyms]
    return ConfigEntry(name, value, source, kind, doc, read_only, sensitive, tuple(synonyms))


# --- per-topic configuration -----------------------------------------------------------------


def validate_topic_configs(overrides: Mapping[str, str | None]) -> dict[str, Any]:
    """Type-check topic-level overrides (CreateTopics / AlterConfigs); unknown keys refused."""
    typed: dict[str, Any] = {}
    for key, raw in overrides.items():
        definition = TOPIC_CONFIG_DEFS.get(key)
        if definition is None:
            raise ConfigError(key, "is not a topic configuration")
        value = parse_value(key, definition.type, raw)
        if definition.validator is not None and value is not None:
            problem = definition.validator(value)
            if problem:
                raise ConfigError(key, f"value {raw!r} {problem}")
        typed[key] = value
    return typed


def resolve_topic_config(
    broker: BrokerConfig, overrides: Mapping[str, str | None]
) -> dict[str, Any]:
    """The effective configuration of a topic: broker defaults with its overrides on top."""
    return {**broker.topic_defaults(), **validate_topic_configs(overrides)}


#: broker keys whose value other keys can supply (see the derived properties above)
_DERIVED_FROM: dict[str, tuple[str, ...]] = {
    "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
    "log.roll.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "log.flush.interval.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
}


def describe_topic_config(
    broker: BrokerConfig,
    overrides: Mapping[str, str | None],
    names: Iterable[str] | None = None,
) -> list[ConfigEntry]:
    """DescribeConfigs for a topic: its overrides (DYNAMIC_TOPIC_CONFIG) over the broker's
    values for the synonym keys (STATIC_BROKER_CONFIG when set in server.properties,
    else DEFAULT_CONFIG). Topic entries are not read-only (AlterConfigs may change them)."""
    resolved = resolve_topic_config(broker, overrides)
    defaults = broker.topic_defaults()
    wanted = TOPIC_CONFIG_DEFS if names is None else names
    entries = []
    for name in wanted:
        definition = TOPIC_CONFIG_DEFS.get(name)
        if definition is None:
            continue
        synonyms: list[tuple[str, str | None, ConfigSource]] = []
        if name in overrides:
            synonyms.append((name, format_value(resolved[name]), ConfigSource.DYNAMIC_TOPIC_CONFIG))
        related = _DERIVED_FROM.get(definition.synonym, (definition.synonym,))
        static = any(key in broker.originals for key in related)
        synonyms.append(
            (
                definition.synonym,
                format_value(defaults[name]),
                ConfigSource.STATIC_BROKER_CONFIG if static else ConfigSource.DEFAULT_CONFIG,
            )
        )
        value, source = format_value(resolved[name]), synonyms[0][2]
        entries.append(
            _entry(name, definition.type, definition.doc, value, source, synonyms, False)
        )
    return entries
