"""Configuration keys as data: a key's type, default, validator and doc, and their parsing.

A ``ConfigDef`` declares one key (Kafka's names and defaults): its type, its default
(``NO_DEFAULT`` when the key is required, ``None`` when Kafka's default is null), an
optional validator and a one-line doc. A ``TopicConfigDef`` declares a topic-level key,
whose default is the value of a broker key, its "synonym" (``retention.ms`` <-
``log.retention.ms``), or its own default when no broker key supplies one.

The log and topic-level keys are declared in ``config.log_keys``; the broker's table
(``broker.config.keys``) extends them with its own keys. Values arrive as text (a
.properties file, a znode, a request) and are parsed once with ``checked``; a bad value
raises ``ConfigError`` naming the key. ``format_value`` writes a typed value back in
Kafka's text form. ``ConfigType`` values are the wire ids of DescribeConfigs'
``config_type`` field (v3+).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from config.errors import ConfigError

INT_MAX: Final = 2**31 - 1
LONG_MAX: Final = 2**63 - 1


class ConfigType(enum.IntEnum):
    """Value types; the numbers are DescribeConfigs' ``config_type`` wire values."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


#: marks a key that has to be given (Kafka's ConfigDef.NO_DEFAULT_VALUE)
NO_DEFAULT: Final = _NoDefault()

#: a validator returns None when the (already typed) value is acceptable, else the reason
Validator = Callable[[Any], str | None]


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """A key with its own default (written as text or as the typed value)."""

    name: str
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT

    def typed_default(self) -> Any:
        return (
            parse_value(self.name, self.type, self.default)
            if isinstance(self.default, str)
            else self.default
        )


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """A topic-level key; its default is the effective value of the broker key ``synonym``,
    or, for a key no broker key supplies (``synonym`` None, as Kafka's throttled-replica
    lists), its own ``default`` text."""

    name: str
    type: ConfigType
    synonym: str | None
    doc: str
    validator: Validator | None = None
    default: str | None = None

    def typed_default(self) -> Any:
        """The default of a key without a synonym, typed."""
        return parse_value(self.name, self.type, self.default)


AnyDef = ConfigDef | TopicConfigDef


def key_table(*defs: AnyDef) -> dict[str, Any]:
    """Definitions by name, in the order given; a name declared twice is a bug."""
    table: dict[str, Any] = {}
    for d in defs:
        assert d.name not in table, f"duplicate config key {d.name}"
        table[d.name] = d
    return table


# --- validators -------------------------------------------------------------------------


def at_least(minimum: float) -> Validator:
    def check(value: Any) -> str | None:
        if value is None or value >= minimum:
            return None
        return f"must be at least {minimum}"

    return check


def between(low: float, high: float) -> Validator:
    def check(value: Any) -> str | None:
        if value is None or low <= value <= high:
            return None
        return f"must be between {low} and {high}"

    return check


def one_of(*choices: str) -> Validator:
    def check(value: Any) -> str | None:
        values = value if isinstance(value, list) else [value]
        bad = [v for v in values if v is not None and v not in choices]
        return f"must be one of {', '.join(choices)}" if bad else None

    return check


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


def checked(definition: AnyDef, raw: str | None) -> Any:
    """The typed value of ``raw`` for ``definition``'s key, validated."""
    value = parse_value(definition.name, definition.type, raw)
    if definition.validator is not None and value is not None:
        problem = definition.validator(value)
        if problem:
            raise ConfigError(definition.name, f"value {raw!r} {problem}")
    return value


def typed_values(defs: Mapping[str, ConfigDef], props: Mapping[str, str]) -> dict[str, Any]:
    """Every key of ``defs``: its value from ``props`` (checked) or its default."""
    values: dict[str, Any] = {}
    for name, definition in defs.items():
        if name in props:
            values[name] = checked(definition, props[name])
        elif definition.required:
            raise ConfigError(name, "is required and has no default")
        else:
            values[name] = definition.typed_default()
    return values


def format_value(value: Any) -> str | None:
    """A typed value in Kafka's text form: ``true``, ``a,b``, ``104857600``; None stays."""
    if value is None or value is NO_DEFAULT:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)
