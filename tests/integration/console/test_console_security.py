"""``minikafka console --command-config``: the console connects to a SASL listener with
the client properties it is given, and says so when the cluster refuses its credentials.
A one-broker SASL cluster (tests.integration.sasl_cluster) and the command as a person
runs it."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.sasl_cluster import SaslCluster, start_sasl_cluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer, free_port

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def sasl_cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SaslCluster]:
    yield from start_sasl_cluster(zookeeper, tmp_path_factory.mktemp("console-sasl"), "PLAIN")


def properties(path: Path, password: str) -> Path:
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="alice" password="{password}";\n'
    )
    return path


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_console_connects_with_its_client_properties(
    sasl_cluster: SaslCluster, tmp_path: Path
) -> None:
    bootstrap = f"127.0.0.1:{sasl_cluster.sasl_port}"
    consoles: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    try:
        for name, password in (("good", "alice-secret"), ("bad", "wrong")):
            port = free_port()
            config = properties(tmp_path / f"{name}.properties", password)
            process = subprocess.Popen(
                [sys.executable, "-m", "tools.main", "console", "--bootstrap-server", bootstrap,
                 "--command-config", str(config), "--port", str(port)],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            consoles[name] = (process, f"http://127.0.0.1:{port}")
        for _, url in consoles.values():

            def listening(url: str = url) -> bool:
                return get(url + "/api/csrf")[0] == 200

            wait_until(listening, 30, "the console")
        status, body = get(consoles["good"][1] + "/api/cluster")
        assert status == 200
        assert [(b["id"], b["port"]) for b in body["brokers"]] == [(0, sasl_cluster.sasl_port)]
        status, body = get(consoles["bad"][1] + "/api/cluster")
        assert status == 502
        assert body["error"]["kafka_error"] == "SASL_AUTHENTICATION_FAILED"
        assert "--command-config" in body["error"]["detail"]
    finally:
        for process, _ in consoles.values():
            process.terminate()
            process.wait(15)
