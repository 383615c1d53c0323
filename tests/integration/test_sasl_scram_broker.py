"""SCRAM-SHA-256/512 on a real broker, with credentials kept in ZooKeeper.

The broker's SASL_PLAINTEXT listener enables PLAIN and both SCRAM mechanisms; its SCRAM
credentials come from the broker's credential cache (``broker.security.credential_cache``,
fed from /config/users). A user added with ``minikafka configs --entity-type users``
logs in with our client, confluent-kafka and kafka-python; the mechanism deleted is
refused from then on while the other still works. Skipped where the broker has no
credential cache.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from client.connection import Connection, ConnectionConfig
from client.errors import AuthenticationFailed
from client.security import ClientSecurity, SaslCredentials
from protocol import ApiKey, ErrorCode
from protocol.messages import CreateTopicsRequest, MetadataRequest
from tests.integration.sasl_cluster import SaslCluster, start_sasl_cluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytest.importorskip("broker.security.credential_cache")
pytestmark = pytest.mark.timeout(120)

TOPIC = "sasl-scram"


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SaslCluster]:
    directory = tmp_path_factory.mktemp("scram")
    mechanisms = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    for cluster in start_sasl_cluster(zookeeper, directory, mechanisms):
        topic = CreateTopicsRequest.CreatableTopic(
            name=TOPIC, num_partitions=1, replication_factor=1
        )
        body = CreateTopicsRequest(topics=[topic], timeout_ms=30_000, validate_only=False)
        response = cluster.request(0, ApiKey.CREATE_TOPICS, 7, body)
        assert [t.error_code for t in response.topics] == [ErrorCode.NONE]
        yield cluster


def configs(c: SaslCluster, *args: str) -> None:
    bootstrap = f"127.0.0.1:{c.layout.client_ports[0]}"
    cmd = [sys.executable, "-m", "tools.main", "configs", "--bootstrap-server", bootstrap,
           "--entity-type", "users", "--entity-name", "carol", "--alter", *args]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()


def login(c: SaslCluster, mechanism: str, password: str) -> bool:
    """Whether carol logs in (and is then served); AuthenticationFailed when refused."""
    credentials = SaslCredentials(mechanism, "carol", password)
    security = ClientSecurity("SASL_PLAINTEXT", sasl=credentials)
    config = ConnectionConfig("scram-test", 5.0, request_timeout_s=5.0, security=security)

    async def run() -> bool:
        conn = await Connection.open("127.0.0.1", c.sasl_port, config)
        try:
            body = await conn.request(ApiKey.METADATA, MetadataRequest(topics=None))
            return any(t.name == TOPIC for t in body.topics)
        finally:
            conn.close()

    return asyncio.run(run())


def refused(c: SaslCluster, mechanism: str, password: str) -> bool:
    try:
        login(c, mechanism, password)
    except AuthenticationFailed as exc:
        return exc.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    return False


def test_credentials_added_and_deleted_take_effect(c: SaslCluster) -> None:
    assert refused(c, "SCRAM-SHA-512", "carol-512")  # no such user yet
    added = "SCRAM-SHA-512=[iterations=4096,password=carol-512],SCRAM-SHA-256=[password=carol-256]"
    configs(c, "--add-config", added)
    assert wait_until(lambda: login(c, "SCRAM-SHA-512", "carol-512"), 10, "carol's login")
    assert login(c, "SCRAM-SHA-256", "carol-256")
    assert refused(c, "SCRAM-SHA-256", "carol-512")  # each mechanism its own password

    from confluent_kafka import Producer

    config: dict[str, Any] = {
        "bootstrap.servers": f"127.0.0.1:{c.sasl_port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "carol",
        "sasl.password": "carol-512",
    }
    producer = Producer(config)
    producer.produce(TOPIC, b"from librdkafka")
    assert producer.flush(20) == 0

    from kafka import KafkaProducer

    kafka_python = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{c.sasl_port}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="carol",
        sasl_plain_password="carol-256",
    )
    kafka_python.send(TOPIC, b"from kafka-python").get(timeout=20)
    kafka_python.close()

    configs(c, "--delete-config", "SCRAM-SHA-512")
    wait_until(lambda: refused(c, "SCRAM-SHA-512", "carol-512"), 10, "the deletion")
    assert login(c, "SCRAM-SHA-256", "carol-256")
