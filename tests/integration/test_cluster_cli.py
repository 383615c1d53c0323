"""The commands themselves: `minikafka cluster up` end to end, and `minikafka server`
refusing bad configuration and waiting out an unreachable ZooKeeper without a traceback.

Each command runs as a subprocess; it is stopped by its pid (SIGTERM, as Ctrl-C or a
service manager would) and every wait has a deadline.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.polling import wait_until
from tools.cluster import port_in_use
from tools.zookeeper_server import find_java, free_port

pytestmark = pytest.mark.timeout(240)

MINIKAFKA = [sys.executable, "-m", "tools.main"]


def _free_base(count: int) -> int:
    """A base port with ``count`` consecutive free ports after it."""
    for _ in range(200):
        base = random.randrange(20_000, 60_000)
        if not any(port_in_use(base + i) for i in range(count)):
            return base
    raise AssertionError("no run of free ports found")


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts; any still running at the end are stopped by pid: SIGTERM
    first (so `cluster up` stops its brokers and ZooKeeper), SIGKILL after a grace."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(30)


def _start(
    cmd: list[str], out: Path, procs: list[subprocess.Popen[bytes]]
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` as the leader of its own process group, as a shell starts a job."""
    with open(out, "wb") as sink:
        proc = subprocess.Popen(
            cmd,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    procs.append(proc)
    return proc


def test_cluster_up_serves_and_stops_cleanly(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    try:
        find_java()
    except Exception as exc:
        pytest.skip(str(exc))
    base = _free_base(9)  # client, control and metrics ports of 3 brokers, in one run
    zk_port = free_port()
    console_port = free_port()
    out = tmp_path / "cluster.out"
    cmd = [
        *MINIKAFKA, "cluster", "up", "--brokers", "3", "--dir", str(tmp_path / "data"),
        "--base-port", str(base), "--control-base-port", str(base + 3),
        "--metrics-base-port", str(base + 6), "--zookeeper-port", str(zk_port),
        "--console-port", str(console_port),
    ]  # fmt: skip
    proc = _start(cmd, out, spawned)
    wait_until(
        lambda: "brokers up" in out.read_text() or proc.poll() is not None, 120, "cluster up"
    )
    text = out.read_text()
    assert proc.poll() is None, text
    bootstrap = ",".join(f"127.0.0.1:{base + i}" for i in range(3))
    assert f"bootstrap servers: {bootstrap}" in text
    assert f"zookeeper connect: 127.0.0.1:{zk_port}" in text
    for i in range(3):
        url = f"http://127.0.0.1:{base + 6 + i}/metrics"
        assert url in text
        with urllib.request.urlopen(url, timeout=5) as response:
            assert b"minikafka_controller_active" in response.read()
    # the web console beside it, on the cluster
    console = f"http://127.0.0.1:{console_port}/"
    assert f"web console: {console}" in text

    def console_brokers() -> list[int]:
        with urllib.request.urlopen(console + "api/cluster", timeout=5) as response:
            return [b["id"] for b in json.loads(response.read())["brokers"]]

    assert wait_until(console_brokers, 30, "the web console") == [0, 1, 2]

    # Ctrl-C in a terminal: SIGINT to the whole process group (ZooKeeper included)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(90) == 0
    assert out.read_text().rstrip().endswith("minikafka cluster: stopped")
    for i in range(3):
        logs = tmp_path / "data" / f"broker-{i}" / "logs"
        assert (logs / ".kafka_cleanshutdown").exists()
        assert (logs / "meta.properties").read_text().count(f"broker.id={i}") == 1
    assert not port_in_use(zk_port) and not port_in_use(base)
    assert not port_in_use(console_port)


def _server_cmd(tmp_path: Path, *overrides: str) -> list[str]:
    config = tmp_path / "server.properties"
    port = free_port()
    config.write_text(
        f"broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={tmp_path / 'logs'}\n"
        "metrics.port=0\n"
    )
    cmd = [*MINIKAFKA, "server", str(config)]
    for item in overrides:
        cmd += ["--override", item]
    return cmd


def test_server_refuses_a_bad_value_naming_the_key(tmp_path: Path) -> None:
    cmd = _server_cmd(tmp_path, "zookeeper.connect=127.0.0.1:1", "num.io.threads=lots")
    result = subprocess.run(cmd, capture_output=True, timeout=60)
    assert result.returncode == 1
    assert b"num.io.threads" in result.stderr
    assert b"Traceback" not in result.stderr


def test_server_waits_for_zookeeper_with_a_clear_message(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    dead = free_port()  # nothing listens here
    # a minute to connect: the broker retries, reporting each attempt, until stopped
    cmd = _server_cmd(
        tmp_path, f"zookeeper.connect=127.0.0.1:{dead}", "zookeeper.connection.timeout.ms=60000"
    )
    out = tmp_path / "server.out"
    proc = _start(cmd, out, spawned)
    wait_until(
        lambda: (
            "cannot connect to ZooKeeper" in out.read_text() and "(attempt 2:" in out.read_text()
        ),
        60,
        "two connection attempts reported",
    )
    assert proc.poll() is None  # still retrying, not crashed
    assert f"127.0.0.1:{dead}" in out.read_text()
    os.kill(proc.pid, signal.SIGTERM)
    started = time.monotonic()
    proc.wait(30)
    assert time.monotonic() - started < 30
    assert "Traceback" not in out.read_text()


def test_server_gives_up_on_zookeeper_after_the_connection_timeout(tmp_path: Path) -> None:
    """As Kafka's broker does: no ZooKeeper within zookeeper.connection.timeout.ms fails
    start-up with an error that names ZooKeeper and the timeout, and a non-zero exit."""
    dead = free_port()  # nothing listens here
    cmd = _server_cmd(
        tmp_path, f"zookeeper.connect=127.0.0.1:{dead}", "zookeeper.connection.timeout.ms=2000"
    )
    started = time.monotonic()
    result = subprocess.run(cmd, capture_output=True, timeout=60)
    elapsed = time.monotonic() - started
    output = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 1, output
    assert elapsed >= 2.0, elapsed  # it did wait the timeout out
    assert "Timed out waiting for connection to ZooKeeper" in output, output
    assert "while in state: CONNECTING" in output
    assert f"127.0.0.1:{dead}" in output
    assert "zookeeper.connection.timeout.ms=2000" in output
    assert "Traceback" not in output


def test_layout_follows_design_section_6(tmp_path: Path) -> None:
    from tools.cluster import ClusterLayout

    layout = ClusterLayout.standard(tmp_path, brokers=3)
    assert layout.bootstrap_servers == "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"
    assert layout.zk_connect == "127.0.0.1:2181"
    assert layout.metrics_url(2) == "http://127.0.0.1:9602/metrics"
    props = layout.broker_properties(1)
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9093,CONTROLLER://127.0.0.1:9193"
    assert props["control.plane.listener.name"] == "CONTROLLER"
    assert props["log.dirs"] == str(tmp_path / "broker-1" / "logs")
    external = ClusterLayout.standard(
        tmp_path, brokers=1, overrides=[("zookeeper.connect", "zk:2181/x"), ("num.io.threads", "2")]
    )
    assert external.zookeeper_connect == "zk:2181/x"
    assert external.broker_properties(0)["num.io.threads"] == "2"
