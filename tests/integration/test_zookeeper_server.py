"""The ZooKeeper launcher: a real server from the pyspark jars, loopback only."""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tools.zookeeper_server import (
    ZooKeeperLaunchError,
    ZooKeeperServer,
    find_java,
    four_letter_word,
    render_config,
)


def test_server_answers_ruok_and_serves_kazoo(zookeeper: ZooKeeperServer) -> None:
    assert four_letter_word("127.0.0.1", zookeeper.port, b"ruok") == b"imok"
    client = KazooClient(hosts=zookeeper.connect_string, timeout=5.0)
    client.start(timeout=10)
    try:
        assert client.exists("/zookeeper") is not None
    finally:
        client.stop()
        client.close()


def test_chroot_fixture_isolates_tests(kazoo_client: KazooClient) -> None:
    assert kazoo_client.get_children("/") == []


def test_config_is_loopback_only_with_short_ticks(tmp_path: Path) -> None:
    cfg = render_config(tmp_path, 2181)
    assert "clientPortAddress=127.0.0.1" in cfg
    assert "tickTime=500" in cfg
    assert "admin.enableServer=false" in cfg


def test_missing_java_gives_clear_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(ZooKeeperLaunchError, match="Java was not found"):
        find_java()
    server = ZooKeeperServer(data_dir=tmp_path / "zk", port=1)
    with pytest.raises(ZooKeeperLaunchError, match="Java was not found"):
        server.start()
    assert server.process is None


def test_cli_runs_in_foreground_and_stops_on_sigterm(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    from tools.zookeeper_server import free_port

    port = free_port()
    err = (tmp_path / "zookeeper.err").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tools.main",
            "zookeeper",
            "--port",
            str(port),
            "--dir",
            str(tmp_path / "zk"),
        ],
        stdout=subprocess.PIPE,
        # the JVM's own log lines go apart
        stderr=err,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()  # the server prints one line once serving
        assert f"127.0.0.1:{port}" in line, (line, (tmp_path / "zookeeper.err").read_text())
        assert four_letter_word("127.0.0.1", port, b"ruok") == b"imok"
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(30) == 0
        # the happy path shows the user no Java stack trace (a readiness probe that
        # connects too early makes ZooKeeper log a NullPointerException)
        err.flush()
        assert "Exception" not in (tmp_path / "zookeeper.err").read_text()
    finally:
        if proc.poll() is None:
            # SIGTERM first: the command stops the JVM it started in a session of its
            # own, which a SIGKILL of the command alone would leave running
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        err.close()
