"""How the broker assembly builds authorization: the AccessControl every handler family
carries, and the listener that fills and follows its ACL cache (both nothing at all when
``authorizer.class.name`` is empty)."""

from __future__ import annotations

from broker.auth.access import AccessControl
from broker.auth.acl_cache import AclCache
from broker.auth.acl_watcher import AclChangeListener
from broker.auth.authorizer import Authorizer, AuthorizerSettings, authorizer_enabled
from broker.change_notifications import DEFAULT_EXPIRATION_MS
from broker.config import BrokerConfig
from broker.metrics import BrokerMetrics
from timer.clock import Clock
from zk.facade import ZkFacade


def access_control(config: BrokerConfig, metrics: BrokerMetrics) -> AccessControl:
    """The authorizer when ``authorizer.class.name`` names one (its cache still empty)."""
    if not authorizer_enabled(config):
        return AccessControl.open()
    return AccessControl(Authorizer(AclCache(), AuthorizerSettings.from_config(config)), metrics)


async def start_acl_listener(
    access: AccessControl, zk: ZkFacade, clock: Clock
) -> AclChangeListener | None:
    """Load every ACL into the authorizer's cache and follow the change notifications;
    None without an authorizer."""
    if access.authorizer is None:
        return None
    listener = AclChangeListener(access.authorizer.cache, zk, clock.time_ms, DEFAULT_EXPIRATION_MS)
    await listener.start()
    return listener
