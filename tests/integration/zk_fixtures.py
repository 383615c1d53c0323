"""Reusable ZooKeeper fixtures for integration tests.

tests/integration/conftest.py declares them for every integration module (declaring
them once is what makes the session-scoped server one per run). They are:

* ``zookeeper`` (session scope): one real ZooKeeper server (tools.zookeeper_server) on a
  free 127.0.0.1 port with tickTime=500, started once per test session and stopped by pid.
  The test is skipped, with the reason, when Java or the jars are missing.
* ``zk_connect`` (function scope): a connect string with a fresh chroot
  (``127.0.0.1:PORT/t-<hex>``) so tests that share the server never see each other's
  znodes. The chroot node is created before the test.
* ``kazoo_client`` (function scope): a started KazooClient on that chroot.

``kazoo_session`` is the context manager behind ``kazoo_client``, for clients a module or
a test opens on a connect string of its own (a test cluster's chroot, say).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tools.zookeeper_server import ZooKeeperLaunchError, ZooKeeperServer, free_port


@contextlib.contextmanager
def kazoo_session(
    connect: str, timeout: float = 10.0, start_timeout: float = 15.0
) -> Iterator[KazooClient]:
    """A started KazooClient on ``connect`` (``timeout``: its requests' and session's;
    ``start_timeout``: how long it may take to connect), stopped and closed after."""
    client = KazooClient(hosts=connect, timeout=timeout)
    client.start(timeout=start_timeout)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    data_dir: Path = tmp_path_factory.mktemp("zookeeper")
    server = ZooKeeperServer(data_dir=data_dir, port=free_port())
    try:
        server.start()
    except ZooKeeperLaunchError as exc:
        if "Java was not found" in str(exc) or "pyspark" in str(exc):
            pytest.skip(str(exc))
        raise
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zk_connect(zookeeper: ZooKeeperServer) -> str:
    chroot = f"/t-{uuid.uuid4().hex[:12]}"
    with kazoo_session(zookeeper.connect_string, timeout=5.0, start_timeout=10) as admin:
        admin.ensure_path(chroot)
    return zookeeper.connect_string + chroot


@pytest.fixture
def kazoo_client(zk_connect: str) -> Iterator[KazooClient]:
    with kazoo_session(zk_connect, timeout=5.0, start_timeout=10) as client:
        yield client


def expire_session(connect: str, client: KazooClient, timeout: float = 15.0) -> None:
    """Expire ``client``'s ZooKeeper session from the server side, as a long pause would.

    A second connection presents the same session id and password and then closes: the
    server ends the session, and ``client`` sees it expired (kazoo state LOST) when it
    next talks to the server. Returns once ``client`` has seen LOST.
    """
    import threading

    from kazoo.protocol.states import KazooState

    session_id, password = client.client_id
    lost = threading.Event()

    def on_state(state: str) -> None:
        if state == KazooState.LOST:
            lost.set()

    client.add_listener(on_state)
    try:
        twin = KazooClient(hosts=connect, client_id=(session_id, password), timeout=4.0)
        twin.start(timeout=10)
        twin.stop()
        twin.close()
        if not lost.wait(timeout):
            raise AssertionError(f"session 0x{session_id:x} did not expire within {timeout}s")
    finally:
        client.remove_listener(on_state)
