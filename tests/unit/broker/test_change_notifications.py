"""The change notification follower over a queue double: each new sequence handled once,
in order; unreadable and vanished notifications passed over; the expired ones purged,
unreadable ones too; a watch, a failed pass's retry and the connection coming back wake
the follower again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kazoo.protocol.states import KazooState

from broker.change_notifications import NotificationFollower, NotificationQueue
from tests.polling import until
from zk.codec import ZkDataError

pytestmark = pytest.mark.timeout(10)


class States:
    """A connection-state announcer double (a KazooClient's listeners)."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[str], Any]] = []

    def add_listener(self, listener: Callable[[str], Any]) -> None:
        self.listeners.append(listener)

    def remove_listener(self, listener: Callable[[str], Any]) -> None:
        self.listeners.remove(listener)

    def announce(self, state: str) -> None:
        for listener in self.listeners:
            listener(state)


class Root:
    """One notification root: name -> (payload, created ms); a payload of None reads as
    unreadable, a name in ``vanished`` as deleted meanwhile."""

    def __init__(self) -> None:
        self.notifications: dict[str, tuple[str | None, int]] = {}
        self.vanished: set[str] = set()
        self.handled: list[str] = []
        self.deleted: list[str] = []
        self.watches: list[Any] = []
        #: listings to fail (ZooKeeper unreachable), and the failed ones' count
        self.unreachable = False
        self.failed_listings = 0

    def add(self, sequence: int, payload: str | None, created_ms: int = 0) -> None:
        self.notifications[f"change_{sequence:010d}"] = (payload, created_ms)

    async def list_names(self, watch: Any) -> list[str]:
        self.watches.append(watch)
        if self.unreachable:
            self.failed_listings += 1
            raise ConnectionError("ZooKeeper unreachable")
        return sorted(self.notifications)

    async def read(self, name: str) -> tuple[str | ZkDataError, int] | None:
        if name in self.vanished:
            return None
        payload, created = self.notifications[name]
        if payload is None:
            return ZkDataError(f"{name}: not JSON"), created
        return payload, created

    async def handle(self, payload: str) -> None:
        self.handled.append(payload)

    async def delete(self, names: list[str]) -> None:
        self.deleted.extend(names)
        for name in names:
            del self.notifications[name]

    def queue(self) -> NotificationQueue[str]:
        return NotificationQueue(
            root="/changes",
            list_names=self.list_names,
            sequence=lambda name: int(name.rsplit("_", 1)[1]),
            read=self.read,
            handle=self.handle,
            delete=self.delete,
        )


async def test_each_new_notification_is_handled_once_in_order() -> None:
    root = Root()
    root.add(1, "topics/a")
    root.add(2, None)  # unreadable: skipped, the others go on
    root.add(3, "topics/b")
    root.vanished.add("change_0000000004")
    root.add(4, "gone")
    follower = NotificationFollower("config change", [root.queue()], States(), lambda: 0, 60_000)
    await follower.start()
    try:
        assert root.handled == ["topics/a", "topics/b"]
        root.add(5, "topics/c")
        root.watches[-1](None)  # the children watch fires (on kazoo's thread in a broker)
        await until(lambda: root.handled[-1] == "topics/c", timeout=5)
        assert root.handled == ["topics/a", "topics/b", "topics/c"]  # 1 and 3 not again
    finally:
        await follower.stop()


async def test_notifications_older_than_the_expiration_are_purged() -> None:
    root = Root()
    root.add(1, "old", created_ms=1_000)
    root.add(2, "recent", created_ms=50_000)
    now = 61_001
    follower = NotificationFollower("ACL change", [root.queue()], States(), lambda: now, 60_000)
    await follower.start()
    await follower.stop()
    assert root.handled == ["old", "recent"]  # handled before purged
    assert root.deleted == ["change_0000000001"]


async def test_a_failed_pass_is_retried_without_another_wake() -> None:
    """The listing that failed armed no watch: the follower must retry by itself."""
    root = Root()
    follower = NotificationFollower("config change", [root.queue()], States(), lambda: 0, 60_000)
    await follower.start()
    try:
        root.unreachable = True
        root.add(1, "topics/a")
        root.watches[-1](None)
        await until(lambda: root.failed_listings >= 1, timeout=5)
        assert root.handled == []
        root.unreachable = False  # back: no watch fires, the retry finds the change
        await until(lambda: root.handled == ["topics/a"], timeout=5)
    finally:
        await follower.stop()


async def test_the_connection_coming_back_wakes_the_follower() -> None:
    """A session that expired took the watches with it: CONNECTED re-reads the queue."""
    root, states = Root(), States()
    follower = NotificationFollower("ACL change", [root.queue()], states, lambda: 0, 60_000)
    await follower.start()
    try:
        listings = len(root.watches)
        root.add(1, "topics/a")  # made while the session was gone: no watch fired
        states.announce(KazooState.LOST)
        states.announce(KazooState.CONNECTED)
        await until(lambda: root.handled == ["topics/a"], timeout=5)
        assert len(root.watches) == listings + 1  # and the listing armed a new watch
    finally:
        await follower.stop()
    assert states.listeners == []  # stop removed its listener


async def test_an_unreadable_notification_is_skipped_once_and_purged_when_expired() -> None:
    root = Root()
    root.add(1, None, created_ms=1_000)
    root.add(2, "topics/a", created_ms=1_000)
    now = 2_000
    follower = NotificationFollower("config change", [root.queue()], States(), lambda: now, 60_000)
    await follower.start()
    try:
        assert root.handled == ["topics/a"] and root.deleted == []
        now = 61_001
        root.watches[-1](None)
        await until(lambda: len(root.deleted) == 2, timeout=5)
        assert sorted(root.deleted) == ["change_0000000001", "change_0000000002"]
        assert root.handled == ["topics/a"]
    finally:
        await follower.stop()
