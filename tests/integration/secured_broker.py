"""One broker with secured listeners beside PLAINTEXT and CONTROLLER, for client tests.

``start_secured_broker`` makes a local CA and the broker's PEM key store, starts one
broker under a fresh ZooKeeper chroot with the given security listeners (each named after
its security protocol), the CA as trust store and the caller's listener settings, creates
one topic, and stops it all after. ``prepare`` runs with the chroot's connect string before
the broker starts (to write SCRAM credentials it reads at start-up).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from protocol import ApiKey, ErrorCode
from protocol.messages import CreateTopicsRequest
from tests.integration.cluster import TestCluster
from tools.certificates import CertificateAuthority
from tools.cluster import ClusterLayout, LocalCluster
from tools.zookeeper_server import ZooKeeperServer, free_port


@dataclass
class SecuredBroker:
    cluster: TestCluster
    #: listener name (and "metrics") -> port
    ports: dict[str, int]
    ca: CertificateAuthority
    #: the CA's certificate, the clients' trust store
    ca_path: Path


def start_secured_broker(
    zookeeper: ZooKeeperServer,
    directory: Path,
    secured: tuple[str, ...],
    settings: dict[str, str],
    topic: str,
    partitions: int,
    prepare: Callable[[str], None],
) -> Iterator[SecuredBroker]:
    ca = CertificateAuthority()
    ca_path = directory / "ca.pem"
    ca_path.write_bytes(ca.cert_pem)
    keystore = directory / "broker.pem"
    keystore.write_bytes(ca.issue("broker", hosts=["127.0.0.1", "localhost"]).keystore_pem)
    zk_connect = f"{zookeeper.connect_string}/{directory.name}-{uuid.uuid4().hex[:10]}"
    prepare(zk_connect)
    names = ("PLAINTEXT", "CONTROLLER", *secured)
    ports = {name: free_port() for name in (*names, "metrics")}
    listeners = ",".join(f"{name}://127.0.0.1:{ports[name]}" for name in names)
    overrides = {
        "zookeeper.connect": zk_connect,
        "listeners": listeners,
        "advertised.listeners": listeners,
        "listener.security.protocol.map": ",".join(
            f"{name}:{'PLAINTEXT' if name == 'CONTROLLER' else name}" for name in names
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_path),
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.num.partitions": "1",
        **settings,
    }
    layout = ClusterLayout(
        directory=directory,
        client_ports=(ports["PLAINTEXT"],),
        control_ports=(ports["CONTROLLER"],),
        metrics_ports=(ports["metrics"],),
        zookeeper_connect=zk_connect,
        overrides=tuple(overrides.items()),
    )
    local = LocalCluster(layout)
    local.start(timeout_s=60)
    cluster = TestCluster(local, zk_connect)
    try:
        creatable = CreateTopicsRequest.CreatableTopic(
            name=topic, num_partitions=partitions, replication_factor=1
        )
        body = CreateTopicsRequest(topics=[creatable], timeout_ms=30_000, validate_only=False)
        response = cluster.request(0, ApiKey.CREATE_TOPICS, 7, body)
        assert [t.error_code for t in response.topics] == [ErrorCode.NONE]
        yield SecuredBroker(cluster, ports, ca, ca_path)
    finally:
        cluster.close()
        local.stop(grace_s=30)
