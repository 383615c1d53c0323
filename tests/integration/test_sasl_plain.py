"""SASL/PLAIN on a real broker: Kafka's clients, Kafka's refusals, bad input, KIP-368.

One broker (tests.integration.sasl_cluster) with two SASL_PLAINTEXT listeners. Our
client authenticates with PLAIN on the first and is counted by principal (Kafka's
clients producing and consuming with PLAIN are test_security_clients.py's matrix); a
wrong password, an unknown user and an unsupported mechanism are refused with Kafka's
errors and nothing is served; before authentication
anything but ApiVersions/SaslHandshake/SaslAuthenticate, garbage and oversized frames
close the connection, and an exchange cut in the middle harms nobody else. On the second
listener sessions last ``REAUTH_MS``: confluent-kafka and our client re-authenticate and
keep working, and a connection that does not is closed at its first request after expiry.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest

import protocol
from client.connection import Connection, ConnectionConfig
from client.errors import AuthenticationFailed
from client.security import ClientSecurity, SaslCredentials
from protocol import ApiKey, ErrorCode
from protocol.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from protocol.sasl.plain import client_token
from tests.integration.sasl_cluster import (
    DELAY_MS,
    MAX_RECEIVE,
    REAUTH_MS,
    SaslCluster,
    start_sasl_cluster,
)
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(120)

TOPIC = "sasl-plain"


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SaslCluster]:
    for cluster in start_sasl_cluster(zookeeper, tmp_path_factory.mktemp("sasl")):
        topic = CreateTopicsRequest.CreatableTopic(
            name=TOPIC, num_partitions=4, replication_factor=1
        )
        body = CreateTopicsRequest(topics=[topic], timeout_ms=30_000, validate_only=False)
        response = cluster.request(0, ApiKey.CREATE_TOPICS, 7, body)
        assert [t.error_code for t in response.topics] == [ErrorCode.NONE]
        yield cluster


def sasl_config(
    user: str = "alice", password: str = "alice-secret", mechanism: str = "PLAIN"
) -> ConnectionConfig:
    security = ClientSecurity("SASL_PLAINTEXT", sasl=SaslCredentials(mechanism, user, password))
    return ConnectionConfig("sasl-test", 5.0, request_timeout_s=10.0, security=security)


def librdkafka(port: int, user: str = "alice", password: str = "alice-secret") -> dict[str, Any]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }


# --- raw frames ----------------------------------------------------------------------------


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return sock


def _send(sock: socket.socket, api_key: int, version: int, body: Any, cid: int = 1) -> None:
    frame = protocol.encode_request(protocol.make_request(api_key, version, cid, "raw", body))
    sock.sendall(struct.pack(">i", len(frame)) + frame)


def _read_frame(sock: socket.socket) -> bytes | None:
    """The next response frame, or None when the broker closed the connection."""
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    return _read_exactly(sock, struct.unpack(">i", head)[0])


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _closed_unanswered(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def _metadata_works(c: SaslCluster) -> bool:
    async def probe() -> bool:
        conn = await Connection.open("127.0.0.1", c.sasl_port, sasl_config())
        try:
            body = await conn.request(ApiKey.METADATA, MetadataRequest(topics=None))
            return any(t.name == TOPIC for t in body.topics)
        finally:
            conn.close()

    return asyncio.run(probe())


# --- our client -----------------------------------------------------------------------------


def test_our_client_authenticates_and_is_counted_by_principal(c: SaslCluster) -> None:
    async def run() -> None:
        conn = await Connection.open("127.0.0.1", c.sasl_port, sasl_config())
        try:
            body = await conn.request(ApiKey.METADATA, MetadataRequest(topics=None))
            assert any(t.name == TOPIC for t in body.topics)
            connections = c.sample(
                "minikafka_connections_by_principal",
                listener="SASL_PLAINTEXT",
                principal="User:alice",
            )
            assert connections >= 1
        finally:
            conn.close()

    asyncio.run(run())
    name = "minikafka_sasl_authentications_total"
    assert c.sample(name, listener="SASL_PLAINTEXT", mechanism="PLAIN", result="success") >= 1


# --- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "password", "mechanism", "code", "message"),
    [
        ("alice", "wrong", "PLAIN", ErrorCode.SASL_AUTHENTICATION_FAILED,
         "Authentication failed: Invalid username or password"),
        ("mallory", "x", "PLAIN", ErrorCode.SASL_AUTHENTICATION_FAILED,
         "Authentication failed: Invalid username or password"),
        ("alice", "alice-secret", "SCRAM-SHA-256", ErrorCode.UNSUPPORTED_SASL_MECHANISM,
         "it enables PLAIN"),
    ],
)  # fmt: skip
def test_refused_with_kafkas_errors(
    c: SaslCluster, user: str, password: str, mechanism: str, code: int, message: str
) -> None:
    async def run() -> None:
        started = time.monotonic()
        with pytest.raises(AuthenticationFailed, match=message) as refused:
            await Connection.open("127.0.0.1", c.sasl_port, sasl_config(user, password, mechanism))
        assert refused.value.error_code == code
        # the refusal waited connection.failed.authentication.delay.ms
        assert time.monotonic() - started >= DELAY_MS / 1000 * 0.9

    asyncio.run(run())


def test_confluent_kafka_wrong_password_is_an_authentication_error(c: SaslCluster) -> None:
    from confluent_kafka import KafkaError, Producer

    errors: list[Any] = []
    producer = Producer({**librdkafka(c.sasl_port, password="wrong"), "error_cb": errors.append})
    producer.produce(TOPIC, value=b"never", partition=0)

    def refused() -> bool:
        producer.poll(0.1)
        return any(e.code() == KafkaError._AUTHENTICATION for e in errors)

    wait_until(refused, 20, "librdkafka's authentication error")
    assert any("Invalid username or password" in e.str() for e in errors)
    assert producer.flush(0) == 1  # nothing was served


def test_nothing_but_sasl_before_authentication(c: SaslCluster) -> None:
    with _connect(c.sasl_port) as sock:
        _send(sock, ApiKey.METADATA, 12, MetadataRequest(topics=None))
        assert _closed_unanswered(sock)
    with _connect(c.sasl_port) as sock:  # ApiVersions is served, then the handshake must come
        _send(sock, ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
            client_software_name="raw", client_software_version="1"))  # fmt: skip
        frame = _read_frame(sock)
        assert frame is not None
        body = protocol.decode_response(frame, ApiKey.API_VERSIONS, 3).body
        advertised = {k.api_key for k in body.api_keys}
        assert {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE} <= advertised
        _send(sock, ApiKey.METADATA, 12, MetadataRequest(topics=None), cid=2)
        assert _closed_unanswered(sock)


def test_illegal_state_during_the_exchange(c: SaslCluster) -> None:
    with _connect(c.sasl_port) as sock:
        _send(sock, ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism="PLAIN"))
        assert _read_frame(sock) is not None
        _send(sock, ApiKey.API_VERSIONS, 3, ApiVersionsRequest(), cid=2)
        frame = _read_frame(sock)
        assert frame is not None
        body = protocol.decode_response(frame, ApiKey.API_VERSIONS, 0).body
        assert body.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert _closed_unanswered(sock)


def test_handshake_v0_flow_with_bare_tokens(c: SaslCluster) -> None:
    with _connect(c.sasl_port) as sock:
        _send(sock, ApiKey.SASL_HANDSHAKE, 0, SaslHandshakeRequest(mechanism="PLAIN"))
        frame = _read_frame(sock)
        assert frame is not None
        assert protocol.decode_response(frame, ApiKey.SASL_HANDSHAKE, 0).body.error_code == 0
        token = client_token("alice", "alice-secret")
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert _read_frame(sock) == b""  # PLAIN's empty answer, as a bare frame
        _send(sock, ApiKey.METADATA, 12, MetadataRequest(topics=None), cid=3)
        frame = _read_frame(sock)
        assert frame is not None
        body = protocol.decode_response(frame, ApiKey.METADATA, 12).body
        assert any(t.name == TOPIC for t in body.topics)


def test_garbage_oversized_and_cut_exchanges_harm_nobody_else(c: SaslCluster) -> None:
    with _connect(c.sasl_port) as sock:  # not a Kafka request at all
        sock.sendall(b"\x00\x00\x00\x10GET / HTTP/1.1\r\n")
        assert _closed_unanswered(sock)
    with _connect(c.sasl_port) as sock:  # above sasl.server.max.receive.size
        sock.sendall(struct.pack(">i", MAX_RECEIVE + 1) + b"x" * 1024)
        assert _closed_unanswered(sock)
    with _connect(c.sasl_port) as sock:  # a negative size
        sock.sendall(struct.pack(">i", -5))
        assert _closed_unanswered(sock)
    cut = _connect(c.sasl_port)  # an exchange cut in the middle
    _send(cut, ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism="PLAIN"))
    assert _read_frame(cut) is not None
    frame = protocol.encode_request(protocol.make_request(
        ApiKey.SASL_AUTHENTICATE, 2, 2, "raw",
        SaslAuthenticateRequest(auth_bytes=client_token("alice", "alice-secret"))))  # fmt: skip
    cut.sendall(struct.pack(">i", len(frame)) + frame[: len(frame) // 2])
    cut.close()
    assert _metadata_works(c)
    assert c.is_running(0)


# --- KIP-368 re-authentication ------------------------------------------------------------


def _reauth_successes(c: SaslCluster) -> float:
    name = "minikafka_sasl_reauthentications_total"
    return c.sample(name, listener="REAUTH", mechanism="PLAIN", result="success")


def test_confluent_kafka_reauthenticates(c: SaslCluster) -> None:
    from confluent_kafka import Producer

    before = _reauth_successes(c)
    errors: list[Any] = []
    producer = Producer({**librdkafka(c.reauth_port), "error_cb": errors.append, "linger.ms": 0})
    delivered: list[Any] = []
    started = time.monotonic()
    i = 0
    # keep producing across more than two session lifetimes
    while time.monotonic() - started < 2.5 * REAUTH_MS / 1000:
        producer.produce(TOPIC, value=f"re-{i}".encode(), partition=0,
                         on_delivery=lambda err, msg: delivered.append(err))  # fmt: skip
        i += 1
        producer.flush(5)
    assert producer.flush(10) == 0
    assert len(delivered) == i and all(err is None for err in delivered)
    assert _reauth_successes(c) >= before + 1
    assert not [e for e in errors if "auth" in e.str().lower()]


def test_our_client_reauthenticates_and_keeps_its_connection(c: SaslCluster) -> None:
    async def run() -> None:
        conn = await Connection.open("127.0.0.1", c.reauth_port, sasl_config())
        try:
            assert conn.session_lifetime_ms == REAUTH_MS
            started = time.monotonic()

            async def keep_asking() -> int:
                answered = 0
                while time.monotonic() - started < 2.5 * REAUTH_MS / 1000:
                    body = await conn.request(ApiKey.METADATA, MetadataRequest(topics=None))
                    assert any(t.name == TOPIC for t in body.topics)
                    answered += 1
                    await asyncio.sleep(0.02)  # pacing the requests, not synchronising
                return answered

            # four tasks share the connection: requests made while it re-authenticates
            # wait for it, none fails
            counts = await asyncio.gather(*(keep_asking() for _ in range(4)))
            assert all(n > 10 for n in counts)
            assert not conn.closed
        finally:
            conn.close()

    before = _reauth_successes(c)
    asyncio.run(run())
    assert _reauth_successes(c) >= before + 2


def test_an_expired_session_is_closed_at_its_next_request(c: SaslCluster) -> None:
    with _connect(c.reauth_port) as sock:
        _send(sock, ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism="PLAIN"))
        assert _read_frame(sock) is not None
        token = SaslAuthenticateRequest(auth_bytes=client_token("alice", "alice-secret"))
        _send(sock, ApiKey.SASL_AUTHENTICATE, 1, token, cid=2)
        frame = _read_frame(sock)
        assert frame is not None
        body = protocol.decode_response(frame, ApiKey.SASL_AUTHENTICATE, 1).body
        assert body.error_code == 0 and body.session_lifetime_ms == REAUTH_MS
        authenticated_at = time.monotonic()
        _send(sock, ApiKey.METADATA, 12, MetadataRequest(topics=None), cid=3)
        assert _read_frame(sock) is not None  # served within the session
        # the behaviour under test is the passing of time: let the session run out
        wait_until(lambda: time.monotonic() - authenticated_at > REAUTH_MS / 1000 + 0.2,
                   5, "the session's end")  # fmt: skip
        _send(sock, ApiKey.METADATA, 12, MetadataRequest(topics=None), cid=4)
        assert _closed_unanswered(sock)
