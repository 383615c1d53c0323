"""The change notification follower over a queue double: each new sequence handled once,
in order; unreadable and vanished notifications passed over; the expired ones purged;
a watch wakes the follower again."""

from __future__ import annotations

from typing import Any

import pytest

from broker.change_notifications import NotificationFollower, NotificationQueue
from tests.polling import until
from zk.codec import ZkDataError

pytestmark = pytest.mark.timeout(10)


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

    async def read(self, name: str) -> tuple[str, int] | None:
        if name in self.vanished:
            return None
        payload, created = self.notifications[name]
        if payload is None:
            raise ZkDataError(f"{name}: not JSON")
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
    follower = NotificationFollower("config change", [root.queue()], lambda: 0, 60_000)
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
    follower = NotificationFollower("ACL change", [root.queue()], lambda: now, 60_000)
    await follower.start()
    await follower.stop()
    assert root.handled == ["old", "recent"]  # handled before purged
    assert root.deleted == ["change_0000000001"]


async def test_a_failure_while_handling_is_retried_at_the_next_wake() -> None:
    root = Root()
    follower = NotificationFollower("config change", [root.queue()], lambda: 0, 60_000)
    await follower.start()
    try:
        root.unreachable = True
        root.add(1, "topics/a")
        root.watches[-1](None)
        await until(lambda: root.failed_listings == 1, timeout=5)
        assert root.handled == []
        root.unreachable = False
        root.watches[-1](None)  # a later wake
        await until(lambda: root.handled == ["topics/a"], timeout=5)
    finally:
        await follower.stop()
