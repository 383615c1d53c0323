"""The broker's SASL states (broker.security.sasl_authenticator / sasl_states): what is
served before authentication, the v0 and v1 flows, Kafka's errors, KIP-368 sessions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol
from broker.security.principal import KafkaPrincipal
from broker.security.sasl_authenticator import (
    FORWARD,
    Answer,
    Close,
    RawToken,
    Refuse,
    SaslAuthenticator,
    SaslListenerSettings,
    ServerExchange,
)
from broker.security.sasl_states import ACTIONS, Action, Kind, SaslState
from protocol import ApiKey, ErrorCode
from protocol.messages import (
    ApiVersionsRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from protocol.sasl.plain import PlainServer, client_token
from protocol.sasl.scram import SCRAM_SHA_256
from protocol.sasl.scram_exchange import ScramClient, ScramServer
from tests.unit.broker.memory_scram_credentials import MemoryScramCredentials

USERS = {"alice": "alice-secret", "bob": "bob-secret"}


def _settings(reauth_ms: int = 0) -> SaslListenerSettings:
    scram = MemoryScramCredentials()
    scram.add("SCRAM-SHA-256", "alice", "alice-secret")
    exchanges: dict[str, Any] = {
        "PLAIN": lambda: PlainServer(USERS.get),
        "SCRAM-SHA-256": lambda: ScramServer(
            SCRAM_SHA_256, lambda u: scram.scram_credential("SCRAM-SHA-256", u)
        ),
    }
    return SaslListenerSettings("SASL_PLAINTEXT", exchanges, reauth_ms, 0.1, 524288)


class Results:
    def __init__(self) -> None:
        self.seen: list[tuple[str, bool, bool]] = []

    def __call__(self, mechanism: str, reauth: bool, success: bool) -> None:
        self.seen.append((mechanism, reauth, success))


def _frame(api_key: int, version: int, body: Any, cid: int = 1) -> bytes:
    return protocol.encode_request(protocol.make_request(api_key, version, cid, "t", body))


def _handshake(mechanism: str, version: int = 1) -> bytes:
    return _frame(ApiKey.SASL_HANDSHAKE, version, SaslHandshakeRequest(mechanism=mechanism))


def _token(data: bytes, version: int = 2) -> bytes:
    return _frame(ApiKey.SASL_AUTHENTICATE, version, SaslAuthenticateRequest(auth_bytes=data))


def _body(outcome: object) -> Any:
    assert isinstance(outcome, Answer | Refuse), outcome
    response = outcome.response
    assert isinstance(response, protocol.Response)
    return response.body


def _authenticated(reauth_ms: int = 0, now: float = 0.0) -> tuple[SaslAuthenticator, Results]:
    results = Results()
    auth = SaslAuthenticator(_settings(reauth_ms), results)
    assert auth.on_frame(_handshake("PLAIN"), now) is not FORWARD
    outcome = auth.on_frame(_token(client_token("alice", "alice-secret")), now)
    assert _body(outcome).error_code == ErrorCode.NONE
    return auth, results


def test_the_table_covers_every_state_and_kind() -> None:
    states = set(SaslState) - {SaslState.AUTHENTICATE_RAW}
    assert set(ACTIONS) == {(s, k) for s in states for k in Kind}
    # before authentication nothing but the three SASL-time APIs is served
    for state in (SaslState.INITIAL, SaslState.HANDSHAKE):
        assert ACTIONS[state, Kind.OTHER] is Action.CLOSE
    assert ACTIONS[SaslState.AUTHENTICATED, Kind.OTHER] is Action.FORWARD


def test_api_versions_then_handshake_then_plain_token() -> None:
    results = Results()
    auth = SaslAuthenticator(_settings(), results)
    versions = _frame(ApiKey.API_VERSIONS, 3, ApiVersionsRequest())
    assert auth.on_frame(versions, 0.0) is FORWARD  # the handlers answer it
    assert auth.state is SaslState.HANDSHAKE
    handshake = auth.on_frame(_handshake("PLAIN"), 0.0)
    assert _body(handshake).error_code == ErrorCode.NONE
    assert _body(handshake).mechanisms == ["PLAIN", "SCRAM-SHA-256"]
    assert auth.max_receive_size == 524288  # still capped
    done = auth.on_frame(_token(client_token("alice", "alice-secret")), 0.0)
    assert _body(done).error_code == ErrorCode.NONE and _body(done).session_lifetime_ms == 0
    assert auth.authenticated and auth.principal == KafkaPrincipal.user("alice")
    assert auth.max_receive_size is None
    assert results.seen == [("PLAIN", False, True)]
    metadata = _frame(ApiKey.METADATA, 12, MetadataRequest(topics=None))
    assert auth.on_frame(metadata, 1000.0) is FORWARD  # no session lifetime: never expires


def test_an_unsupported_api_version_of_api_versions_may_be_retried() -> None:
    auth = SaslAuthenticator(_settings(), Results())
    newer = protocol.encode_request(
        protocol.make_request(ApiKey.API_VERSIONS, 3, 1, "t", ApiVersionsRequest())
    )
    newer = newer[:2] + b"\x00\x09" + newer[4:]  # v9: answered with our ranges
    assert auth.on_frame(newer, 0.0) is FORWARD
    assert auth.state is SaslState.INITIAL


@pytest.mark.parametrize(
    "frame",
    [
        _frame(ApiKey.METADATA, 12, MetadataRequest(topics=None)),
        _token(b"\x00alice\x00alice-secret"),  # a token before the handshake
        b"\x00",  # too short for a header
        b"GET / HTTP/1.1\r\n",  # not a Kafka client
    ],
)
def test_anything_else_before_authentication_closes_unanswered(frame: bytes) -> None:
    auth = SaslAuthenticator(_settings(), Results())
    assert isinstance(auth.on_frame(frame, 0.0), Close)


def test_second_api_versions_closes() -> None:
    auth = SaslAuthenticator(_settings(), Results())
    versions = _frame(ApiKey.API_VERSIONS, 3, ApiVersionsRequest())
    auth.on_frame(versions, 0.0)
    assert isinstance(auth.on_frame(versions, 0.0), Close)


def test_unsupported_mechanism_is_refused_with_the_enabled_list() -> None:
    results = Results()
    auth = SaslAuthenticator(_settings(), results)
    outcome = auth.on_frame(_handshake("GSSAPI"), 0.0)
    assert isinstance(outcome, Refuse)
    assert _body(outcome).error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert _body(outcome).mechanisms == ["PLAIN", "SCRAM-SHA-256"]
    assert auth.failed and results.seen == [("unsupported", False, False)]


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (client_token("alice", "wrong"), "Authentication failed: Invalid username or password"),
        (client_token("carol", "x"), "Authentication failed: Invalid username or password"),
        (client_token("alice", "alice-secret", "bob"), "authorization id that is different"),
    ],
)
def test_plain_failures_carry_kafkas_message(token: bytes, message: str) -> None:
    results = Results()
    auth = SaslAuthenticator(_settings(), results)
    auth.on_frame(_handshake("PLAIN"), 0.0)
    outcome = auth.on_frame(_token(token), 0.0)
    assert isinstance(outcome, Refuse)
    body = _body(outcome)
    assert body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert message in body.error_message
    assert auth.failed and auth.principal is None
    assert results.seen == [("PLAIN", False, False)]
    assert isinstance(auth.on_frame(_token(token), 0.0), Close)  # nothing after a failure


def test_scram_failure_hides_the_reason() -> None:
    auth = SaslAuthenticator(_settings(), Results())
    auth.on_frame(_handshake("SCRAM-SHA-256"), 0.0)
    outcome = auth.on_frame(_token(b"n,,n=nobody,r=abc"), 0.0)
    assert _body(outcome).error_message == (
        "Authentication failed during authentication due to invalid credentials with "
        "SASL mechanism SCRAM-SHA-256"
    )


def test_scram_exchange_over_saslauthenticate() -> None:
    auth = SaslAuthenticator(_settings(), Results())
    auth.on_frame(_handshake("SCRAM-SHA-256"), 0.0)
    client = ScramClient(SCRAM_SHA_256, "alice", "alice-secret")
    server_first = _body(auth.on_frame(_token(client.first()), 0.0)).auth_bytes
    assert not auth.authenticated
    server_final = _body(auth.on_frame(_token(client.respond(server_first)), 0.0)).auth_bytes
    assert client.respond(server_final) == b"" and client.complete
    assert auth.principal == KafkaPrincipal.user("alice")


def test_other_request_during_the_exchange_is_an_illegal_state() -> None:
    auth = SaslAuthenticator(_settings(), Results())
    auth.on_frame(_handshake("SCRAM-SHA-256"), 0.0)
    outcome = auth.on_frame(_frame(ApiKey.METADATA, 12, MetadataRequest(topics=None)), 0.0)
    assert isinstance(outcome, Refuse)
    assert outcome.error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert outcome.error_header.api_key == ApiKey.METADATA


def test_handshake_v0_takes_bare_tokens() -> None:
    auth = SaslAuthenticator(_settings(), Results())
    assert _body(auth.on_frame(_handshake("PLAIN", version=0), 0.0)).error_code == 0
    assert auth.state is SaslState.AUTHENTICATE_RAW
    outcome = auth.on_frame(client_token("alice", "alice-secret"), 0.0)
    assert outcome == Answer(RawToken(b""))
    assert auth.authenticated and not auth.supports_reauth


def test_handshake_v0_bad_token_closes_after_the_delay_unanswered() -> None:
    auth = SaslAuthenticator(_settings(), Results())
    auth.on_frame(_handshake("PLAIN", version=0), 0.0)
    outcome = auth.on_frame(client_token("alice", "nope"), 0.0)
    assert isinstance(outcome, Refuse) and outcome.response is None
    assert outcome.error_header is None


def test_session_lifetime_and_expiry() -> None:
    auth, _ = _authenticated(reauth_ms=10_000, now=100.0)
    assert auth.session_expires_at == pytest.approx(110.0)
    metadata = _frame(ApiKey.METADATA, 12, MetadataRequest(topics=None))
    assert auth.on_frame(metadata, 109.9) is FORWARD
    assert isinstance(auth.on_frame(metadata, 110.0), Close)
    # even a late re-authentication: Kafka closes an expired session whatever arrives
    assert isinstance(auth.on_frame(_handshake("PLAIN"), 110.5), Close)


def test_reauthentication_renews_the_session() -> None:
    auth, results = _authenticated(reauth_ms=10_000, now=0.0)
    assert auth.supports_reauth
    assert _body(auth.on_frame(_handshake("PLAIN"), 9.0)).error_code == 0
    assert auth.state is SaslState.REAUTHENTICATE
    body = _body(auth.on_frame(_token(client_token("alice", "alice-secret")), 9.0))
    assert body.session_lifetime_ms == 10_000
    assert auth.session_expires_at == pytest.approx(19.0)
    assert results.seen == [("PLAIN", False, True), ("PLAIN", True, True)]


def test_reauthentication_as_another_principal_is_refused() -> None:
    auth, results = _authenticated(reauth_ms=10_000)
    auth.on_frame(_handshake("PLAIN"), 1.0)
    outcome = auth.on_frame(_token(client_token("bob", "bob-secret")), 1.0)
    assert isinstance(outcome, Refuse)
    assert _body(outcome).error_message == (
        "Cannot change principals during re-authentication from User.alice: User.bob"
    )
    assert results.seen[-1] == ("PLAIN", True, False)


def test_reauthentication_with_another_mechanism_is_refused() -> None:
    auth, _ = _authenticated(reauth_ms=10_000)
    assert _body(auth.on_frame(_handshake("SCRAM-SHA-256"), 1.0)).error_code == 0
    outcome = auth.on_frame(_token(b"n,,n=alice,r=abc"), 1.0)
    assert isinstance(outcome, Refuse)
    assert "not supported for re-authentication of mechanism 'PLAIN'" in (
        _body(outcome).error_message
    )


def test_handshake_after_v0_authentication_goes_to_the_handlers() -> None:
    auth = SaslAuthenticator(_settings(reauth_ms=10_000), Results())
    auth.on_frame(_handshake("PLAIN"), 0.0)
    auth.on_frame(_token(client_token("alice", "alice-secret"), version=0), 0.0)
    assert auth.authenticated and not auth.supports_reauth
    # no KIP-368 announced: the handshake is the handlers' (ILLEGAL_SASL_STATE)
    assert auth.on_frame(_handshake("PLAIN"), 1.0) is FORWARD


def test_exchanges_satisfy_the_protocol() -> None:
    exchange: ServerExchange = PlainServer(USERS.get)
    assert not exchange.complete


# --- bad input never raises: every frame gets a decision ------------------------------------

_OUTCOMES = (Answer, Refuse, Close, type(FORWARD))


@settings(max_examples=300, deadline=None)
@given(
    setup=st.sampled_from(["none", "plain-v1", "plain-v0", "scram-v1", "scram-first"]),
    frames=st.lists(st.binary(max_size=64), min_size=1, max_size=4),
)
def test_any_bytes_in_any_state_get_a_decision(setup: str, frames: list[bytes]) -> None:
    auth = SaslAuthenticator(_settings(reauth_ms=1000), Results())
    if setup.startswith("plain"):
        auth.on_frame(_handshake("PLAIN", version=0 if setup == "plain-v0" else 1), 0.0)
    elif setup.startswith("scram"):
        auth.on_frame(_handshake("SCRAM-SHA-256"), 0.0)
        if setup == "scram-first":
            auth.on_frame(_token(b"n,,n=alice,r=abc"), 0.0)
    for frame in frames:
        assert isinstance(auth.on_frame(frame, 0.5), _OUTCOMES)
        # SCRAM and PLAIN tokens of any bytes, wrapped in a valid SaslAuthenticate
        assert isinstance(auth.on_frame(_token(frame), 0.5), _OUTCOMES)
