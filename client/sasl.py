"""The client's side of SASL on a connection: SaslHandshake v1, then SaslAuthenticate.

After ApiVersions, a connection whose ``ClientSecurity`` uses SASL (SASL_PLAINTEXT,
SASL_SSL) runs ``authenticate``: a SaslHandshake v1 naming the mechanism, then the
mechanism's tokens each in a SaslAuthenticate request (v0-2, the highest both sides
speak), until the mechanism is complete. The tokens come from the sans-IO machines of
``protocol.sasl``: PLAIN's single token, or SCRAM's client-first and client-final (the
client also checks the server's final signature, which proves the broker knew the
credential rather than just accepting anyone).

A refusal surfaces as ``client.errors.AuthenticationFailed`` with the broker's error code
and message: SASL_AUTHENTICATION_FAILED ("Authentication failed: Invalid username or
password"), UNSUPPORTED_SASL_MECHANISM (with the mechanisms the broker enables),
ILLEGAL_SASL_STATE.

The broker's answer carries the session lifetime (SaslAuthenticate v1+, KIP-368): when it
is above zero the connection must authenticate again before it ends, or the broker closes
it. ``reauth_delay_s`` says when to: at a random point between 85% and 95% of the
lifetime, as Kafka's clients do, so that connections made together do not all
re-authenticate at once. ``client.connection.Connection`` runs it.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol

from client.errors import AuthenticationFailed
from client.security import SaslCredentials
from protocol import ApiKey, ErrorCode
from protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from protocol.sasl.errors import SaslError
from protocol.sasl.plain import MECHANISM as PLAIN
from protocol.sasl.plain import client_token
from protocol.sasl.scram import SCRAM_MECHANISMS
from protocol.sasl.scram_exchange import ScramClient

#: (api key, version, request body) -> the decoded response body
RoundTrip = Callable[[int, int, Any], Awaitable[Any]]

#: versions used when ApiVersions was skipped: every broker with SASL headers speaks them
DEFAULT_HANDSHAKE_VERSION: Final = 1
DEFAULT_AUTHENTICATE_VERSION: Final = 1
#: no mechanism here needs more round trips; a broker asking for more is refused
MAX_ROUND_TRIPS: Final = 4


class ClientExchange(Protocol):
    @property
    def complete(self) -> bool: ...

    def first(self) -> bytes: ...

    def respond(self, message: bytes) -> bytes: ...


class PlainClient:
    """PLAIN's client side: one token, complete once the broker accepts it."""

    def __init__(self, username: str, password: str) -> None:
        self._token = client_token(username, password)
        self.complete = False

    def first(self) -> bytes:
        return self._token

    def respond(self, message: bytes) -> bytes:
        self.complete = True
        return b""


def client_exchange(credentials: SaslCredentials) -> ClientExchange:
    mechanism = credentials.mechanism.upper()
    if mechanism == PLAIN:
        return PlainClient(credentials.username, credentials.password)
    scram = SCRAM_MECHANISMS.get(mechanism)
    if scram is None:
        raise AuthenticationFailed(
            ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            f"the client does not speak {credentials.mechanism} "
            f"(PLAIN, {', '.join(SCRAM_MECHANISMS)})",
        )
    return ScramClient(scram, credentials.username, credentials.password)


async def authenticate(
    round_trip: RoundTrip, credentials: SaslCredentials, versions: Mapping[int, int]
) -> int:
    """Run the handshake and the exchange; the session lifetime in ms (0: none).
    AuthenticationFailed when refused; the caller closes the connection then."""
    exchange = client_exchange(credentials)
    handshake_version = versions.get(ApiKey.SASL_HANDSHAKE, DEFAULT_HANDSHAKE_VERSION)
    authenticate_version = versions.get(ApiKey.SASL_AUTHENTICATE, DEFAULT_AUTHENTICATE_VERSION)
    mechanism = credentials.mechanism.upper()
    handshake = await round_trip(
        ApiKey.SASL_HANDSHAKE, handshake_version, SaslHandshakeRequest(mechanism=mechanism)
    )
    if handshake.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
        raise AuthenticationFailed(
            handshake.error_code,
            f"the broker does not enable {mechanism}; it enables "
            f"{', '.join(handshake.mechanisms) or 'none'}",
        )
    if handshake.error_code != ErrorCode.NONE:
        raise AuthenticationFailed(handshake.error_code, f"SaslHandshake for {mechanism}")
    try:
        token = exchange.first()
        for _ in range(MAX_ROUND_TRIPS):
            answer = await round_trip(
                ApiKey.SASL_AUTHENTICATE,
                authenticate_version,
                SaslAuthenticateRequest(auth_bytes=token),
            )
            if answer.error_code != ErrorCode.NONE:
                raise AuthenticationFailed(answer.error_code, answer.error_message)
            token = exchange.respond(bytes(answer.auth_bytes))
            if exchange.complete:
                return int(getattr(answer, "session_lifetime_ms", 0) or 0)
    except SaslError as exc:
        raise AuthenticationFailed(ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc)) from None
    raise AuthenticationFailed(
        ErrorCode.SASL_AUTHENTICATION_FAILED, f"{mechanism} did not complete in time"
    )


def reauth_delay_s(
    session_lifetime_ms: int, rng: Callable[[], float] = random.random
) -> float | None:
    """When to re-authenticate, in seconds from now; None without a session lifetime."""
    if session_lifetime_ms <= 0:
        return None
    return session_lifetime_ms * (0.85 + 0.10 * rng()) / 1000
