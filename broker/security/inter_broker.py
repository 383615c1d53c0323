"""The broker as a client of other brokers: the ``ClientSecurity`` its internal clients use.

Replica fetchers, the controller's channel, controlled shutdown and CreateTopics' peer
probes connect to other brokers' listeners. Which listener, and so which security:

- data (fetchers, peer probes): the inter-broker listener, ``inter.broker.listener.name``
  or else the listener named after ``security.inter.broker.protocol``;
- control (the controller's channel, controlled shutdown): ``control.plane.listener.name``
  when set, else the inter-broker listener, as in Kafka.

A listener's client side is read as Kafka reads it, through the listener's own keys
(``listener.name.<l>.ssl.truststore.location`` beats ``ssl.truststore.location``):

- TLS (SSL, SASL_SSL): the trust store, the key store (a broker shows its own certificate
  when the peer asks for one: ``ssl.client.auth``), ``ssl.key.password``,
  ``ssl.endpoint.identification.algorithm``; the same PEM-only rules as any client
  (``client.properties``).
- SASL (SASL_PLAINTEXT, SASL_SSL): ``sasl.mechanism.inter.broker.protocol``, the broker's
  own ``username``/``password`` from ``listener.name.<l>.<mechanism>.sasl.jaas.config``
  (or ``sasl.jaas.config``).

A missing or unusable value is a ``ConfigError`` naming the key as the broker was given it,
raised when the broker starts. The result is remembered for the configuration object it was
derived from (building a TLS context reads files), so a new configuration (a dynamic
change) derives it anew.
"""

from __future__ import annotations

import ssl
from typing import Final

from broker.config.broker_config import BrokerConfig
from broker.config.listener_config import ListenerConfig
from client.properties import (
    CLIENT_SASL_MECHANISMS,
    ClientPropertyError,
    client_ssl_context,
    jaas_credentials,
)
from client.security import ClientSecurity, SaslCredentials
from config.errors import ConfigError

#: the client-side TLS keys a listener's context is built from (its ``ssl.*`` keys)
_CLIENT_SSL_KEYS: Final = (
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
)

#: config object -> (its data-plane security, its control-plane security)
_last: tuple[BrokerConfig, dict[str, ClientSecurity]] | None = None


def listener_client_security(config: BrokerConfig, listener_name: str) -> ClientSecurity:
    """How this broker connects, as a client, to listener ``listener_name`` of a peer."""
    listener = config.listener_config(listener_name)
    protocol = listener.security_protocol
    context = _ssl_context(listener) if protocol.endswith("SSL") else None
    sasl = _sasl(config, listener) if protocol.startswith("SASL") else None
    try:
        return ClientSecurity(protocol, context, sasl)
    except ValueError as exc:
        raise ConfigError("listener.security.protocol.map", str(exc)) from None


def inter_broker_security(config: BrokerConfig) -> ClientSecurity:
    """The security of the inter-broker listener (replica fetchers, peer probes)."""
    return _remembered(config, config.inter_broker_listener_name)


def control_plane_listener_name(config: BrokerConfig) -> str:
    """The listener the controller reaches brokers on: the control-plane one, else the
    inter-broker one."""
    control = config.control_plane_listener
    return control.listener_name if control is not None else config.inter_broker_listener_name


def control_plane_security(config: BrokerConfig) -> ClientSecurity:
    """The security of ``control_plane_listener_name`` (controller channel, controlled
    shutdown)."""
    return _remembered(config, control_plane_listener_name(config))


def _remembered(config: BrokerConfig, listener_name: str) -> ClientSecurity:
    global _last
    if _last is None or _last[0] is not config:
        _last = (config, {})
    known = _last[1]
    if listener_name not in known:
        known[listener_name] = listener_client_security(config, listener_name)
    return known[listener_name]


def _ssl_context(listener: ListenerConfig) -> ssl.SSLContext:
    props: dict[str, str] = {}
    sources: dict[str, str] = {}
    for key in _CLIENT_SSL_KEYS:
        value = listener.get(key)
        if value is not None:
            props[key] = str(value)
            sources[key] = listener.source_key(key)
    try:
        return client_ssl_context(props)
    except ClientPropertyError as exc:
        key = sources.get(exc.key, listener.prefix + exc.key)
        raise ConfigError(
            key, f"{exc.reason} (the broker's client of listener {listener.listener_name})"
        ) from None


def _sasl(config: BrokerConfig, listener: ListenerConfig) -> SaslCredentials:
    mechanism = str(config.get("sasl.mechanism.inter.broker.protocol")).upper()
    if mechanism not in CLIENT_SASL_MECHANISMS:
        raise ConfigError(
            "sasl.mechanism.inter.broker.protocol",
            f"{mechanism} is not supported between brokers; use one of "
            + ", ".join(CLIENT_SASL_MECHANISMS),
        )
    key, text = listener.jaas_config(mechanism)
    if text is None:
        raise ConfigError(
            f"{listener.prefix}{mechanism.lower()}.sasl.jaas.config",
            f"the broker's own username and password for {mechanism} on the inter-broker "
            f"listener {listener.listener_name} are not set",
        )
    try:
        username, password = jaas_credentials(text, mechanism, key)
    except ClientPropertyError as exc:
        raise ConfigError(key, exc.reason) from None
    return SaslCredentials(mechanism, username, password)
