"""TLS listeners on a real broker process: one broker with a PLAINTEXT listener and an SSL
listener that requires a client certificate (mTLS), certificates from a local CA made in
the module's directory.

- (producing and consuming over mTLS with every client library, and the principal
  mapped from each certificate, are test_security_clients.py's matrix)
- a client certificate from another CA is refused: the handshake fails and nothing is
  served (no response to a request sent behind it), and the failure is counted;
- a fetch over SSL (records read and encrypted) returns the same bytes as over PLAINTEXT
  (sendfile);
- bad clients stall nobody: a garbage ClientHello is closed, a TLS slow-loris and 500
  connections that never finish their handshake are closed after the handshake bound, all
  while a canary producer on the same SSL listener keeps getting acknowledgements;
- the listener's certificate is reloaded by IncrementalAlterConfigs without a restart, and
  a key store that does not load is refused with INVALID_REQUEST.

One broker for the module; every wait is a poll with a deadline.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from client.connection import ConnectionConfig, request_once
from client.security import ClientSecurity
from protocol import ApiKey
from protocol.messages import FetchRequest
from tests.integration.cluster import TestCluster
from tests.polling import wait_until
from tools.certificates import CertificateAuthority
from tools.cluster import ClusterLayout, LocalCluster
from tools.zookeeper_server import ZooKeeperServer, free_port

pytestmark = pytest.mark.timeout(120)

#: the handshake bound follows connections.max.idle.ms (below 10 s)
IDLE_MS = 3000
RULES = "RULE:^CN=([a-zA-Z0-9]*)$/$1/L,DEFAULT"


@dataclass
class Secured:
    cluster: TestCluster
    ssl_port: int
    plain_port: int
    directory: Path
    ca: CertificateAuthority
    ca_path: Path
    client_cert: Path
    client_key: Path

    @property
    def ssl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.ssl_port}"

    def client_config(self) -> dict[str, str]:
        return {
            "bootstrap.servers": self.ssl_bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(self.ca_path),
            "ssl.certificate.location": str(self.client_cert),
            "ssl.key.location": str(self.client_key),
        }

    def client_context(self, ca: CertificateAuthority | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=(ca or self.ca).cert_pem.decode())
        context.load_cert_chain(self.client_cert, self.client_key)
        return context


@pytest.fixture(scope="module")
def s(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    directory = tmp_path_factory.mktemp("tls")
    ca = CertificateAuthority()
    keystore = directory / "broker.pem"
    keystore.write_bytes(ca.issue("broker", hosts=["127.0.0.1", "localhost"]).keystore_pem)
    ca_path = directory / "ca.pem"
    ca_path.write_bytes(ca.cert_pem)
    client_cert, client_key = ca.issue("Alice", client=True).write(directory, "alice")
    chroot = f"/tls-{uuid.uuid4().hex[:10]}"
    zk_connect = zookeeper.connect_string + chroot
    plain, control, metrics, secure = (free_port() for _ in range(4))
    listeners = (
        f"PLAINTEXT://127.0.0.1:{plain},CONTROLLER://127.0.0.1:{control},SSL://127.0.0.1:{secure}"
    )
    overrides = {
        "zookeeper.connect": zk_connect,
        "listeners": listeners,
        "advertised.listeners": listeners,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL",
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": str(keystore),
        "listener.name.ssl.ssl.truststore.type": "PEM",
        "listener.name.ssl.ssl.truststore.location": str(ca_path),
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.ssl.ssl.principal.mapping.rules": RULES,
        "connections.max.idle.ms": str(IDLE_MS),
        "num.partitions": "1",
    }
    layout = ClusterLayout(
        directory=directory,
        client_ports=(plain,),
        control_ports=(control,),
        metrics_ports=(metrics,),
        zookeeper_connect=zk_connect,
        overrides=tuple(overrides.items()),
    )
    local = LocalCluster(layout)
    local.start(timeout_s=60)
    cluster = TestCluster(local, zk_connect)
    try:
        yield Secured(cluster, secure, plain, directory, ca, ca_path, client_cert, client_key)
    finally:
        cluster.close()
        local.stop(grace_s=30)


def create_topic(s: Secured, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{s.plain_port}"})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=30)


def produce(config: dict[str, str], topic: str, values: list[bytes]) -> None:
    producer = Producer({**config, "acks": "all"})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def _failures(s: Secured) -> float:
    return s.cluster.metric(0, 'minikafka_tls_handshake_failures_total{listener="SSL"}') or 0


def _api_versions_frame() -> bytes:
    # ApiVersions v0: api_key 18, version 0, correlation id 7, client id "x"
    body = b"\x00\x12\x00\x00\x00\x00\x00\x07\x00\x01x"
    return len(body).to_bytes(4, "big") + body


def test_an_untrusted_client_certificate_is_refused_and_nothing_served(
    s: Secured, tmp_path: Path
) -> None:
    stranger = CertificateAuthority("someone else's CA")
    cert, key = stranger.issue("mallory", client=True).write(tmp_path, "mallory")
    context = ssl.create_default_context(cadata=s.ca.cert_pem.decode())
    context.load_cert_chain(cert, key)
    before = _failures(s)
    with socket.create_connection(("127.0.0.1", s.ssl_port), timeout=10) as raw:
        answer = b""
        try:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                # TLS 1.3: the client finishes first; the server refuses the certificate
                tls.sendall(_api_versions_frame())
                answer = tls.recv(1024)
        except (ssl.SSLError, ConnectionError):
            pass
        assert answer == b""  # no ApiVersions answer, only the refusal
    wait_until(lambda: _failures(s) > before, 10, "the failed handshake counted")


def test_fetch_over_tls_returns_the_bytes_of_the_plaintext_fetch(s: Secured) -> None:
    create_topic(s, "fetch-same")
    values = [bytes([i % 251]) * 1024 for i in range(3000)]  # ~3 MiB over many batches
    produce(
        {"bootstrap.servers": f"127.0.0.1:{s.plain_port}", "linger.ms": "5"}, "fetch-same", values
    )
    fetch = FetchRequest(
        max_wait_ms=0, min_bytes=1, max_bytes=64 << 20,
        topics=[FetchRequest.FetchTopic(
            topic="fetch-same",
            partitions=[FetchRequest.FetchPartition(partition=0, partition_max_bytes=64 << 20)],
        )],
    )  # fmt: skip

    def records(port: int, security: ClientSecurity) -> bytes:
        config = ConnectionConfig("tls-test", 10.0, security=security)
        response = asyncio.run(request_once("127.0.0.1", port, ApiKey.FETCH, 11, fetch, config))
        (partition,) = response.responses[0].partitions
        assert partition.error_code == 0
        return bytes(partition.records or b"")

    plain = records(s.plain_port, ClientSecurity())
    secured = records(s.ssl_port, ClientSecurity("SSL", s.client_context()))
    assert len(plain) > 3000 * 1024  # every record, in one answer
    assert secured == plain


class Canary:
    """A producer on the SSL listener, acknowledged record after record, timing each."""

    def __init__(self, s: Secured, topic: str) -> None:
        self._producer = Producer({**s.client_config(), "acks": "all", "linger.ms": "0"})
        self._topic = topic
        self.acked = 0
        self.slowest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self._producer.produce(self._topic, b"canary")
            assert self._producer.flush(10) == 0
            self.slowest = max(self.slowest, time.monotonic() - started)
            self.acked += 1
            self._stop.wait(0.05)

    def __enter__(self) -> Canary:
        self._thread.start()
        wait_until(lambda: self.acked > 0, 30, "the canary's first acknowledgement")
        self.slowest = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the broker closed ``sock`` (non-blocking); an alert before the end is read
    and skipped."""
    try:
        while sock.recv(4096):
            pass
    except BlockingIOError:
        return False
    except ConnectionError:
        return True
    return True


def test_bad_handshakes_stall_nobody(s: Secured) -> None:
    create_topic(s, "canary")
    before = _failures(s)
    with Canary(s, "canary") as canary:
        garbage = socket.create_connection(("127.0.0.1", s.ssl_port))
        garbage.sendall(b"\x16\x03\x01\x00\x20" + b"\xff" * 32)  # a handshake record of junk
        garbage.setblocking(False)
        wait_until(lambda: _closed_by_peer(garbage), 5, "the garbage ClientHello closed")
        garbage.close()
        silent = [socket.create_connection(("127.0.0.1", s.ssl_port)) for _ in range(500)]
        loris = socket.create_connection(("127.0.0.1", s.ssl_port))
        hello = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64
        for sock in (loris, *silent):
            sock.setblocking(False)
        acked_at_start = canary.acked
        sent = 0
        deadline = time.monotonic() + IDLE_MS / 1000 + 10
        while time.monotonic() < deadline:
            if sent < len(hello):  # one byte every 100 ms: never a whole ClientHello
                try:
                    loris.send(hello[sent : sent + 1])
                    sent += 1
                except OSError:
                    pass
            if all(_closed_by_peer(x) for x in [loris, *silent]):
                break
            time.sleep(0.1)  # the slow-loris's pace, not a synchronisation
        closed = [sock for sock in [loris, *silent] if _closed_by_peer(sock)]
        assert len(closed) == 501, "every never-finishing handshake is closed by its bound"
        for sock in (loris, *silent):
            sock.close()
        wait_until(lambda: canary.acked > acked_at_start + 20, 30, "the canary to keep producing")
    assert canary.slowest < 2.0, f"an acknowledgement took {canary.slowest:.1f}s"
    assert _failures(s) >= before + 502


def test_certificate_reloaded_by_alter_configs(s: Secured, tmp_path: Path) -> None:
    renewed_ca = CertificateAuthority("renewed CA")
    keystore = tmp_path / "renewed.pem"
    keystore.write_bytes(renewed_ca.issue("broker", hosts=["127.0.0.1"]).keystore_pem)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{s.plain_port}"})
    key = "listener.name.ssl.ssl.keystore.location"

    def alter(value: str) -> None:
        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource("BROKER", "0", incremental_configs=[entry])
        admin.incremental_alter_configs([resource])[resource].result(timeout=30)

    def handshake(ca: CertificateAuthority) -> bool:
        try:
            context = s.client_context(ca)
            with (
                socket.create_connection(("127.0.0.1", s.ssl_port), timeout=10) as raw,
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
            ):
                tls.sendall(_api_versions_frame())
                return len(tls.recv(4)) == 4
        except ssl.SSLCertVerificationError:
            return False

    assert handshake(s.ca) and not handshake(renewed_ca)
    with pytest.raises(KafkaException) as refused:
        alter(str(tmp_path / "absent.pem"))
    error = refused.value.args[0]
    assert error.code() == KafkaError.INVALID_REQUEST
    assert key in error.str() and "cannot load the key store" in error.str()
    assert handshake(s.ca)  # the refused change left the listener alone
    alter(str(keystore))
    # the broker's certificate now chains to the renewed CA (client auth is unchanged)
    wait_until(lambda: handshake(renewed_ca), 15, "the renewed certificate served")
    assert not handshake(s.ca)
