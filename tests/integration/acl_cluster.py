"""A two-broker cluster with the authorizer on, for the ACL tests.

Each broker keeps the PLAINTEXT client listener and the CONTROLLER listener that
``LocalCluster`` expects (its readiness checks, the controller's channel and the
followers' fetches use them: their principal, ``User:ANONYMOUS``, is a super user here,
as a broker's own principal must be) and adds a ``SASL_PLAINTEXT`` listener with PLAIN
users ``admin`` (a super user), ``alice``, ``bob`` and ``carol``, who need ACLs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client.client import ClientConfig
from client.security import ClientSecurity, SaslCredentials
from tests.integration.cluster import TestCluster
from tools.cluster import ClusterLayout, LocalCluster
from tools.zookeeper_server import ZooKeeperServer, free_port

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "carol": "c-s"}
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    + " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    + ";"
)
BROKERS = 2


@dataclass(frozen=True)
class AclLayout(ClusterLayout):
    sasl_ports: tuple[int, ...] = ()

    def broker_properties(self, i: int) -> dict[str, str]:
        props = super().broker_properties(i)
        extra = f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_ports[i]}"
        props["listeners"] += "," + extra
        props["advertised.listeners"] += "," + extra
        props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        return props


class AclCluster(TestCluster):
    __test__ = False

    @property
    def sasl_bootstrap(self) -> str:
        assert isinstance(self.layout, AclLayout)
        return ",".join(f"127.0.0.1:{p}" for p in self.layout.sasl_ports)

    def sasl_port(self, i: int) -> int:
        assert isinstance(self.layout, AclLayout)
        return self.layout.sasl_ports[i]

    def librdkafka(self, user: str, broker: int | None = None) -> dict[str, Any]:
        servers = self.sasl_bootstrap if broker is None else f"127.0.0.1:{self.sasl_port(broker)}"
        return {
            "bootstrap.servers": servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": USERS[user],
        }

    def kafka_python(self, user: str) -> dict[str, Any]:
        return {
            "bootstrap_servers": self.sasl_bootstrap,
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": user,
            "sasl_plain_password": USERS[user],
        }

    def client_config(self, user: str) -> ClientConfig:
        security = ClientSecurity(
            "SASL_PLAINTEXT", sasl=SaslCredentials("PLAIN", user, USERS[user])
        )
        return ClientConfig(client_id=f"acl-test-{user}", security=security)

    def command_config(self, directory: Path, user: str) -> Path:
        path = directory / f"{user}.properties"
        path.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="{user}" password="{USERS[user]}";\n'
        )
        return path


def start_acl_cluster(zookeeper: ZooKeeperServer, directory: Path) -> Iterator[AclCluster]:
    chroot = f"/cluster-{uuid.uuid4().hex[:10]}"
    zk_connect = zookeeper.connect_string + chroot
    ports = [free_port() for _ in range(4 * BROKERS)]
    overrides = {
        "zookeeper.connect": zk_connect,
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
        "offsets.topic.num.partitions": "4",
        # __transaction_state on two brokers (Kafka's default of 3 replicas would not fit)
        "transaction.state.log.replication.factor": "2",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "4",
    }
    layout = AclLayout(
        directory=directory,
        client_ports=tuple(ports[0:BROKERS]),
        control_ports=tuple(ports[BROKERS : 2 * BROKERS]),
        metrics_ports=tuple(ports[2 * BROKERS : 3 * BROKERS]),
        zookeeper_connect=zk_connect,
        overrides=tuple(overrides.items()),
        sasl_ports=tuple(ports[3 * BROKERS :]),
    )
    local = LocalCluster(layout)
    local.start(timeout_s=90)
    cluster = AclCluster(local, zk_connect)
    try:
        yield cluster
    finally:
        cluster.close()
        local.stop(grace_s=30)
