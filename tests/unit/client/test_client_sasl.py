"""The client's SASL (client.sasl) against the sans-IO servers of protocol.sasl."""

from __future__ import annotations

from typing import Any

import pytest

from client.errors import AuthenticationFailed
from client.sasl import authenticate, reauth_delay_s
from client.security import SaslCredentials
from protocol import ApiKey, ErrorCode
from protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from protocol.sasl.errors import SaslAuthenticationFailed, SaslError
from protocol.sasl.plain import PlainServer
from protocol.sasl.scram import SCRAM_SHA_512
from protocol.sasl.scram_exchange import ScramServer


class Broker:
    """Answers SaslHandshake and SaslAuthenticate as a broker enabling ``mechanisms``."""

    def __init__(self, server: Any, mechanisms: list[str], lifetime_ms: int = 0) -> None:
        self.server = server
        self.mechanisms = mechanisms
        self.lifetime_ms = lifetime_ms
        self.calls: list[tuple[int, int]] = []

    async def __call__(self, api_key: int, version: int, body: Any) -> Any:
        self.calls.append((api_key, version))
        if api_key == ApiKey.SASL_HANDSHAKE:
            code = 0 if body.mechanism in self.mechanisms else ErrorCode.UNSUPPORTED_SASL_MECHANISM
            return SaslHandshakeResponse(error_code=code, mechanisms=self.mechanisms)
        try:
            answer = self.server.respond(bytes(body.auth_bytes))
        except SaslAuthenticationFailed as exc:
            return SaslAuthenticateResponse(
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(exc)
            )
        except SaslError:
            return SaslAuthenticateResponse(
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message="invalid"
            )
        lifetime = self.lifetime_ms if self.server.complete else 0
        return SaslAuthenticateResponse(auth_bytes=answer, session_lifetime_ms=lifetime)


VERSIONS: dict[int, int] = {ApiKey.SASL_HANDSHAKE: 1, ApiKey.SASL_AUTHENTICATE: 2}


async def test_plain_authenticates_and_returns_the_lifetime() -> None:
    broker = Broker(PlainServer({"alice": "pw"}.get), ["PLAIN"], lifetime_ms=5000)
    lifetime = await authenticate(broker, SaslCredentials("PLAIN", "alice", "pw"), VERSIONS)
    assert lifetime == 5000
    assert broker.calls == [(ApiKey.SASL_HANDSHAKE, 1), (ApiKey.SASL_AUTHENTICATE, 2)]


async def test_scram_sha_512_round_trip() -> None:
    store = {"bob": SCRAM_SHA_512.credential("pw", 4096)}
    broker = Broker(ScramServer(SCRAM_SHA_512, store.get), ["SCRAM-SHA-512"])
    creds = SaslCredentials("SCRAM-SHA-512", "bob", "pw")
    assert await authenticate(broker, creds, {}) == 0  # v1 defaults without ApiVersions
    assert broker.calls[0] == (ApiKey.SASL_HANDSHAKE, 1)
    assert broker.server.complete


async def test_wrong_password_surfaces_the_brokers_message() -> None:
    broker = Broker(PlainServer({"alice": "pw"}.get), ["PLAIN"])
    with pytest.raises(AuthenticationFailed, match="Invalid username or password") as failed:
        await authenticate(broker, SaslCredentials("PLAIN", "alice", "nope"), VERSIONS)
    assert failed.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert not failed.value.retriable


async def test_unsupported_mechanism_names_the_enabled_ones() -> None:
    nobody: dict[str, str] = {}
    broker = Broker(PlainServer(nobody.get), ["PLAIN", "SCRAM-SHA-256"])
    with pytest.raises(AuthenticationFailed, match="enables PLAIN, SCRAM-SHA-256") as failed:
        await authenticate(broker, SaslCredentials("SCRAM-SHA-512", "a", "b"), VERSIONS)
    assert failed.value.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM


async def test_a_server_that_does_not_prove_the_credential_is_refused() -> None:
    class Impostor:
        complete = False

        def respond(self, token: bytes) -> bytes:
            if token.startswith(b"n,,"):
                nonce = token.split(b"r=")[1]
                return b"r=" + nonce + b"xyz,s=c2FsdA==,i=4096"
            self.complete = True
            return b"v=AAAA"  # not the server signature

    broker = Broker(Impostor(), ["SCRAM-SHA-512"])
    with pytest.raises(AuthenticationFailed, match="server signature"):
        await authenticate(broker, SaslCredentials("SCRAM-SHA-512", "bob", "pw"), VERSIONS)


def test_reauthentication_between_85_and_95_percent_of_the_lifetime() -> None:
    assert reauth_delay_s(0) is None
    assert reauth_delay_s(10_000, rng=lambda: 0.0) == pytest.approx(8.5)
    assert reauth_delay_s(10_000, rng=lambda: 1.0) == pytest.approx(9.5)
