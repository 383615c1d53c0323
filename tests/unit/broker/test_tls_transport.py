"""TlsSession and ResponseSend.write_tls against an in-memory TLS client (real OpenSSL on
both ends, a real socket pair between them)."""

from __future__ import annotations

import os
import ssl
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.network.send import ResponseSend
from broker.network.tls_transport import HIGH_WATER, ListenerTls
from broker.security.principal import ANONYMOUS, KafkaPrincipal
from broker.security.principal_mapping import parse_rules
from broker.security.tls import listener_context
from tests.unit.broker.tls_doubles import (
    MemoryClient,
    client_context,
    pem_listener,
    server_session,
)
from tools.certificates import CertificateAuthority


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority()


@pytest.fixture
def server_context(ca: CertificateAuthority, tmp_path: Path) -> ssl.SSLContext:
    return listener_context(pem_listener(tmp_path, ca, **{"ssl.client.auth": "requested"}))


@pytest.fixture
def client(
    ca: CertificateAuthority, server_context: ssl.SSLContext, tmp_path: Path
) -> Iterator[MemoryClient]:
    peer = MemoryClient(client_context(ca, None, tmp_path), server_session(server_context))
    yield peer
    peer.close()


def test_nothing_is_served_before_the_handshake_completes(client: MemoryClient) -> None:
    hello = client.obj
    with pytest.raises(ssl.SSLWantReadError):
        hello.do_handshake()
    client.step()  # the ClientHello reached the server; its answer went back
    assert not client.server.handshake_done
    assert client.delivered == b""
    client.handshake()
    assert client.server.handshake_done
    client.send(b"request-1")
    client.pump()
    assert client.delivered == b"request-1"


def test_a_request_right_behind_the_finished_message_comes_out_with_it(
    client: MemoryClient,
) -> None:
    with pytest.raises(ssl.SSLWantReadError):
        client.obj.do_handshake()
    client.step()
    client.obj.do_handshake()  # TLS 1.3: the client is done once it read the server's flight
    client.send(b"first request")
    assert not client.server.handshake_done
    client.pump()  # Finished and the request arrive in one read
    assert client.server.handshake_done
    assert client.delivered == b"first request"


def test_tls13_session_tickets_are_written_after_the_handshake(client: MemoryClient) -> None:
    client.handshake()
    assert client.obj.version() == "TLSv1.3"
    assert client.server.pending == 0  # the tickets went out with the pump
    assert client.received == b""  # and were no application data


def test_a_garbage_client_hello_fails_the_handshake(server_context: ssl.SSLContext) -> None:
    session = server_session(server_context)
    with pytest.raises(ssl.SSLError):
        session.receive(b"\x00\x00\x00\x10not a TLS record at all" * 4)
    assert not session.handshake_done


def test_close_notify_marks_the_peer_closed(client: MemoryClient) -> None:
    client.handshake()
    with pytest.raises(ssl.SSLWantReadError):
        client.obj.unwrap()
    client.pump()
    assert client.server.peer_closed


def test_principal_from_the_client_certificate(
    ca: CertificateAuthority, server_context: ssl.SSLContext, tmp_path: Path
) -> None:
    rules = parse_rules("RULE:^CN=([a-zA-Z]*)$/$1@acme/L,DEFAULT")
    tls = ListenerTls("SECURE", server_context, rules)
    cert = ca.issue("Alice", client=True)
    peer = MemoryClient(client_context(ca, cert, tmp_path), tls.session(0.0))
    try:
        peer.handshake()
        assert tls.principal(peer.server) == KafkaPrincipal.user("alice@acme")
    finally:
        peer.close()
    anonymous = MemoryClient(client_context(ca, None, tmp_path), tls.session(0.0))
    try:
        anonymous.handshake()
        assert tls.principal(anonymous.server) == ANONYMOUS
    finally:
        anonymous.close()


def test_write_tls_sends_bytes_and_file_regions_through_a_full_socket(
    client: MemoryClient, tmp_path: Path
) -> None:
    client.handshake()
    payload = os.urandom(3 * 1024 * 1024 + 17)
    path = tmp_path / "segment"
    path.write_bytes(b"x" * 100 + payload + b"y" * 100)

    class Region:
        def __init__(self, fd: int) -> None:
            self.fd, self.position, self.length = fd, 100, len(payload)

    with open(path, "rb") as segment:
        send = ResponseSend([b"header", Region(segment.fileno()), b"trailer"])
        stalls = 0
        while not send.write_tls(client.server, client.server_sock):
            stalls += 1
            # the socket is full: ciphertext waits in the backlog, bounded
            assert client.server.pending < HIGH_WATER + 64 * 1024 + 1024
            client.pump()
        client.pump()
    expected = struct.pack(">i", send.size) + b"header" + payload + b"trailer"
    assert stalls > 0  # the socket pair's buffer is far smaller than the response
    assert send.sent == send.size + 4  # the size prefix counts as sent, as in write()
    assert bytes(client.received) == expected
