"""A one-broker cluster with SASL listeners beside its PLAINTEXT one, for the SASL tests.

The broker keeps the PLAINTEXT client listener and the CONTROLLER listener that
``LocalCluster`` expects (its readiness checks and the tests' own topic creation use
them) and adds two SASL_PLAINTEXT listeners:

- ``SASL_PLAINTEXT`` with PLAIN (GSSAPI listed beside it, logged and ignored; a module may
  enable others), users from its JAAS configuration, sessions that never expire;
- ``REAUTH`` with PLAIN and ``connections.max.reauth.ms`` = ``REAUTH_MS``: connections must
  re-authenticate (KIP-368) or be closed.

Both lower ``sasl.server.max.receive.size`` to ``MAX_RECEIVE`` so that an oversized frame
is cheap to send.
"""

from __future__ import annotations

import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.integration.cluster import TestCluster
from tools.cluster import ClusterLayout, LocalCluster
from tools.zookeeper_server import ZooKeeperServer, free_port

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    + " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    + ";"
)
REAUTH_MS = 1500
MAX_RECEIVE = 65536
DELAY_MS = 200


class SaslCluster(TestCluster):
    __test__ = False

    def __init__(self, local: LocalCluster, zk_connect: str, sasl_port: int, reauth_port: int):
        super().__init__(local, zk_connect)
        self.sasl_port = sasl_port
        self.reauth_port = reauth_port

    def sample(self, name: str, **labels: str) -> float:
        """The value of broker 0's sample ``name`` with exactly ``labels`` (0 if absent)."""
        with urllib.request.urlopen(self.layout.metrics_url(0), timeout=5) as response:
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and sample.labels == labels:
                    return float(sample.value)
        return 0.0


def start_sasl_cluster(
    zookeeper: ZooKeeperServer, directory: Path, mechanisms: str = "GSSAPI,PLAIN"
) -> Iterator[SaslCluster]:
    """The cluster; ``mechanisms`` are the SASL_PLAINTEXT listener's."""
    chroot = f"/cluster-{uuid.uuid4().hex[:10]}"
    zk_connect = zookeeper.connect_string + chroot
    client, control, metrics, sasl, reauth = (free_port() for _ in range(5))
    listeners = (
        f"PLAINTEXT://127.0.0.1:{client},CONTROLLER://127.0.0.1:{control},"
        f"SASL_PLAINTEXT://127.0.0.1:{sasl},REAUTH://127.0.0.1:{reauth}"
    )
    overrides = {
        "zookeeper.connect": zk_connect,
        "listeners": listeners,
        "advertised.listeners": listeners,
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "REAUTH:SASL_PLAINTEXT"
        ),
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": mechanisms,
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.reauth.plain.sasl.jaas.config": JAAS,
        "listener.name.reauth.connections.max.reauth.ms": str(REAUTH_MS),
        "sasl.server.max.receive.size": str(MAX_RECEIVE),
        "connection.failed.authentication.delay.ms": str(DELAY_MS),
    }
    layout = ClusterLayout(
        directory=directory,
        client_ports=(client,),
        control_ports=(control,),
        metrics_ports=(metrics,),
        zookeeper_connect=zk_connect,
        overrides=tuple(overrides.items()),
    )
    local = LocalCluster(layout)
    local.start(timeout_s=90)
    cluster = SaslCluster(local, zk_connect, sasl, reauth)
    try:
        yield cluster
    finally:
        cluster.close()
        local.stop(grace_s=30)
