"""A SASL listener's authentication, made from its configuration once at startup.

For each listener whose security protocol is SASL_PLAINTEXT or SASL_SSL,
``sasl_authenticators`` reads, through the listener's view of the keys
(``ListenerConfig``: ``listener.name.<l>.<key>`` first):

- ``sasl.enabled.mechanisms``: the mechanisms served, in that order. PLAIN,
  SCRAM-SHA-256 and SCRAM-SHA-512 are; GSSAPI and OAUTHBEARER are not. Unsupported ones
  beside supported ones are logged and left out; a listener with none supported is
  refused at startup, naming the key (Kafka's default, GSSAPI, is such a case).
- PLAIN's users: the ``user_<name>="<password>"`` options of the listener's PLAIN JAAS
  configuration (``listener.name.<l>.plain.sasl.jaas.config``, else
  ``sasl.jaas.config``), which must be there and parse (refused otherwise, naming the key
  it came from).
- SCRAM's credentials: from the broker's credential cache (``ScramCredentialLookup``,
  kept from ZooKeeper's ``/config/users``); a listener enabling SCRAM without a cache is
  refused at startup.
- ``connections.max.reauth.ms``, ``connection.failed.authentication.delay.ms`` and
  ``sasl.server.max.receive.size``.

The result is one ``SaslAuthenticatorFactory`` per SASL listener, which the network layer
calls for each new connection. It also counts each listener's authentications by
mechanism and outcome (``minikafka_sasl_authentications_total`` and
``minikafka_sasl_reauthentications_total``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Final, Protocol

from broker.config import BrokerConfig
from broker.config.listener_config import ListenerConfig
from broker.metrics import BrokerMetrics
from broker.security.jaas import PLAIN_LOGIN_MODULE, JaasError, parse_jaas_config
from broker.security.sasl_authenticator import (
    SaslAuthenticator,
    SaslListenerSettings,
    ServerExchange,
)
from config.errors import ConfigError
from protocol.sasl.plain import MECHANISM as PLAIN
from protocol.sasl.plain import PlainServer
from protocol.sasl.scram import SCRAM_MECHANISMS, ScramCredential
from protocol.sasl.scram_exchange import ScramServer

log = logging.getLogger(__name__)

SUPPORTED_MECHANISMS: Final = (PLAIN, *SCRAM_MECHANISMS)
SASL_PROTOCOLS: Final = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})


class ScramCredentialLookup(Protocol):
    """Where SCRAM credentials come from: the broker's credential cache
    (``broker.security.credential_cache.ScramCredentialCache``)."""

    def scram_credential(self, mechanism: str, username: str) -> ScramCredential | None: ...


class SaslAuthenticatorFactory:
    """Makes the authenticator of each new connection of one SASL listener."""

    def __init__(self, settings: SaslListenerSettings, metrics: BrokerMetrics) -> None:
        self.settings = settings
        self._metrics = metrics

    def _count(self, mechanism: str, reauth: bool, success: bool) -> None:
        family = (
            self._metrics.sasl_reauthentications if reauth else self._metrics.sasl_authentications
        )
        result = "success" if success else "failure"
        family.labels(listener=self.settings.listener, mechanism=mechanism, result=result).inc()

    def __call__(self) -> SaslAuthenticator:
        return SaslAuthenticator(self.settings, self._count)


def enabled_mechanisms(listener: ListenerConfig) -> list[str]:
    """The supported mechanisms of ``sasl.enabled.mechanisms``, in order; ConfigError
    when none is."""
    key = listener.source_key("sasl.enabled.mechanisms")
    configured = [str(m).strip().upper() for m in listener.get("sasl.enabled.mechanisms") or ()]
    supported = [m for m in dict.fromkeys(configured) if m in SUPPORTED_MECHANISMS]
    ignored = [m for m in configured if m not in SUPPORTED_MECHANISMS]
    if not supported:
        raise ConfigError(
            key,
            f"listener {listener.listener_name} ({listener.security_protocol}) enables "
            f"{', '.join(configured) or 'no mechanism'}; minikafka serves "
            f"{', '.join(SUPPORTED_MECHANISMS)}",
        )
    if ignored:
        log.warning(
            "listener %s: SASL mechanisms %s (%s) are not supported and are ignored",
            listener.listener_name, ", ".join(ignored), key,
        )  # fmt: skip
    return supported


def plain_passwords(listener: ListenerConfig) -> Callable[[str], str | None]:
    """The PLAIN users' password lookup from the listener's JAAS configuration."""
    key, text = listener.jaas_config(PLAIN)
    if text is None:
        key = f"{listener.prefix}{PLAIN.lower()}.sasl.jaas.config"
        raise ConfigError(key, "PLAIN is enabled but no JAAS configuration lists its users")
    try:
        entry = parse_jaas_config(text)
    except JaasError as exc:
        raise ConfigError(key, str(exc)) from None
    if entry.login_module != PLAIN_LOGIN_MODULE:
        raise ConfigError(key, f"PLAIN needs the login module {PLAIN_LOGIN_MODULE}")
    users = entry.plain_users()
    if not users:
        log.warning("listener %s: %s lists no PLAIN user", listener.listener_name, key)
    return users.get


def listener_settings(
    listener: ListenerConfig, scram_credentials: ScramCredentialLookup | None
) -> SaslListenerSettings:
    """The settings of one SASL listener; ConfigError names the key that is wrong."""
    exchanges: dict[str, Callable[[], ServerExchange]] = {}
    for mechanism in enabled_mechanisms(listener):
        if mechanism == PLAIN:
            exchanges[mechanism] = functools.partial(PlainServer, plain_passwords(listener))
            continue
        if scram_credentials is None:
            raise ConfigError(
                listener.source_key("sasl.enabled.mechanisms"),
                f"{mechanism} needs the SCRAM credential store, which this broker lacks",
            )
        exchanges[mechanism] = functools.partial(
            ScramServer, SCRAM_MECHANISMS[mechanism], _scram_lookup(scram_credentials, mechanism)
        )
    return SaslListenerSettings(
        listener=listener.listener_name,
        exchanges=exchanges,
        reauth_ms=int(listener.get("connections.max.reauth.ms")),
        failure_delay_s=int(listener.get("connection.failed.authentication.delay.ms")) / 1000,
        max_receive_size=int(listener.get("sasl.server.max.receive.size")),
    )


def _scram_lookup(
    store: ScramCredentialLookup, mechanism: str
) -> Callable[[str], ScramCredential | None]:
    return lambda username: store.scram_credential(mechanism, username)


def listener_configs(config: BrokerConfig) -> dict[str, ListenerConfig]:
    """Every listener's view of the keys, by listener name."""
    return {e.listener_name: config.listener_config(e.listener_name) for e in config.listeners}


def check_sasl_listeners(listeners: Mapping[str, ListenerConfig]) -> None:
    """Refuse a misconfigured SASL listener (ConfigError naming the key) before anything
    starts: its mechanisms and PLAIN's JAAS configuration. SCRAM's credential store is
    checked when the listeners are built (``sasl_authenticators``)."""
    for listener in listeners.values():
        if listener.security_protocol in SASL_PROTOCOLS and PLAIN in enabled_mechanisms(listener):
            plain_passwords(listener)


def sasl_authenticators(
    listeners: Mapping[str, ListenerConfig],
    scram_credentials: ScramCredentialLookup | None,
    metrics: BrokerMetrics,
) -> dict[str, SaslAuthenticatorFactory]:
    """Listener name -> its authenticator factory, for the SASL listeners among
    ``listeners``; ConfigError for the first misconfigured one."""
    return {
        name: SaslAuthenticatorFactory(listener_settings(listener, scram_credentials), metrics)
        for name, listener in listeners.items()
        if listener.security_protocol in SASL_PROTOCOLS
    }
