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
  logged: the log names the keys only.

A broker that was down missed nothing: at startup it handles every notification still
there, and it reads topic overrides when a LeaderAndIsr makes its logs anyway.
Notifications older than ``expiration_ms`` (Kafka: 15 minutes) are deleted by whichever
broker sees them first. The watch fires on kazoo's thread, which only wakes the task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Final

from broker.apis.services import BrokerBasics
from broker.security.credential_cache import ScramCredentialCache
from config.errors import ConfigError
from storage import LogManager
from storage.config import LogConfig
from zk import paths
from zk.codec import ZkDataError
from zk.facade import ZkFacade
from zk.scram_codec import USERS_ENTITY

log = logging.getLogger(__name__)

#: Kafka's ZkConfigManager change expiration
DEFAULT_EXPIRATION_MS: Final = 15 * 60 * 1000


class DynamicConfigApplier:
    """Applies an entity's new dynamic config on this broker: the one writer of
    ``BrokerBasics.config`` after startup (a new BrokerConfig replaces it; readers take
    it afresh at each use)."""

    def __init__(
        self, broker: BrokerBasics, log_manager: LogManager, credentials: ScramCredentialCache
    ) -> None:
        self.broker = broker
        self._log_manager = log_manager
        #: entity type -> how this broker applies an entity's new dynamic config
        self._appliers: Final[dict[str, Callable[[str, Mapping[str, str]], None]]] = {
            paths.TOPICS_ENTITY: self._apply_topic,
            paths.BROKERS_ENTITY: self._apply_broker,
            USERS_ENTITY: credentials.apply_entity_config,
        }

    def apply(self, entity_type: str, entity: str, config: Mapping[str, str]) -> None:
        """Apply ``config`` as the dynamic config of /config/<entity_type>/<entity>;
        entity types this broker has nothing to apply for (clients, ips) are ignored."""
        applier = self._appliers.get(entity_type)
        if applier is not None:
            applier(entity, config)

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
        broker.config = updated
        self._log_manager.update_default_config(LogConfig.from_layers(updated.config_layers))


def obsolete(created_ms: Mapping[str, int], now_ms: int, expiration_ms: int) -> list[str]:
    """The notifications old enough to purge."""
    return sorted(name for name, ctime in created_ms.items() if now_ms - ctime > expiration_ms)


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
        self._expiration_ms = expiration_ms
        self._last_sequence = -1
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Apply the dynamic broker configs there are, then every notification left."""
        for entity in (paths.DEFAULT_ENTITY, str(self._applier.broker.broker_id)):
            config = await self._zk.get_entity_config(paths.BROKERS_ENTITY, entity)
            if config:
                self._applier.apply(paths.BROKERS_ENTITY, entity, config)
        loop = asyncio.get_running_loop()

        def watch(_event: object) -> None:  # on kazoo's thread: only wake the task
            loop.call_soon_threadsafe(self._wake.set)

        self._watch = watch
        await self._process()
        self._task = asyncio.create_task(self._run(), name="config-change-listener")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._process()
            except Exception:  # ZooKeeper trouble: the next notification retries
                log.exception("processing config change notifications failed")

    async def _process(self) -> None:
        names = await self._zk.get_config_changes(self._watch)
        created: dict[str, int] = {}
        for name in names:
            sequence = paths.config_change_sequence(name)
            try:
                found = await self._zk.read_config_change(name)
            except ZkDataError as exc:  # not ours to understand; it expires like the rest
                log.warning("skipping config change notification %s: %s", name, exc)
                continue
            if found is None:
                continue
            entity_type, entity, created[name] = found
            if sequence <= self._last_sequence:
                continue
            self._last_sequence = sequence
            try:
                config = await self._zk.get_entity_config(entity_type, entity)
            except ZkDataError as exc:  # written by another tool: skipped, not retried forever
                why = "not JSON" if entity_type == USERS_ENTITY else exc  # no secrets
                log.error("ignoring the malformed config of %s/%s: %s", entity_type, entity, why)
                continue
            shown = sorted(config) if entity_type == USERS_ENTITY else config  # no secrets
            log.info("applying the dynamic config of %s/%s: %s", entity_type, entity, shown)
            self._applier.apply(entity_type, entity, config)
        stale = obsolete(created, self._applier.broker.clock.time_ms(), self._expiration_ms)
        if stale:
            await self._zk.delete_config_changes(stale)
