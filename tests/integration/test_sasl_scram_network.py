"""SCRAM-SHA-256/512 end to end through the real network layer, in process.

A SocketServer with one SASL_PLAINTEXT listener whose authenticators take SCRAM
credentials from an in-memory lookup (the broker's own reads ZooKeeper), and a stub
handler that records the principal each request carries. Our client authenticates over
real sockets, on uvloop and on plain asyncio: the exchange runs in the network layer,
every request that reaches the handler after it carries ``User:<name>``, and a wrong
password is refused with Kafka's message hiding the reason.
"""

from __future__ import annotations

from typing import Any

import pytest

import protocol
from broker.metrics import BrokerMetrics
from broker.network import Codec, Request, SocketServer
from broker.security.principal import KafkaPrincipal
from broker.security.sasl_authenticator import SaslListenerSettings
from broker.security.sasl_listener import SaslAuthenticatorFactory
from client.connection import Connection, ConnectionConfig
from client.errors import AuthenticationFailed
from client.security import ClientSecurity, SaslCredentials
from protocol import ApiKey, ErrorCode
from protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from protocol.sasl.scram import SCRAM_MECHANISMS
from protocol.sasl.scram_exchange import ScramServer
from tests.integration.network_stub import LOOPS, in_loop, network_settings
from tests.unit.broker.memory_scram_credentials import MemoryScramCredentials
from zk.model import EndPoint

pytestmark = pytest.mark.timeout(60)

LISTENER = "SASL_PLAINTEXT"


def _factory(store: MemoryScramCredentials, metrics: BrokerMetrics) -> SaslAuthenticatorFactory:
    def maker(name: str) -> Any:
        mechanism = SCRAM_MECHANISMS[name]
        return lambda: ScramServer(mechanism, lambda u: store.scram_credential(name, u))

    settings = SaslListenerSettings(
        LISTENER,
        {name: maker(name) for name in SCRAM_MECHANISMS},
        reauth_ms=0,
        failure_delay_s=0.05,
        max_receive_size=4096,
    )
    return SaslAuthenticatorFactory(settings, metrics)


async def _serve(store: MemoryScramCredentials, seen: list[KafkaPrincipal]) -> SocketServer:
    async def handler(request: Request) -> Any:
        seen.append(request.principal)
        body = ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=[])
        return protocol.make_response(request.header, body)

    metrics = BrokerMetrics()
    server = SocketServer(
        network_settings(data_listeners=(EndPoint("127.0.0.1", 0, LISTENER, LISTENER),)),
        handler,
        codec=Codec.default(),
        metrics=metrics,
        authenticators={LISTENER: _factory(store, metrics)},
    )
    await server.start()
    return server


def _config(mechanism: str, password: str) -> ConnectionConfig:
    credentials = SaslCredentials(mechanism, "alice", password)
    return ConnectionConfig(
        "scram-test", 5.0, request_timeout_s=5.0,
        security=ClientSecurity("SASL_PLAINTEXT", sasl=credentials),
    )  # fmt: skip


@pytest.mark.parametrize("kind", LOOPS)
@pytest.mark.parametrize("mechanism", sorted(SCRAM_MECHANISMS))
def test_scram_authenticates_and_requests_carry_the_principal(kind: str, mechanism: str) -> None:
    async def test() -> None:
        store = MemoryScramCredentials()
        store.add(mechanism, "alice", "alice-secret")
        seen: list[KafkaPrincipal] = []
        server = await _serve(store, seen)
        try:
            port = server.bound_port(LISTENER)
            conn = await Connection.open("127.0.0.1", port, _config(mechanism, "alice-secret"))
            try:
                # larger than sasl.server.max.receive.size (4096): taken once authenticated
                big = ApiVersionsRequest(client_software_name="x" * 10_000)
                await conn.request(ApiKey.API_VERSIONS, big, version=3)
            finally:
                conn.close()
            # ApiVersions before authentication is anonymous, the request after is alice's
            assert seen[0] == KafkaPrincipal.user("ANONYMOUS")
            assert seen[-1] == KafkaPrincipal.user("alice")
            ok = server.metrics.registry.get_sample_value(
                "minikafka_sasl_authentications_total",
                {"listener": LISTENER, "mechanism": mechanism, "result": "success"},
            )
            assert ok == 1
        finally:
            await server.stop(timeout_s=5)

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_scram_wrong_password_is_refused_hiding_the_reason(kind: str) -> None:
    async def test() -> None:
        store = MemoryScramCredentials()
        store.add("SCRAM-SHA-512", "alice", "alice-secret")
        seen: list[KafkaPrincipal] = []
        server = await _serve(store, seen)
        try:
            port = server.bound_port(LISTENER)
            with pytest.raises(AuthenticationFailed) as refused:
                await Connection.open("127.0.0.1", port, _config("SCRAM-SHA-512", "guess"))
            assert refused.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert str(refused.value).endswith(
                "Authentication failed during authentication due to invalid credentials "
                "with SASL mechanism SCRAM-SHA-512"
            )
            # only the ApiVersions before the exchange reached the handler
            assert seen == [KafkaPrincipal.user("ANONYMOUS")]
        finally:
            await server.stop(timeout_s=5)

    in_loop(kind, test)
