"""Kafka's clients speak SCRAM-SHA-256/512 with our server side of the exchange.

Until brokers keep SCRAM credentials from ZooKeeper, the exchange is checked against the
real network layer in process: a SocketServer with a SASL_PLAINTEXT listener whose
credentials come from an in-memory lookup, and a handler that answers ApiVersions (with
the SASL APIs, which clients look for) and Metadata (this one broker, no topic). That is
all confluent-kafka (librdkafka), kafka-python and aiokafka need to authenticate and list
the cluster; a wrong password comes back to each as its own authentication error.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import protocol
from broker.metrics import BrokerMetrics
from broker.network import Codec, Request, SocketServer
from protocol import ApiKey, ErrorCode
from protocol.messages import ApiVersionsResponse, MetadataResponse
from tests.integration.network_stub import network_settings
from tests.integration.test_sasl_scram_network import LISTENER, _factory
from tests.polling import wait_until
from tests.unit.broker.memory_scram_credentials import MemoryScramCredentials
from zk.model import EndPoint

pytestmark = pytest.mark.timeout(90)

#: what the handler advertises: enough for a client to authenticate and ask for metadata
ADVERTISED = {
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.METADATA: (1, 12),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
}


class Served:
    """The server on a loop of its own thread, so that blocking clients can use it."""

    def __init__(self) -> None:
        self.store = MemoryScramCredentials()
        self.store.add("SCRAM-SHA-256", "alice", "alice-secret")
        self.store.add("SCRAM-SHA-512", "alice", "alice-secret")
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = 0
        self.server = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)

    async def _handle(self, request: Request) -> Any:
        if request.api_key == ApiKey.METADATA:
            broker = MetadataResponse.MetadataResponseBroker(
                node_id=0, host="127.0.0.1", port=self.port, rack=None
            )
            body: Any = MetadataResponse(
                brokers=[broker], cluster_id="scram", controller_id=0, topics=[]
            )
        else:
            keys = [
                ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in sorted(ADVERTISED.items())
            ]
            body = ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=keys)
        return protocol.make_response(request.header, body)

    async def _start(self) -> SocketServer:
        metrics = BrokerMetrics()
        server = SocketServer(
            network_settings(data_listeners=(EndPoint("127.0.0.1", 0, LISTENER, LISTENER),)),
            self._handle,
            codec=Codec.default(),
            metrics=metrics,
            authenticators={LISTENER: _factory(self.store, metrics)},
        )
        await server.start()
        self.port = server.bound_port(LISTENER)
        return server

    def refusals(self, mechanism: str) -> float:
        """Failed authentications counted by the server for ``mechanism``."""
        value = self.server.metrics.registry.get_sample_value(
            "minikafka_sasl_authentications_total",
            {"listener": LISTENER, "mechanism": mechanism, "result": "failure"},
        )
        return value or 0.0

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(timeout_s=5), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    s = Served()
    try:
        yield s
    finally:
        s.close()


MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka(served: Served, mechanism: str) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[Any] = []

    def admin(password: str) -> AdminClient:
        config: dict[str, Any] = {
            "bootstrap.servers": f"127.0.0.1:{served.port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": "alice",
            "sasl.password": password,
            "error_cb": errors.append,
            "log_level": 0,
        }
        return AdminClient(config)

    metadata = admin("alice-secret").list_topics(timeout=10)
    assert metadata.cluster_id == "scram" and list(metadata.brokers) == [0]
    assert errors == []
    refused = admin("wrong")
    with pytest.raises(KafkaException):
        refused.list_topics(timeout=2)

    def refusals() -> list[Any]:
        refused.poll(0.1)  # error callbacks are served by poll
        return [e for e in errors if e.code() == KafkaError._AUTHENTICATION]

    first = wait_until(refusals, 10, "librdkafka's authentication error")[0]
    assert f"invalid credentials with SASL mechanism {mechanism}" in first.str()


REFUSED = "Authentication failed during authentication due to invalid credentials"


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python(served: Served, mechanism: str, caplog: pytest.LogCaptureFixture) -> None:
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    def consumer(password: str) -> KafkaConsumer:
        return KafkaConsumer(
            bootstrap_servers=f"127.0.0.1:{served.port}",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_plain_username="alice",
            sasl_plain_password=password,
            bootstrap_timeout_ms=3000,  # a refused bootstrap gives up soon
        )

    c = consumer("alice-secret")
    try:
        assert c.topics() == set()
    finally:
        c.close()
    before = served.refusals(mechanism)
    with pytest.raises(KafkaError):  # it gives up bootstrapping
        consumer("wrong").topics()
    assert served.refusals(mechanism) > before  # because the server refused its proof


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka(served: Served, mechanism: str) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaError

    async def topics(password: str) -> set[str]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=f"127.0.0.1:{served.port}",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_plain_username="alice",
            sasl_plain_password=password,
        )
        try:
            await consumer.start()
            return set(await consumer.topics())
        finally:
            await consumer.stop()

    assert asyncio.run(topics("alice-secret")) == set()
    before = served.refusals(mechanism)
    with pytest.raises(KafkaError):  # it cannot bootstrap
        asyncio.run(topics("wrong"))
    assert served.refusals(mechanism) > before  # because the server refused its proof
