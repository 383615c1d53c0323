"""AclChangeListener: keeps this broker's AclCache equal to ZooKeeper's ACLs.

At start the ACL and notification roots are created if missing (a children watch needs
its znode), then the cache is loaded whole from ``/kafka-acl`` and ``/kafka-acl-extended``
(``zk.acls.get_all_acls``), then every change notification still present under
``/kafka-acl-changes`` and ``/kafka-acl-extended-changes`` is handled (re-reading a
pattern is harmless, and a change made between the load and the watch is not lost).
Afterwards a children watch on each root wakes the listener's task, which re-reads the
pattern of every notification with a sequence above the last it handled and replaces
that pattern's ACLs in the cache: a change reaches every broker within one ZooKeeper
round trip or two. The broker that wrote a change also applies it at once
(:meth:`AclCache.set`), before its own notification returns.

Notifications older than ``expiration_ms`` (Kafka: 15 minutes) are deleted by whichever
broker sees them first. Following the two queues is the mechanism the dynamic configs
share (broker.change_notifications); what is ACL-specific is here: the load, and what a
notification means.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from broker.auth.acl_cache import AclCache
from broker.change_notifications import NotificationFollower, NotificationQueue
from protocol.acls import ResourcePattern
from zk.acl_codec import change_sequence
from zk.acls import CHANGE_ROOTS
from zk.codec import ZkDataError
from zk.facade import ZkFacade

log = logging.getLogger(__name__)


class AclChangeListener:
    def __init__(
        self,
        cache: AclCache,
        zk: ZkFacade,
        time_ms: Callable[[], int],
        expiration_ms: int,
    ) -> None:
        self._cache = cache
        self._zk = zk
        queues = [
            NotificationQueue(
                root=root,
                list_names=partial(zk.get_acl_changes, root),
                sequence=change_sequence,
                read=partial(zk.read_acl_change, root),
                handle=self._reload,
                delete=partial(zk.delete_acl_changes, root),
            )
            for root in CHANGE_ROOTS
        ]
        self._follower = NotificationFollower(
            "ACL change", queues, zk.kazoo, time_ms, expiration_ms
        )

    async def start(self) -> None:
        await self._zk.ensure_acl_paths()
        self._cache.replace_all(await self._zk.get_all_acls())
        log.info("loaded %d ACLs from ZooKeeper", len(self._cache))
        await self._follower.start()

    async def stop(self) -> None:
        await self._follower.stop()

    async def _reload(self, pattern: ResourcePattern) -> None:
        """A notification named ``pattern``: its ACLs replace the cache's."""
        try:
            entries, _ = await self._zk.get_acls(pattern)
        except (ZkDataError, ValueError) as exc:
            log.error("ignoring the malformed ACLs of %s: %s", pattern, exc)
            return
        self._cache.set(pattern, entries)
        log.debug("ACLs of %s now: %s", pattern, ", ".join(sorted(map(str, entries))))
