"""The web console beside ``minikafka cluster up``: a ``minikafka console`` process on
127.0.0.1:<console port> (``--console-port``, 8080; 0: none), pointed at the cluster's
bootstrap servers and every broker's metrics endpoint (``ID=URL``, so rates show per
broker), with DIR/client.properties when the cluster is secured. Its output goes to
DIR/console.log; it runs in a session of its own (a terminal's Ctrl-C reaches it through
``cluster up``, which stops it before the brokers), and ends itself if ``cluster up``
is killed (``MINIKAFKA_PARENT_PID``, as the brokers do)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tools.cluster_layout import ClusterLayout
from tools.server import PARENT_PID_ENV


def console_command(layout: ClusterLayout, port: int) -> list[str]:
    argv = [
        sys.executable, "-m", "tools.main", "console",
        "--bootstrap-server", layout.bootstrap_servers, "--port", str(port),
    ]  # fmt: skip
    for i in range(layout.brokers):
        argv += ["--metrics-url", f"{i}={layout.metrics_url(i)}"]
    if layout.security is not None:
        argv += ["--command-config", str(layout.security.client_properties_path)]
    return argv


def console_log_path(layout: ClusterLayout) -> Path:
    return layout.directory / "console.log"


def start_console(layout: ClusterLayout, port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env[PARENT_PID_ENV] = str(os.getpid())
    with open(console_log_path(layout), "ab") as out:
        return subprocess.Popen(
            console_command(layout, port),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
