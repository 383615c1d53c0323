"""A listener's view of the configuration: Kafka's per-listener keys.

Kafka lets each listener override a key by prefixing it with the listener's name in lower
case: ``listener.name.sasl_ssl.ssl.keystore.location`` beats ``ssl.keystore.location`` for
the listener SASL_SSL and leaves the others alone. SASL's JAAS configuration goes one
level deeper, per mechanism: ``listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config``.

``ListenerConfig.get`` resolves a key so, typed and validated by the key's own definition
(a bad prefixed value is refused naming the prefixed key). Anything security-related a
listener needs -- its TLS context, its SASL mechanisms and users -- is read through here,
never through the plain keys, so that an override always wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from broker.config.keys import BROKER_CONFIG_DEFS
from config.definitions import checked


def listener_prefix(listener_name: str) -> str:
    """``listener.name.<name in lower case>.``: Kafka's prefix of a listener's own keys."""
    return f"listener.name.{listener_name.lower()}."


@dataclass(frozen=True)
class ListenerConfig:
    """The keys of one listener. ``layered`` is the broker's text configuration (static
    and dynamic layers merged, the dynamic ones winning); ``values`` its typed values."""

    listener_name: str
    security_protocol: str
    layered: Mapping[str, str]
    values: Mapping[str, Any]

    @property
    def prefix(self) -> str:
        return listener_prefix(self.listener_name)

    def get(self, key: str) -> Any:
        """``key``'s value for this listener: the prefixed key if given, else the plain one."""
        prefixed = self.prefix + key
        if prefixed in self.layered:
            definition = BROKER_CONFIG_DEFS[key]
            return checked(_renamed(definition, prefixed), self.layered[prefixed])
        return self.values[key]

    def source_key(self, key: str) -> str:
        """The key that gives ``key``'s value here (for error messages naming it)."""
        prefixed = self.prefix + key
        return prefixed if prefixed in self.layered else key

    def jaas_config(self, mechanism: str) -> tuple[str, str | None]:
        """(key, JAAS text) of ``mechanism`` on this listener: the listener-and-mechanism
        key as Kafka reads it, else the plain ``sasl.jaas.config``; the text is None when
        neither is set."""
        key = f"{self.prefix}{mechanism.lower()}.sasl.jaas.config"
        if key in self.layered:
            return key, self.layered[key]
        value = self.values.get("sasl.jaas.config")
        return "sasl.jaas.config", value if isinstance(value, str) else None


def _renamed(definition: Any, name: str) -> Any:
    """``definition`` under another key name, so that errors name the key given."""
    return replace(definition, name=name)
