"""How a local cluster stops, whatever stops it, and how a fresh broker answers its first
client (tools.cluster, tools.watchdog, broker.zk_reachability, broker.readiness).

Each case starts ``minikafka cluster up`` as a subprocess (the leader of its own process
group, as a shell starts a job), signals it or its processes by pid, and reads what the
processes wrote: cluster up's progress lines, each broker's server.log, the watchdog's
log. They check the order and the mechanism (who stopped when ZooKeeper was still there,
which steps were skipped and why), never how long anything took. The first-request case
starts a broker through LocalCluster against the session's ZooKeeper.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.polling import wait_until
from tools.cluster import ClusterLayout, LocalCluster, port_in_use
from tools.zookeeper_server import ZooKeeperServer, find_java, free_port

pytestmark = pytest.mark.timeout(240)

MINIKAFKA = [sys.executable, "-m", "tools.main"]
#: what a shutdown step that waited out its bound logs
WAITED_OUT = "did not finish in"


@pytest.fixture(autouse=True)
def _java() -> None:
    try:
        find_java()
    except Exception as exc:
        pytest.skip(str(exc))


def _free_base(count: int) -> int:
    """A base port with ``count`` consecutive free ports after it."""
    for _ in range(200):
        base = random.randrange(20_000, 60_000)
        if not any(port_in_use(base + i) for i in range(count)):
            return base
    raise AssertionError("no run of free ports found")


def _pids_with(text: str) -> list[int]:
    """Pids of live processes whose command line contains ``text`` (a path unique to the
    test, so only processes this test started match)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):  # the process ended meanwhile
                continue
            if text in cmdline and state != "Z":
                pids.append(int(entry.name))
    return pids


class Up:
    """One ``cluster up`` subprocess in ``tmp/data`` and what it wrote."""

    def __init__(self, tmp: Path, brokers: int) -> None:
        self.data = tmp / "data"
        self.out = tmp / "cluster.out"
        self.brokers = brokers
        self.base = _free_base(3 * brokers)
        self.zk_port = free_port()
        cmd = [
            *MINIKAFKA, "cluster", "up", "--brokers", str(brokers), "--dir", str(self.data),
            "--base-port", str(self.base), "--control-base-port", str(self.base + brokers),
            "--metrics-base-port", str(self.base + 2 * brokers),
            "--zookeeper-port", str(self.zk_port), "--console-port", "0",
        ]  # fmt: skip
        with open(self.out, "wb") as sink:
            self.proc = subprocess.Popen(
                cmd,
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        wait_until(
            lambda: "brokers up" in self.output() or self.proc.poll() is not None,
            120,
            "cluster up",
        )
        assert self.proc.poll() is None, self.output()

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def log(self, i: int) -> str:
        return (self.data / f"broker-{i}" / "server.log").read_text(errors="replace")

    def clean(self, i: int) -> bool:
        return (self.data / f"broker-{i}" / "logs" / ".kafka_cleanshutdown").exists()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.base + i}" for i in range(self.brokers))

    def controller(self) -> int:
        client = KazooClient(hosts=f"127.0.0.1:{self.zk_port}", timeout=10.0)
        client.start(timeout=15)
        try:
            data, _ = client.get("/controller")
            return int(json.loads(data)["brokerid"])
        finally:
            client.stop()
            client.close()

    def create_topic(self, name: str, partitions: int, replicas: int) -> None:
        """A topic with leaders on every broker, so that controlled shutdowns have work."""
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics([NewTopic(name, partitions, replicas)], operation_timeout=20)
        futures[name].result(60)

    def zookeeper_pid(self) -> int:
        (pid,) = _pids_with(str(self.data / "zookeeper" / "zoo.cfg"))
        return pid

    def cleanup(self) -> None:
        """Whatever this test started and is still running goes, by pid."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        for pid in _pids_with(str(self.data)):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def up(tmp_path: Path) -> Iterator[list[Up]]:
    started: list[Up] = []
    yield started
    for u in started:
        u.cleanup()


def _lines(text: str) -> list[str]:
    return [line.removeprefix("minikafka cluster: ") for line in text.splitlines()]


def test_sigterm_to_the_group_stops_the_others_then_the_controller_then_zookeeper(
    tmp_path: Path, up: list[Up]
) -> None:
    cluster = Up(tmp_path, 3)
    up.append(cluster)
    cluster.create_topic("moves", 3, 3)
    controller = cluster.controller()
    others = [i for i in range(3) if i != controller]

    os.killpg(cluster.proc.pid, signal.SIGTERM)  # kill -- -PGID: the whole process group
    assert cluster.proc.wait(120) == 0, cluster.output()

    lines = _lines(cluster.output())
    order = [
        f"stopping brokers {', '.join(map(str, others))}",
        f"stopping the controller {controller}",
        "stopping ZooKeeper",
        "stopped",
    ]
    assert [line for line in lines if line in order] == order, lines
    for i in range(3):
        log = cluster.log(i)
        assert cluster.clean(i), f"broker {i} left no clean-shutdown marker"
        assert "shut down completed" in log
        # ZooKeeper was there for every step: nothing skipped, nothing waited out
        assert "ZooKeeper is unreachable" not in log and "was lost" not in log
        assert WAITED_OUT not in log
    for i in others:  # the controller took their leaderships
        assert "controlled shutdown left" not in cluster.log(i)
    # the controller, last, had nobody to hand its leaderships to, and did not insist
    assert "no other broker can lead" in cluster.log(controller)
    assert "controlled shutdown attempt" not in cluster.log(controller)
    assert not _pids_with(str(cluster.data))


def test_sigterm_to_every_process_still_stops_zookeeper_last(tmp_path: Path, up: list[Up]) -> None:
    """As a service manager's control-group kill: every process gets SIGTERM at once.
    The brokers stop by themselves; ZooKeeper ignores it and outlives them."""
    cluster = Up(tmp_path, 2)
    up.append(cluster)
    cluster.create_topic("moves", 2, 2)
    everyone = _pids_with(str(cluster.data))
    assert cluster.zookeeper_pid() in everyone and len(everyone) >= 4  # + the watchdog
    for pid in [cluster.proc.pid, *everyone]:
        os.kill(pid, signal.SIGTERM)
    assert cluster.proc.wait(120) == 0, cluster.output()
    for i in range(2):
        log = cluster.log(i)
        assert cluster.clean(i)
        assert "shutdown: deregistration" in log
        assert "ZooKeeper is unreachable" not in log and WAITED_OUT not in log
    assert _lines(cluster.output())[-2:] == ["stopping ZooKeeper", "stopped"]
    assert not _pids_with(str(cluster.data))


def test_a_broker_whose_zookeeper_is_gone_skips_the_steps_that_need_it(
    tmp_path: Path, up: list[Up]
) -> None:
    cluster = Up(tmp_path, 2)
    up.append(cluster)
    cluster.create_topic("moves", 2, 2)
    zk = cluster.zookeeper_pid()
    os.kill(zk, signal.SIGKILL)
    metrics = [f"http://127.0.0.1:{cluster.base + 4 + i}/metrics" for i in range(2)]

    def both_disconnected() -> bool:
        import urllib.request

        seen = []
        for url in metrics:
            with urllib.request.urlopen(url, timeout=5) as response:
                seen.append("minikafka_zookeeper_connected 0.0" in response.read().decode())
        return all(seen)

    wait_until(both_disconnected, 30, "both brokers to see ZooKeeper gone")

    os.killpg(cluster.proc.pid, signal.SIGTERM)
    assert cluster.proc.wait(120) == 0, cluster.output()
    for i in range(2):
        log = cluster.log(i)
        assert cluster.clean(i)
        assert "controlled shutdown skipped: ZooKeeper is unreachable" in log
        assert "deregistration skipped: ZooKeeper is unreachable" in log
        assert WAITED_OUT not in log
        assert "shut down completed" in log


def test_sigkill_of_cluster_up_leaves_no_process(tmp_path: Path, up: list[Up]) -> None:
    cluster = Up(tmp_path, 1)
    up.append(cluster)
    zk = cluster.zookeeper_pid()
    (broker,) = _pids_with(str(cluster.data / "broker-0" / "server.properties"))
    cluster.proc.kill()  # SIGKILL: cluster up can pass nothing on
    cluster.proc.wait(30)
    wait_until(lambda: not _pids_with(str(cluster.data)), 120, "every process to end")
    assert cluster.clean(0)  # the broker stopped gracefully, while ZooKeeper was there
    assert "deregistration skipped" not in cluster.log(0)
    watchdog = (cluster.data / "watchdog.log").read_text()
    assert f"stopping brokers [{broker}]" in watchdog
    assert f"stopping ZooKeeper [{zk}]" in watchdog
    assert watchdog.index("stopping brokers") < watchdog.index("stopping ZooKeeper")


# -- the first client request of a fresh broker ---------------------------------------------


def _free(port: int) -> bool:
    return not port_in_use(port)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("start", range(3))
def test_create_topics_the_instant_the_port_accepts_is_answered(
    start: int, zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    """Before the fix, an AdminClient that asked this early got a Metadata answer with
    no broker and no controller and waited for one until its request timed out."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    chroot = f"/first-request-{uuid.uuid4().hex[:10]}"
    zk_connect = zookeeper.connect_string + chroot
    # below the ephemeral range: polling a port in it with connect() now and then
    # connects the socket to itself, which then holds the port the broker wants
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    client = next(p for p in iter(lambda: random.randrange(10_000, low), 0) if _free(p))
    control, metrics = free_port(), free_port()
    layout = ClusterLayout(
        directory=tmp_path,
        client_ports=(client,),
        control_ports=(control,),
        metrics_ports=(metrics,),
        zookeeper_connect=zk_connect,
        overrides=(("zookeeper.connect", zk_connect),),
    )
    local = LocalCluster(layout)
    layout.write_configs()
    try:
        local.start_broker(0)
        wait_until(lambda: _accepts(client), 60, "the client port", interval=0.001)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{client}", "log_level": 0})
        futures = admin.create_topics([NewTopic("first", 1, 1)], operation_timeout=10)
        futures["first"].result(40)  # raises if it was refused or never answered
        metadata = admin.list_topics(timeout=10)
        assert "first" in metadata.topics and metadata.controller_id == 0
        del futures, admin
    finally:
        local.stop(grace_s=30)
    assert "ready to serve client requests" in layout.output_path(0).read_text()
