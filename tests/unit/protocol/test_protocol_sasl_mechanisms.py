"""PLAIN and SCRAM as sans-IO exchanges: RFC 7677's example, round trips, refusals."""

from __future__ import annotations

import base64
import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.sasl.errors import SaslAuthenticationFailed, SaslError, SaslInvalidCredentials
from protocol.sasl.plain import PlainServer, client_token, parse_token
from protocol.sasl.scram import SCRAM_SHA_256, SCRAM_SHA_512, ScramCredential
from protocol.sasl.scram_exchange import (
    ClientFirst,
    ScramClient,
    ScramServer,
    ServerState,
    escape_username,
    unescape_saslname,
)

# RFC 7677, section 3: user "user", password "pencil"
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _rfc_credential() -> ScramCredential:
    return SCRAM_SHA_256.credential("pencil", 4096, salt=RFC_SALT)


def test_rfc7677_server_side() -> None:
    server = ScramServer(
        SCRAM_SHA_256, {"user": _rfc_credential()}.get, nonce=lambda: RFC_SERVER_NONCE
    )
    assert server.respond(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert server.respond(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete and server.username == "user"


def test_rfc7677_client_side() -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    assert client.first() == RFC_CLIENT_FIRST
    assert client.respond(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert client.respond(RFC_SERVER_FINAL) == b""
    assert client.complete


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
@pytest.mark.parametrize("username", ["alice", "a=b,c", "ünïcode"])
def test_scram_round_trip(mechanism: object, username: str) -> None:
    assert mechanism in (SCRAM_SHA_256, SCRAM_SHA_512)
    m = SCRAM_SHA_256 if mechanism is SCRAM_SHA_256 else SCRAM_SHA_512
    store = {username: m.credential("s3cret", 4096)}
    server = ScramServer(m, store.get)
    client = ScramClient(m, username, "s3cret")
    final = server.respond(client.respond(server.respond(client.first())))
    assert client.respond(final) == b""
    assert server.complete and client.complete
    assert server.username == username


def _run_until_final(server: ScramServer, client: ScramClient) -> bytes:
    return client.respond(server.respond(client.first()))


def test_scram_wrong_password_is_invalid_credentials() -> None:
    server = ScramServer(SCRAM_SHA_256, {"alice": SCRAM_SHA_256.credential("right", 4096)}.get)
    client_final = _run_until_final(server, ScramClient(SCRAM_SHA_256, "alice", "wrong"))
    with pytest.raises(SaslInvalidCredentials, match="Invalid client credentials"):
        server.respond(client_final)
    assert server.state is ServerState.FAILED
    with pytest.raises(SaslError):  # nothing more is accepted
        server.respond(client_final)


def test_scram_unknown_user_fails_at_client_first() -> None:
    nobody: dict[str, ScramCredential] = {}
    server = ScramServer(SCRAM_SHA_256, nobody.get)
    with pytest.raises(SaslInvalidCredentials, match="Invalid user credentials"):
        server.respond(b"n,,n=nobody,r=abc")


def test_scram_nonce_must_be_echoed_whole() -> None:
    store = {"user": _rfc_credential()}
    server = ScramServer(SCRAM_SHA_256, store.get, nonce=lambda: RFC_SERVER_NONCE)
    server.respond(RFC_CLIENT_FIRST)
    tampered = RFC_CLIENT_FINAL.replace(b"hNlF$k0,", b"hNlF$k1,")
    with pytest.raises(SaslInvalidCredentials, match="nonce"):
        server.respond(tampered)


def test_scram_nonce_with_the_client_nonce_repeated_in_front_is_accepted() -> None:
    """librdkafka before 2.6.1 (Debian's kcat) sends its own nonce again before the
    server's in the client-final message; Kafka checks only that it ends with it."""
    m = SCRAM_SHA_256
    server = ScramServer(m, {"user": _rfc_credential()}.get, nonce=lambda: RFC_SERVER_NONCE)
    server_first = server.respond(RFC_CLIENT_FIRST).decode()
    combined = server_first[2 : server_first.index(",")]
    without_proof = f"c=biws,r={RFC_CLIENT_NONCE}{combined}"
    auth = f"{RFC_CLIENT_FIRST[3:].decode()},{server_first},{without_proof}".encode()
    client_key = m.client_key(m.salted_password("pencil", RFC_SALT, 4096))
    signature = m.hmac(m.digest(client_key), auth)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
    assert server.respond(final).startswith(b"v=")
    assert server.complete and server.username == "user"


def test_scram_client_refuses_server_nonce_not_extending_its_own() -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.first()
    with pytest.raises(SaslError, match="nonce"):
        client.respond(b"r=somethingelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.first()
    with pytest.raises(SaslError, match="nonce"):  # not extended at all
        client.respond(f"r={RFC_CLIENT_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode())


def test_scram_client_refuses_forged_server_signature_and_errors() -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.first()
    client.respond(RFC_SERVER_FIRST)
    with pytest.raises(SaslError, match="server signature"):
        client.respond(b"v=" + base64.b64encode(b"x" * 32))
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.first()
    client.respond(RFC_SERVER_FIRST)
    with pytest.raises(SaslError, match="invalid-proof"):
        client.respond(b"e=invalid-proof")


def test_scram_client_refuses_too_few_iterations() -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.first()
    with pytest.raises(SaslError, match="minimum"):
        client.respond(RFC_SERVER_FIRST.replace(b"i=4096", b"i=100"))


def test_scram_authzid_must_equal_the_user() -> None:
    store = {"user": _rfc_credential()}
    with pytest.raises(SaslAuthenticationFailed, match="authorization id"):
        ScramServer(SCRAM_SHA_256, store.get).respond(b"n,a=admin,n=user,r=abc")
    answer = ScramServer(SCRAM_SHA_256, store.get).respond(b"n,a=user,n=user,r=abc")
    assert answer.startswith(b"r=abc")


def test_scram_extensions_ignored_but_tokenauth_refused() -> None:
    store = {"user": _rfc_credential()}
    answer = ScramServer(SCRAM_SHA_256, store.get).respond(b"n,,n=user,r=abc,foo=bar")
    assert answer.startswith(b"r=abc")
    with pytest.raises(SaslInvalidCredentials, match="Token"):
        ScramServer(SCRAM_SHA_256, store.get).respond(b"n,,n=user,r=abc,tokenauth=true")


def test_scram_channel_binding_and_escapes() -> None:
    store = {"user": _rfc_credential()}
    for bad in (b"y,,n=user,r=abc", b"p=tls-unique,,n=user,r=abc", b"n,,r=abc,n=user", b"n"):
        with pytest.raises(SaslInvalidCredentials):
            ScramServer(SCRAM_SHA_256, store.get).respond(bad)
    with pytest.raises(SaslInvalidCredentials):
        ScramServer(SCRAM_SHA_256, store.get).respond(b"n,,n=us=3Xer,r=abc")
    assert escape_username("a=b,c") == "a=3Db=2Cc"
    assert unescape_saslname("a=3Db=2Cc") == "a=b,c"
    assert ClientFirst.parse(b"n,,n=a=2Cb,r=xyz").username == "a,b"


def test_scram_iterations_below_minimum_refused_by_server() -> None:
    weak = SCRAM_SHA_256.credential("pencil", 1000)
    with pytest.raises(SaslInvalidCredentials, match="minimum"):
        ScramServer(SCRAM_SHA_256, {"user": weak}.get).respond(RFC_CLIENT_FIRST)


def test_plain_token_and_checks() -> None:
    assert client_token("alice", "pw") == b"\x00alice\x00pw"
    assert parse_token(b"x\x00y\x00z") == ("x", "y", "z")
    passwords = {"alice": "alice-secret"}.get
    server = PlainServer(passwords)
    assert server.respond(client_token("alice", "alice-secret")) == b""
    assert server.complete and server.username == "alice"
    assert PlainServer(passwords).respond(client_token("alice", "alice-secret", "alice")) == b""
    told = [  # failures whose message the client reads
        (client_token("alice", "wrong"), "Invalid username or password"),
        (client_token("bob", "alice-secret"), "Invalid username or password"),
        (client_token("alice", "alice-secret", "admin"), "authorization id"),
    ]
    untold = [  # failures the client only learns as invalid credentials
        (client_token("", "x"), "username not specified"),
        (client_token("alice", ""), "password not specified"),
        (b"alice\x00alice-secret", "password not specified"),  # two fields: no password
        (b"\xff\x00alice\x00pw", "not UTF-8"),
    ]
    for cases, error in ((told, SaslAuthenticationFailed), (untold, SaslInvalidCredentials)):
        for token, message in cases:
            failing = PlainServer(passwords)
            with pytest.raises(error, match=message):
                failing.respond(token)
            assert not failing.complete
    # as Kafka splits: a third NUL ends the password
    assert parse_token(b"\x00alice\x00alice-secret\x00junk") == ("", "alice", "alice-secret")
    assert parse_token(b"alice") == ("alice", "", "")


# --- any bytes from the peer end in SaslError, never another exception ----------------------

_TEXTISH = st.one_of(
    st.binary(max_size=80),
    st.text(alphabet="nrcpsiva=,2C3D_-+/xyz0\x00é", max_size=80).map(str.encode),
)


@settings(max_examples=300, deadline=None)
@given(first=_TEXTISH, final=_TEXTISH)
def test_scram_server_takes_any_bytes(first: bytes, final: bytes) -> None:
    for message in (first, b"n,,n=user,r=abc"):
        server = ScramServer(SCRAM_SHA_256, {"user": _rfc_credential()}.get)
        with contextlib.suppress(SaslError):  # anything else fails the test
            server.respond(message)
            server.respond(final)


@settings(max_examples=300, deadline=None)
@given(server_first=_TEXTISH, server_final=_TEXTISH)
def test_scram_client_and_plain_take_any_bytes(server_first: bytes, server_final: bytes) -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: "ab")
    client.first()
    with contextlib.suppress(SaslError):  # anything else fails the test
        client.respond(server_first)
        client.respond(server_final)
    with contextlib.suppress(SaslError):
        PlainServer({"user": "pw"}.get).respond(server_first)
