"""``minikafka console`` refuses what it cannot use before it serves anything, naming it,
and ``cluster up``'s console process is pointed at the cluster's brokers and metrics."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.cluster_console import console_command
from tools.cluster_layout import ClusterLayout
from tools.main import main


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--metrics-url", "localhost:9600"], "is not [ID=]http(s)://HOST:PORT/metrics"),
        (["--users-file", "/nonexistent/users"], "cannot read users file /nonexistent/users"),
        (["--command-config", "/nonexistent/client.properties"], "cannot read /nonexistent"),
    ],
)
def test_a_bad_option_is_refused_naming_it(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["console", "--bootstrap-server", "127.0.0.1:1", *extra])
    assert status == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_bootstrap_server_must_be_host_and_port(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["console", "--bootstrap-server", "nohost"]) == 1
    assert "'nohost' is not HOST:PORT" in capsys.readouterr().err


def test_cluster_up_points_its_console_at_every_broker(tmp_path: Path) -> None:
    layout = ClusterLayout.standard(tmp_path, 3, 9092, 9192, 9600, 2181, [], None)
    argv = console_command(layout, 8080)
    assert argv[argv.index("--bootstrap-server") + 1] == layout.bootstrap_servers
    assert argv[argv.index("--port") + 1] == "8080"
    urls = [argv[i + 1] for i, a in enumerate(argv) if a == "--metrics-url"]
    assert urls == [f"{i}=http://127.0.0.1:{9600 + i}/metrics" for i in range(3)]
    assert "--command-config" not in argv  # a plaintext cluster
