"""The layout of a local cluster: ports, directories and each broker's server.properties.

Broker i counting from 0 (``minikafka cluster up``'s defaults; tests use free ports)::

    client listener     <PROTOCOL>://127.0.0.1:<9092+i> (PLAINTEXT unless --security)
    control plane       CONTROLLER://127.0.0.1:<9192+i>, same protocol
    metrics             http://127.0.0.1:<9600+i>/metrics
    files               DIR/broker-<i>/server.properties, DIR/broker-<i>/logs,
                        DIR/broker-<i>/server.log, DIR/prometheus.yml, and with
                        --security DIR/security/ and DIR/client.properties

Pure data and the text of the files it writes; ``tools.cluster.LocalCluster`` runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tools.cluster_security import ClusterSecurity

#: The ZooKeeper session timeout brokers ask for: a dead broker is noticed within this
#: plus a tick (ZooKeeper with tickTime=500 grants at most 10 s anyway).
SESSION_TIMEOUT_MS = 6000
#: the alert and recording rules of a checkout (absent from an installed wheel)
PROMETHEUS_RULES = Path(__file__).resolve().parents[1] / "monitoring" / "prometheus" / "rules"


@dataclass(frozen=True)
class ClusterLayout:
    """Where everything of a local cluster lives; broker i uses index i of each list."""

    directory: Path
    client_ports: tuple[int, ...]
    control_ports: tuple[int, ...]
    metrics_ports: tuple[int, ...]
    zookeeper_port: int = 2181
    #: None: run an embedded ZooKeeper on ``zookeeper_port``
    zookeeper_connect: str | None = None
    overrides: tuple[tuple[str, str], ...] = ()
    #: None: PLAINTEXT listeners (``cluster up --security``: tools.cluster_security)
    security: ClusterSecurity | None = None

    @staticmethod
    def standard(
        directory: Path,
        brokers: int = 3,
        base_port: int = 9092,
        control_base_port: int = 9192,
        metrics_base_port: int = 9600,
        zookeeper_port: int = 2181,
        overrides: Sequence[tuple[str, str]] = (),
        security: ClusterSecurity | None = None,
    ) -> ClusterLayout:
        """The standard layout of the module docstring (or the same shape from other base ports)."""
        given = dict(overrides)
        return ClusterLayout(
            directory=directory,
            client_ports=tuple(base_port + i for i in range(brokers)),
            control_ports=tuple(control_base_port + i for i in range(brokers)),
            metrics_ports=tuple(metrics_base_port + i for i in range(brokers)),
            zookeeper_port=zookeeper_port,
            zookeeper_connect=given.get("zookeeper.connect"),
            overrides=tuple(overrides),
            security=security,
        )

    @property
    def brokers(self) -> int:
        return len(self.client_ports)

    @property
    def zk_connect(self) -> str:
        return self.zookeeper_connect or f"127.0.0.1:{self.zookeeper_port}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.client_ports)

    def broker_dir(self, i: int) -> Path:
        return self.directory / f"broker-{i}"

    def log_dir(self, i: int) -> Path:
        return self.broker_dir(i) / "logs"

    def config_path(self, i: int) -> Path:
        return self.broker_dir(i) / "server.properties"

    def output_path(self, i: int) -> Path:
        return self.broker_dir(i) / "server.log"

    def metrics_url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.metrics_ports[i]}/metrics"

    def broker_properties(self, i: int) -> dict[str, str]:
        """Broker i's server.properties (the layout's overrides win)."""
        security = self.security
        name, protocol = (
            ("PLAINTEXT", "PLAINTEXT")
            if security is None
            else (security.listener_name, security.protocol)
        )
        listeners = (
            f"{name}://127.0.0.1:{self.client_ports[i]},"
            f"CONTROLLER://127.0.0.1:{self.control_ports[i]}"
        )
        props = {
            "broker.id": str(i),
            "listeners": listeners,
            "advertised.listeners": listeners,
            "listener.security.protocol.map": f"{name}:{protocol},CONTROLLER:{protocol}",
            "control.plane.listener.name": "CONTROLLER",
            "inter.broker.listener.name": name,
            "log.dirs": str(self.log_dir(i)),
            "zookeeper.connect": self.zk_connect,
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "metrics.port": str(self.metrics_ports[i]),
            # every broker of a local cluster stops at once: do not wait 3 x 5 s for a
            # controller that is itself going away
            "controlled.shutdown.retry.backoff.ms": "500",
            "num.network.threads": "2",
            "num.io.threads": "4",
            # __consumer_offsets on a cluster of one or two brokers: Kafka's default of 3
            # replicas would refuse to create it (consumer groups would never find a
            # coordinator)
            "offsets.topic.replication.factor": str(min(3, self.brokers)),
        }
        if security is not None:
            props.update(security.broker_properties(i, (name, "CONTROLLER")))
        props.update(dict(self.overrides))
        return props

    def prometheus_config(self) -> str:
        """A prometheus.yml scraping every broker's metrics, each target labelled with
        its ``broker`` as in the compose stack, so the same rules and dashboard apply;
        with the checkout's rules (monitoring/prometheus/rules) when they are there."""
        lines = [
            "# written by minikafka cluster up: prometheus --config.file=<this file>",
            "global: {scrape_interval: 5s, evaluation_interval: 5s}",
        ]
        if PROMETHEUS_RULES.is_dir():
            lines += ["rule_files:", f"  - {PROMETHEUS_RULES}/*.yml"]
        lines += ["scrape_configs:", "  - job_name: minikafka", "    static_configs:"]
        for i, port in enumerate(self.metrics_ports):
            lines += [
                f'      - targets: ["127.0.0.1:{port}"]',
                f'        labels: {{broker: "{i}"}}',
            ]
        return "\n".join(lines) + "\n"

    @property
    def prometheus_config_path(self) -> Path:
        return self.directory / "prometheus.yml"

    def write_configs(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.prometheus_config_path.write_text(self.prometheus_config())
        for i in range(self.brokers):
            self.broker_dir(i).mkdir(parents=True, exist_ok=True)
            lines = ["# written by minikafka cluster up", ""]
            lines += [f"{k}={v}" for k, v in self.broker_properties(i).items()]
            path = self.config_path(i)
            path.touch(mode=0o600)  # a secured cluster's holds the brokers' password
            path.write_text("\n".join(lines) + "\n")
        if self.security is not None:
            self.security.write_client_properties(self.bootstrap_servers)
