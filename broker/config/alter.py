"""AlterConfigs and IncrementalAlterConfigs as pure decisions: a resource's new dynamic set.

A resource's dynamic configuration is the text key/value map of its znode
(``/config/topics/<t>``, ``/config/brokers/<id>``, ``/config/brokers/<default>``).
AlterConfigs replaces the whole map (keys not given revert to their defaults; null values
are dropped, as Kafka does); IncrementalAlterConfigs edits it key by key: SET and DELETE
any key, APPEND and SUBTRACT only list keys (starting from the key's default when unset).

The new map is then validated against the same key tables as startup. A resource with any
bad entry is refused whole (``AlterRefused``) with Kafka's error code and message, so a
request never half-applies; nothing here touches ZooKeeper.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Final

from broker.config.keys import BROKER_CONFIG_DEFS, DYNAMIC_BROKER_KEYS, DYNAMIC_LISTENER_SSL_KEYS
from config.definitions import ConfigType, checked
from config.errors import ConfigError
from config.log_keys import TOPIC_KEYS, validate_topic_configs
from protocol import ErrorCode


class ResourceType(enum.IntEnum):
    """ConfigResource types on the wire (Kafka's ConfigResource.Type ids)."""

    TOPIC = 2
    BROKER = 4


class AlterOp(enum.IntEnum):
    """IncrementalAlterConfigs' ``config_operation``."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class AlterRefused(Exception):
    """A resource refused whole: the error code and message its response carries."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


#: the name Kafka's admin tools and messages print: ``ConfigResource(type=TOPIC, name='t')``
def resource_label(resource_type: int, name: str) -> str:
    kind = ResourceType(resource_type).name if resource_type in _TYPES else str(resource_type)
    return f"ConfigResource(type={kind}, name='{name}')"


_TYPES: Final = frozenset(int(t) for t in ResourceType)


#: a key's default as text, the start of an APPEND or SUBTRACT on an unset list key
DefaultOf = Callable[[str], str | None]


def replaced(configs: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """AlterConfigs: the new whole set; entries with a null value are dropped."""
    return {name: value for name, value in configs if value is not None}


def incremental(
    current: Mapping[str, str],
    ops: Iterable[tuple[str, int, str | None]],
    kind_of: Callable[[str], ConfigType | None],
    default_of: DefaultOf,
) -> dict[str, str]:
    """IncrementalAlterConfigs: ``current`` with each (name, operation, value) applied.
    ``kind_of`` gives a key's type (None when unknown), ``default_of`` its default as text
    (the starting list of an APPEND or SUBTRACT on an unset key)."""
    ops = list(ops)
    names = [name for name, _, _ in ops]
    if len(set(names)) != len(names):
        raise AlterRefused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    updated = dict(current)
    for name, op, value in ops:
        if op not in _OPS:
            raise AlterRefused(ErrorCode.INVALID_REQUEST, f"Unknown alter config operation {op}")
        if op in (AlterOp.APPEND, AlterOp.SUBTRACT) and kind_of(name) is not ConfigType.LIST:
            verb = AlterOp(op).name.lower()
            raise AlterRefused(
                ErrorCode.INVALID_REQUEST,
                f"Config value {verb} is not allowed for config key: {name}",
            )
        _OPS[AlterOp(op)](updated, name, value, default_of)
    return updated


def _set(cfg: dict[str, str], name: str, value: str | None, _: DefaultOf) -> None:
    if value is None:
        raise AlterRefused(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}")
    cfg[name] = value


def _delete(cfg: dict[str, str], name: str, _value: str | None, _: DefaultOf) -> None:
    cfg.pop(name, None)


def _items(text: str | None) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def _append(cfg: dict[str, str], name: str, value: str | None, default_of: DefaultOf) -> None:
    old = _items(cfg[name] if name in cfg else default_of(name))
    cfg[name] = ",".join(old + [v for v in _items(value) if v not in old])


def _subtract(cfg: dict[str, str], name: str, value: str | None, default_of: DefaultOf) -> None:
    gone = set(_items(value))
    old = _items(cfg[name] if name in cfg else default_of(name))
    cfg[name] = ",".join(v for v in old if v not in gone)


#: each operation, editing the set in place
_OPS: Final[dict[int, Callable[[dict[str, str], str, str | None, DefaultOf], None]]] = {
    AlterOp.SET: _set,
    AlterOp.DELETE: _delete,
    AlterOp.APPEND: _append,
    AlterOp.SUBTRACT: _subtract,
}


# --- validation: the same key tables as startup --------------------------------------------


def validate_topic(name: str, config: Mapping[str, str]) -> None:
    """A topic's new overrides: topic keys only, every value valid for its key."""
    unknown = sorted(k for k in config if k not in TOPIC_KEYS)
    if unknown:
        raise AlterRefused(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {unknown[0]}")
    try:
        validate_topic_configs(config)
    except ConfigError as exc:
        raise _invalid(ResourceType.TOPIC, name, str(exc)) from None


def validate_broker(name: str, config: Mapping[str, str]) -> None:
    """A broker's (or the cluster default's, name "") new dynamic set: only keys that can
    change on a running broker, every value valid for its key. Keys this broker does not
    know are kept, as Kafka keeps custom keys."""
    static = sorted(k for k in config if k in BROKER_CONFIG_DEFS and k not in DYNAMIC_BROKER_KEYS)
    static += sorted(
        k for k in config if _listener_key(k) not in (None, *DYNAMIC_LISTENER_SSL_KEYS)
    )
    if static:
        message = f"Cannot update these configs dynamically: Set({', '.join(static)})"
        raise _invalid(ResourceType.BROKER, name, message)
    stores = listener_store_keys(config)
    if name == "" and stores:  # files of one broker: never the cluster default (Kafka's rule)
        message = (
            "Cannot update these configs at default cluster level, broker id must be "
            f"specified: Set({', '.join(stores)})"
        )
        raise _invalid(ResourceType.BROKER, name, message)
    for key, raw in config.items():
        plain = key if key in BROKER_CONFIG_DEFS else _listener_key(key)
        if plain is not None:
            try:
                checked(replace(BROKER_CONFIG_DEFS[plain], name=key), raw)
            except ConfigError as exc:
                raise _invalid(ResourceType.BROKER, name, str(exc)) from None


def refused_broker(name: str, exc: ConfigError | str) -> AlterRefused:
    """A broker's new dynamic set whose values are well-formed but unusable (a key store
    that does not load, a pool resized too far at once), refused as Kafka refuses it."""
    return _invalid(ResourceType.BROKER, name, str(exc))


def listener_store_keys(config: Mapping[str, str]) -> list[str]:
    """The ``listener.name.<l>.ssl.*`` keys of a broker's dynamic set, sorted."""
    return sorted(k for k in config if _listener_key(k) is not None)


def _listener_key(key: str) -> str | None:
    """The ``ssl.*`` broker key a ``listener.name.<l>.ssl.*`` key gives per listener (None
    for any other key: SASL's per-mechanism keys are the SASL side's to judge)."""
    if not key.startswith("listener.name."):
        return None
    _, _, rest = key[len("listener.name.") :].partition(".")
    return rest if rest.startswith("ssl.") and rest in BROKER_CONFIG_DEFS else None


def _invalid(resource_type: ResourceType, name: str, message: str) -> AlterRefused:
    label = resource_label(resource_type, name)
    return AlterRefused(
        ErrorCode.INVALID_REQUEST, f"Invalid config value for resource {label}: {message}"
    )
