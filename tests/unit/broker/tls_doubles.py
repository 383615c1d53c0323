"""Certificates and an in-memory TLS client for the TLS unit tests."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from pathlib import Path

from broker.config.keys import BROKER_CONFIG_DEFS
from broker.config.listener_config import ListenerConfig
from broker.network.tls_transport import PlaintextBuffer, TlsSession
from config.definitions import typed_values
from tools.certificates import CertificateAuthority, IssuedCertificate


def listener(props: Mapping[str, str], name: str = "SECURE") -> ListenerConfig:
    """A listener's view of ``props`` (no other check of the broker's configuration)."""
    plain = {k: v for k, v in props.items() if k in BROKER_CONFIG_DEFS}
    return ListenerConfig(name, "SSL", dict(props), typed_values(BROKER_CONFIG_DEFS, plain))


def pem_listener(directory: Path, ca: CertificateAuthority, **extra: str) -> ListenerConfig:
    """A listener with a PEM key store file for 127.0.0.1 and ``ca`` as trust store."""
    keystore, truststore = write_stores(directory, ca, ca.issue("broker", hosts=["127.0.0.1"]))
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(truststore),
        **extra,
    }
    return listener(props)


def write_stores(
    directory: Path, ca: CertificateAuthority, issued: IssuedCertificate
) -> tuple[Path, Path]:
    keystore, truststore = directory / "broker.pem", directory / "ca.pem"
    keystore.write_bytes(issued.keystore_pem)
    truststore.write_bytes(ca.cert_pem)
    return keystore, truststore


def client_context(
    ca: CertificateAuthority, cert: IssuedCertificate | None, directory: Path
) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    if cert is not None:
        path = directory / "client.pem"
        path.write_bytes(cert.keystore_pem)
        context.load_cert_chain(path)
    return context


class MemoryClient:
    """A TLS client on memory BIOs, talking to a server ``TlsSession`` whose ciphertext
    goes through a real socket pair (so that its backlog meets a real socket)."""

    def __init__(self, context: ssl.SSLContext, server: TlsSession) -> None:
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self.obj = context.wrap_bio(self._in, self._out, server_hostname="127.0.0.1")
        self.server = server
        self.server_sock, self.client_sock = socket.socketpair()
        self.server_sock.setblocking(False)
        self.client_sock.setblocking(False)
        self.received = bytearray()  # plaintext the server sent
        self.delivered = bytearray()  # plaintext the server's receive returned

    def close(self) -> None:
        self.server_sock.close()
        self.client_sock.close()

    def step(self) -> bool:
        """Move what can move once: client ciphertext into the server session, the
        session's backlog through the socket pair to the client. Whether anything moved."""
        moved = False
        data = self._out.read()
        if data:
            self.delivered += self.server.receive(data)
            moved = True
        self.server.flush(self.server_sock)
        while True:
            try:
                chunk = self.client_sock.recv(1 << 20)
            except BlockingIOError:
                break
            if not chunk:
                break
            self._in.write(chunk)
            moved = True
        return moved

    def pump(self) -> None:
        """Step until nothing moves, then read the plaintext the client got."""
        for _ in range(10_000):
            if not self.step():
                break
        else:
            raise AssertionError("the exchange did not settle")
        while True:
            try:
                chunk = self.obj.read(1 << 20)
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                return
            if not chunk:
                return
            self.received += chunk

    def handshake(self) -> None:
        for _ in range(100):
            try:
                self.obj.do_handshake()
            except ssl.SSLWantReadError:
                if not self.step():
                    raise AssertionError("the handshake is stuck") from None
            else:
                self.pump()
                return
        raise AssertionError("the handshake did not finish")

    def send(self, data: bytes) -> None:
        self.obj.write(data)


def server_session(context: ssl.SSLContext) -> TlsSession:
    return TlsSession(context, 0.0, PlaintextBuffer())
