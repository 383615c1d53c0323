"""ACLs in a real ZooKeeper (zk.acls) and a broker-side cache following them
(broker.auth.acl_watcher): Kafka's znodes and notifications, concurrent writers through
znode versions, a change reaching a listener without a reload."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator

from kazoo.client import KazooClient

from broker.auth.acl_cache import AclCache
from broker.auth.acl_watcher import AclChangeListener
from protocol.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from tests.integration.zk_fixtures import expire_session
from tests.polling import until
from zk import acls
from zk.facade import ZkFacade
from zk.session import ZkSession

TOPIC_T = ResourcePattern(ResourceType.TOPIC, "t", PatternType.LITERAL)
PAY = ResourcePattern(ResourceType.TOPIC, "pay", PatternType.PREFIXED)


def entry(principal: str, op: AclOperation = AclOperation.READ) -> AccessControlEntry:
    return AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW)


def test_writes_kafkas_znodes_and_notifications(zk_connect: str, kazoo_client: KazooClient) -> None:
    session = ZkSession.connect(zk_connect, connect_timeout_s=10.0)
    try:
        acls.add_acls(session, TOPIC_T, [entry("User:alice")])
        acls.add_acls(session, PAY, [entry("User:bob", AclOperation.WRITE)])
        assert json.loads(kazoo_client.get("/kafka-acl/Topic/t")[0]) == {
            "version": 1,
            "acls": [
                {
                    "principal": "User:alice",
                    "permissionType": "Allow",
                    "operation": "Read",
                    "host": "*",
                }
            ],
        }
        assert kazoo_client.exists("/kafka-acl-extended/prefixed/Topic/pay")
        (literal,) = kazoo_client.get_children("/kafka-acl-changes")
        assert literal.startswith("acl_changes_")
        assert kazoo_client.get(f"/kafka-acl-changes/{literal}")[0] == b"Topic:t"
        (extended,) = kazoo_client.get_children("/kafka-acl-extended-changes")
        assert json.loads(kazoo_client.get(f"/kafka-acl-extended-changes/{extended}")[0]) == {
            "version": 1,
            "resourceType": "TOPIC",
            "name": "pay",
            "patternType": "PREFIXED",
        }
        assert acls.get_all_acls(session) == {
            TOPIC_T: {entry("User:alice")},
            PAY: {entry("User:bob", AclOperation.WRITE)},
        }
        removed, left = acls.remove_acls(session, TOPIC_T, lambda e: False)
        assert removed == {entry("User:alice")}
        assert left == frozenset()
        assert not kazoo_client.exists("/kafka-acl/Topic/t")
        assert len(kazoo_client.get_children("/kafka-acl-changes")) == 2
    finally:
        session.close()


def test_concurrent_writers_both_land(zk_connect: str) -> None:
    sessions = [ZkSession.connect(zk_connect, connect_timeout_s=10.0) for _ in range(4)]
    try:
        start = threading.Barrier(len(sessions))

        def writer(index: int) -> None:
            start.wait()
            for n in range(5):
                acls.add_acls(sessions[index], TOPIC_T, [entry(f"User:w{index}-{n}")])

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(len(sessions))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        found, _ = acls.get_acls(sessions[0], TOPIC_T)
        assert {e.principal for e in found} == {
            f"User:w{i}-{n}" for i in range(4) for n in range(5)
        }
    finally:
        for session in sessions:
            session.close()


@contextlib.asynccontextmanager
async def writer_and_reader(zk_connect: str) -> AsyncIterator[tuple[ZkFacade, ZkFacade]]:
    """Two ZooKeeper connections: one writing ACLs, one under a listener."""
    writer = await ZkFacade.connect(zk_connect)
    reader = await ZkFacade.connect(zk_connect)
    try:
        yield writer, reader
    finally:
        await writer.close()
        await reader.close()


def listener_of(cache: AclCache, zk: ZkFacade) -> AclChangeListener:
    return AclChangeListener(cache, zk, lambda: int(time.time() * 1000), 900_000)


def test_listener_loads_then_follows_changes(zk_connect: str) -> None:
    async def scenario() -> None:
        async with writer_and_reader(zk_connect) as (writer, reader):
            cache = AclCache()
            listener = listener_of(cache, reader)
            try:
                # started on an empty ZooKeeper: it must still see the first change
                await listener.start()
                await writer.add_acls(TOPIC_T, [entry("User:alice")])
                await until(lambda: cache.get(TOPIC_T) == {entry("User:alice")}, timeout=5)
                await writer.add_acls(PAY, [entry("User:bob")])
                await writer.remove_acls(TOPIC_T, lambda e: False)
                await until(
                    lambda: cache.get(PAY) == {entry("User:bob")} and not cache.get(TOPIC_T),
                    timeout=5,
                )
                # a restarted listener loads what is there
                await listener.stop()
                again = AclCache()
                listener = listener_of(again, reader)
                await listener.start()
                assert again.get(PAY) == {entry("User:bob")}
                assert len(again) == 1
            finally:
                await listener.stop()

    asyncio.run(scenario())


def test_listener_follows_changes_after_its_session_expired(zk_connect: str) -> None:
    """An expired session takes its watches with it, and a change made while it was gone
    fires none: the listener must read the queues again once connected anew."""

    async def scenario() -> None:
        async with writer_and_reader(zk_connect) as (writer, reader):
            cache = AclCache()
            listener = listener_of(cache, reader)
            try:
                await listener.start()
                await asyncio.to_thread(expire_session, zk_connect, reader.kazoo)
                await writer.add_acls(TOPIC_T, [entry("User:after-expiry")])
                await until(lambda: cache.get(TOPIC_T) == {entry("User:after-expiry")}, timeout=15)
            finally:
                await listener.stop()

    asyncio.run(scenario())
