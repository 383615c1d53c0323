"""A reusable fixture: ZooKeeper plus N real broker processes, as `minikafka cluster up`.

tests/integration/conftest.py declares it (and the ZooKeeper fixture it depends on)
for every integration module.

``cluster3`` (module scope) is a 3-broker ``TestCluster`` started through
``tools.cluster.LocalCluster`` -- the code behind ``minikafka cluster up`` -- on free
ports, against the session's ZooKeeper (tests.integration.zk_fixtures) under a fresh chroot, the
way ``cluster up --override zookeeper.connect=...`` runs. Brokers are separate processes;
tests kill, pause and restart them by pid and must leave every broker running (or
restarted) when they finish, since the cluster is shared by the module's tests.

A module's own ZooKeeper client on the cluster's chroot is
``tests.integration.zk_fixtures.kazoo_session(c.zk_connect)``.

``TestCluster`` adds what tests need on top: requests to a broker over TCP with our own
protocol package, the ZooKeeper view (controller id and epoch, registered brokers),
and metrics scrapes. Tests wait with ``tests.polling`` (poll with a deadline; never sleep to
synchronise).
"""

from __future__ import annotations

import asyncio
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kazoo.client import KazooClient

from client.connection import ConnectionConfig, request_once
from tools.cluster import SESSION_TIMEOUT_MS, ClusterLayout, LocalCluster
from tools.zookeeper_server import ZooKeeperServer, free_port

T = TypeVar("T")

#: ZooKeeper's tickTime in the test server (tests.integration.zk_fixtures)
TICK_MS = 500


class TestCluster:
    """A running LocalCluster and the means to observe it. Not thread safe."""

    __test__ = False  # not a test class, despite its name

    def __init__(self, local: LocalCluster, zk_connect: str) -> None:
        self.local = local
        self.layout = local.layout
        self.zk_connect = zk_connect
        self._zk = KazooClient(hosts=zk_connect, timeout=10.0)
        self._zk.start(timeout=15)

    def close(self) -> None:
        self._zk.stop()
        self._zk.close()

    # -- brokers -------------------------------------------------------------------------

    @property
    def broker_ids(self) -> list[int]:
        return list(range(self.layout.brokers))

    def pid(self, i: int) -> int:
        return self.local.processes[i].pid

    def is_running(self, i: int) -> bool:
        return self.local.processes[i].poll() is None

    def restart(self, i: int, timeout: float = 60.0) -> None:
        """Start broker i again (after a kill or stop) and wait for its registration."""
        assert not self.is_running(i), f"broker {i} is still running"
        self.local.start_broker(i)
        self.local.wait_registered([i], timeout)

    def log_text(self, i: int) -> str:
        return self.layout.output_path(i).read_text(errors="replace")

    # -- ZooKeeper's view ----------------------------------------------------------------

    def registered(self) -> list[int]:
        if self._zk.exists("/brokers/ids") is None:
            return []
        return sorted(int(c) for c in self._zk.get_children("/brokers/ids"))

    def controller(self) -> int | None:
        import json

        if self._zk.exists("/controller") is None:
            return None
        data, _ = self._zk.get("/controller")
        return int(json.loads(data)["brokerid"])

    def controller_epoch(self) -> int:
        data, _ = self._zk.get("/controller_epoch")
        return int(data)

    # -- requests over TCP -----------------------------------------------------------------

    def request(self, i: int, api_key: int, version: int, body: Any, timeout: float = 30) -> Any:
        """One request to broker i's client listener; the decoded response body."""
        port = self.layout.client_ports[i]
        config = ConnectionConfig("integration-test", 5.0, request_timeout_s=timeout)
        return asyncio.run(request_once("127.0.0.1", port, api_key, version, body, config))

    def metadata(self, i: int, topics: list[str] | None = None, version: int = 12) -> Any:
        from protocol.messages import MetadataRequest

        wanted = (
            None
            if topics is None
            else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        )
        body = MetadataRequest(topics=wanted, allow_auto_topic_creation=False)
        return self.request(i, 3, version, body)

    def metric(self, i: int, name: str) -> float | None:
        """A sample's value from broker i's /metrics (first line starting with ``name``)."""
        url = self.layout.metrics_url(i)
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        return None

    @property
    def session_timeout_s(self) -> float:
        return SESSION_TIMEOUT_MS / 1000


def start_cluster(
    zookeeper: ZooKeeperServer,
    directory: Path,
    brokers: int = 3,
    overrides: tuple[tuple[str, str], ...] = (),
    prepare: Callable[[str], None] | None = None,
) -> Iterator[TestCluster]:
    """Start a cluster of ``brokers`` on free ports under a fresh chroot, with broker
    ``overrides``; stop it after. ``prepare`` is called with the cluster's ZooKeeper
    connect string before any broker starts (to write what brokers find at startup)."""
    chroot = f"/cluster-{uuid.uuid4().hex[:10]}"
    zk_connect = zookeeper.connect_string + chroot
    ports = [free_port() for _ in range(3 * brokers)]
    layout = ClusterLayout(
        directory=directory,
        client_ports=tuple(ports[0:brokers]),
        control_ports=tuple(ports[brokers : 2 * brokers]),
        metrics_ports=tuple(ports[2 * brokers :]),
        zookeeper_connect=zk_connect,
        overrides=(("zookeeper.connect", zk_connect), *overrides),
    )
    if prepare is not None:
        prepare(zk_connect)
    local = LocalCluster(layout)
    local.start(timeout_s=90)
    cluster = TestCluster(local, zk_connect)
    try:
        yield cluster
    finally:
        cluster.close()
        local.stop(grace_s=30)


@pytest.fixture(scope="module")
def cluster3(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("cluster"), 3)
