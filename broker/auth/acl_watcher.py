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
broker sees them first. The watch fires on kazoo's thread, which only wakes the task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

from broker.auth.acl_cache import AclCache
from zk.acl_codec import change_sequence
from zk.acls import CHANGE_ROOTS
from zk.codec import ZkDataError
from zk.facade import ZkFacade

log = logging.getLogger(__name__)

#: Kafka's ACL change notification expiration
DEFAULT_EXPIRATION_MS: Final = 15 * 60 * 1000


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
        self._time_ms = time_ms
        self._expiration_ms = expiration_ms
        self._last_sequence = dict.fromkeys(CHANGE_ROOTS, -1)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()

        def watch(_event: object) -> None:  # on kazoo's thread: only wake the task
            loop.call_soon_threadsafe(self._wake.set)

        self._watch = watch
        await self._zk.ensure_acl_paths()
        self._cache.replace_all(await self._zk.get_all_acls())
        log.info("loaded %d ACLs from ZooKeeper", len(self._cache))
        await self._process()
        self._task = asyncio.create_task(self._run(), name="acl-change-listener")

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
                log.exception("processing ACL change notifications failed")

    async def _process(self) -> None:
        for changes_root in CHANGE_ROOTS:
            await self._process_root(changes_root)

    async def _process_root(self, changes_root: str) -> None:
        names = await self._zk.get_acl_changes(changes_root, self._watch)
        created: dict[str, int] = {}
        for name in names:
            sequence = change_sequence(name)
            try:
                found = await self._zk.read_acl_change(changes_root, name)
            except ZkDataError as exc:  # not ours to understand; it expires like the rest
                log.warning("skipping ACL change notification %s: %s", name, exc)
                continue
            if found is None:
                continue
            pattern, created[name] = found
            if sequence <= self._last_sequence[changes_root]:
                continue
            self._last_sequence[changes_root] = sequence
            try:
                entries, _ = await self._zk.get_acls(pattern)
            except (ZkDataError, ValueError) as exc:
                log.error("ignoring the malformed ACLs of %s: %s", pattern, exc)
                continue
            self._cache.set(pattern, entries)
            log.debug("ACLs of %s now: %s", pattern, ", ".join(sorted(map(str, entries))))
        now = self._time_ms()
        stale = sorted(n for n, ctime in created.items() if now - ctime > self._expiration_ms)
        if stale:
            await self._zk.delete_acl_changes(changes_root, stale)
