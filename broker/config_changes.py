"""Dynamic configuration reaching every broker: Kafka's ZkConfigManager over /config/changes.

Whoever alters a config writes ``/config/<type>/<name>`` and a sequential notification
``/config/changes/config_change_<10 digits>`` whose payload names the entity
(``{"version":2,"entity_path":"topics/t"}``). Each broker watches the children of
/config/changes; for every notification with a sequence above the last it handled it reads
the entity's znode afresh and applies it:

- ``topics/<t>``: the topic's overrides into TopicConfigs, which the LogManager listens to
  (retention, segment size, max.message.bytes ... apply to the live logs at once);
- ``brokers/<id>`` (this broker's) and ``brokers/<default>``: the dynamic broker layers
  (``BrokerConfig.with_dynamic``), the log defaults of every topic following them;
- ``users/<sanitized user>``: the user's SCRAM credentials into the broker's
  ScramCredentialCache (``broker.security.credential_cache``). Their values are never
  logged: the log names the keys only. The same znode's quota keys, and those of
  ``users/<user>/clients/<client-id>`` and ``clients/<client-id>``, into the broker's
  ClientQuotas (``broker.client_quotas``).

A broker that was down missed nothing: at startup it handles every notification still
there, and it reads topic overrides when a LeaderAndIsr makes its logs anyway.
Notifications older than ``expiration_ms`` (Kafka: 15 minutes) are deleted by whichever
broker sees them first. Following the queue is the mechanism the ACLs share
(broker.change_notifications); what a config notification means is here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Final

from broker.apis.services import BrokerBasics
from broker.change_notifications import (
    DEFAULT_EXPIRATION_MS,
    NotificationFollower,
    NotificationQueue,
)
from broker.client_quotas.manager import ClientQuotas
from broker.config import BrokerConfig
from broker.config.keys import BROKER_CONFIG_DEFS
from broker.security.credential_cache import ScramCredentialCache
from config.definitions import ConfigType
from config.errors import ConfigError
from storage import LogManager
from storage.config import LogConfig
from zk import paths
from zk.codec import ZkDataError
from zk.facade import ZkFacade
from zk.quota_entities import CLIENTS_DIR
from zk.scram_codec import USERS_ENTITY

log = logging.getLogger(__name__)


class DynamicConfigApplier:
    """Applies an entity's new dynamic config on this broker: the one writer of
    ``BrokerBasics.config`` after startup (a new BrokerConfig replaces it; readers take
    it afresh at each use)."""

    def __init__(
        self,
        broker: BrokerBasics,
        log_manager: LogManager,
        credentials: ScramCredentialCache,
        quotas: ClientQuotas,
    ) -> None:
        self.broker = broker
        self._log_manager = log_manager
        self._credentials = credentials
        self._quotas = quotas
        #: told (old, new) after each new dynamic broker config (the socket server
        #: reloads its TLS listeners' certificates)
        self._broker_listeners: list[Callable[[BrokerConfig, BrokerConfig], None]] = []
        #: entity type -> how this broker applies an entity's new dynamic config
        self._appliers: Final[dict[str, Callable[[str, Mapping[str, str]], None]]] = {
            paths.TOPICS_ENTITY: self._apply_topic,
            paths.BROKERS_ENTITY: self._apply_broker,
            USERS_ENTITY: self._apply_user,
            CLIENTS_DIR: lambda name, config: quotas.apply_entity_config(CLIENTS_DIR, name, config),
        }

    def on_broker_config(self, callback: Callable[[BrokerConfig, BrokerConfig], None]) -> None:
        """Call ``callback(old, new)`` whenever this broker's configuration is replaced."""
        self._broker_listeners.append(callback)

    def apply(self, entity_type: str, entity: str, config: Mapping[str, str]) -> None:
        """Apply ``config`` as the dynamic config of /config/<entity_type>/<entity>;
        entity types this broker has nothing to apply for (ips) are ignored."""
        applier = self._appliers.get(entity_type)
        if applier is not None:
            applier(entity, config)

    def _apply_user(self, entity: str, config: Mapping[str, str]) -> None:
        """/config/users/<user>: SCRAM credentials and quotas; /config/users/<user>/
        clients/<client-id>: quotas only."""
        if "/" not in entity:
            self._credentials.apply_entity_config(entity, config)
        self._quotas.apply_entity_config(USERS_ENTITY, entity, config)

    def _apply_topic(self, topic: str, config: Mapping[str, str]) -> None:
        self.broker.topic_configs.set(topic, config)

    def _apply_broker(self, entity: str, config: Mapping[str, str]) -> None:
        """A new dynamic layer of this broker (its own id, or the cluster default): the
        effective BrokerConfig is rebuilt and the log defaults follow it."""
        broker = self.broker
        if entity not in (paths.DEFAULT_ENTITY, str(broker.broker_id)):
            return
        try:
            updated = broker.config.with_dynamic(
                default=entity == paths.DEFAULT_ENTITY, config=config
            )
        except ConfigError as exc:  # written by something that did not validate it
            log.error("ignoring the dynamic config of broker %s: %s", entity, exc)
            return
        old, broker.config = broker.config, updated
        self._log_manager.update_default_config(LogConfig.from_layers(updated.config_layers))
        for callback in self._broker_listeners:
            try:
                callback(old, updated)
            except Exception:  # one consumer's failure must not stop the others
                log.exception("applying the dynamic config of broker %s failed", entity)


def redacted(config: Mapping[str, str]) -> dict[str, str]:
    """``config`` fit for a log line: the values of password keys (``ssl.key.password``,
    an inline ``ssl.keystore.key``, ``sasl.jaas.config`` ..., prefixed or not) hidden."""
    return {key: "[hidden]" if _is_password(key) else value for key, value in config.items()}


def _is_password(key: str) -> bool:
    if key.startswith("listener.name."):
        key = key[len("listener.name.") :].partition(".")[2]
    if key.endswith("sasl.jaas.config"):
        return True
    definition = BROKER_CONFIG_DEFS.get(key)
    return definition is not None and definition.type is ConfigType.PASSWORD


class ConfigChangeListener:
    """Watches /config/changes and applies each new notification on the broker's loop."""

    def __init__(
        self,
        applier: DynamicConfigApplier,
        zk: ZkFacade,
        expiration_ms: int = DEFAULT_EXPIRATION_MS,
    ) -> None:
        self._applier = applier
        self._zk = zk
        queue = NotificationQueue(
            root=paths.CONFIG_CHANGES,
            list_names=zk.get_config_changes,
            sequence=paths.config_change_sequence,
            read=zk.read_config_change,
            handle=self._apply,
            delete=zk.delete_config_changes,
        )
        clock = applier.broker.clock
        self._follower = NotificationFollower(
            "config change", [queue], zk.kazoo, clock.time_ms, expiration_ms
        )

    async def start(self) -> None:
        """Apply the dynamic broker configs there are, then every notification left."""
        for entity in (paths.DEFAULT_ENTITY, str(self._applier.broker.broker_id)):
            config = await self._zk.get_entity_config(paths.BROKERS_ENTITY, entity)
            if config:
                self._applier.apply(paths.BROKERS_ENTITY, entity, config)
        await self._follower.start()

    async def stop(self) -> None:
        await self._follower.stop()

    async def _apply(self, changed: tuple[str, str]) -> None:
        entity_type, entity = changed
        try:
            config = await self._zk.get_entity_config(entity_type, entity)
        except ZkDataError as exc:  # written by another tool: skipped, not retried forever
            why = "not JSON" if entity_type == USERS_ENTITY else exc  # no secrets
            log.error("ignoring the malformed config of %s/%s: %s", entity_type, entity, why)
            return
        shown = sorted(config) if entity_type == USERS_ENTITY else redacted(config)
        log.info("applying the dynamic config of %s/%s: %s", entity_type, entity, shown)
        self._applier.apply(entity_type, entity, config)
