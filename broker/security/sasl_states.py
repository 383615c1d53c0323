"""The SASL states of a broker connection, and what each does with the next request.

A connection on a SASL listener starts in INITIAL. Until it is AUTHENTICATED only three
APIs are served -- ApiVersions, SaslHandshake, SaslAuthenticate -- in Kafka's order::

    INITIAL        --ApiVersions-->              HANDSHAKE (answered by the handlers)
    INITIAL        --SaslHandshake v1-->         AUTHENTICATE
    INITIAL        --SaslHandshake v0-->         AUTHENTICATE_RAW
    HANDSHAKE      --SaslHandshake v0/v1-->      AUTHENTICATE / AUTHENTICATE_RAW
    AUTHENTICATE   --SaslAuthenticate tokens-->  AUTHENTICATED once the mechanism completes
    AUTHENTICATE_RAW --raw tokens-->             AUTHENTICATED once the mechanism completes
    AUTHENTICATED  --SaslHandshake (KIP-368)-->  REAUTHENTICATE
    REAUTHENTICATE --SaslAuthenticate tokens-->  AUTHENTICATED (same principal)
    any            --failure-->                  FAILED (answered after the delay, closed)

After SaslHandshake v0 the client's tokens are bare ``int32 size | token`` frames with no
Kafka header (the flow before KIP-152), and the server's answers likewise; v1 wraps them
in SaslAuthenticate requests and responses, which also carry errors.

``ACTIONS`` is the table: (state, kind of request) -> action. A request of any other API
before authentication closes the connection at once, unanswered, as Kafka does (it may
not be a Kafka client at all); a second ApiVersions, or a SaslAuthenticate before the
handshake, likewise. During an exchange, any request but SaslAuthenticate is answered
ILLEGAL_SASL_STATE (after the failure delay) and the connection closed.
"""

from __future__ import annotations

import enum
from typing import Final

from protocol import ApiKey


class SaslState(enum.Enum):
    INITIAL = "initial"
    HANDSHAKE = "handshake"  # ApiVersions answered: a SaslHandshake must follow
    AUTHENTICATE = "authenticate"  # tokens in SaslAuthenticate requests
    AUTHENTICATE_RAW = "authenticate-raw"  # tokens as bare frames (SaslHandshake v0)
    AUTHENTICATED = "authenticated"
    REAUTHENTICATE = "reauthenticate"  # KIP-368: tokens in SaslAuthenticate requests
    FAILED = "failed"


class Kind(enum.Enum):
    """What a frame is, as far as the SASL states care."""

    API_VERSIONS = "ApiVersions"
    HANDSHAKE = "SaslHandshake"
    AUTHENTICATE = "SaslAuthenticate"
    OTHER = "other"


def kind_of(api_key: int) -> Kind:
    if api_key == ApiKey.API_VERSIONS:
        return Kind.API_VERSIONS
    if api_key == ApiKey.SASL_HANDSHAKE:
        return Kind.HANDSHAKE
    if api_key == ApiKey.SASL_AUTHENTICATE:
        return Kind.AUTHENTICATE
    return Kind.OTHER


class Action(enum.Enum):
    FORWARD = "forward"  # to the handlers, as on any listener
    VERSIONS = "versions"  # to the handlers; the handshake must come next
    HANDSHAKE = "handshake"  # choose the mechanism
    TOKEN = "token"  # a SaslAuthenticate request's token
    REAUTH = "reauth"  # a handshake on an authenticated connection (KIP-368)
    ILLEGAL = "illegal"  # answer ILLEGAL_SASL_STATE after the delay, then close
    CLOSE = "close"  # close now, unanswered


S, K, A = SaslState, Kind, Action

#: (state, kind of request) -> what the authenticator does. AUTHENTICATE_RAW is not in
#: the table: there every frame is a token, whatever its first bytes look like.
ACTIONS: Final[dict[tuple[SaslState, Kind], Action]] = {
    (S.INITIAL, K.API_VERSIONS): A.VERSIONS,
    (S.INITIAL, K.HANDSHAKE): A.HANDSHAKE,
    (S.INITIAL, K.AUTHENTICATE): A.CLOSE,
    (S.INITIAL, K.OTHER): A.CLOSE,
    (S.HANDSHAKE, K.API_VERSIONS): A.CLOSE,
    (S.HANDSHAKE, K.HANDSHAKE): A.HANDSHAKE,
    (S.HANDSHAKE, K.AUTHENTICATE): A.CLOSE,
    (S.HANDSHAKE, K.OTHER): A.CLOSE,
    (S.AUTHENTICATE, K.API_VERSIONS): A.ILLEGAL,
    (S.AUTHENTICATE, K.HANDSHAKE): A.ILLEGAL,
    (S.AUTHENTICATE, K.AUTHENTICATE): A.TOKEN,
    (S.AUTHENTICATE, K.OTHER): A.ILLEGAL,
    (S.AUTHENTICATED, K.API_VERSIONS): A.FORWARD,
    (S.AUTHENTICATED, K.HANDSHAKE): A.REAUTH,
    (S.AUTHENTICATED, K.AUTHENTICATE): A.FORWARD,
    (S.AUTHENTICATED, K.OTHER): A.FORWARD,
    (S.REAUTHENTICATE, K.API_VERSIONS): A.ILLEGAL,
    (S.REAUTHENTICATE, K.HANDSHAKE): A.ILLEGAL,
    (S.REAUTHENTICATE, K.AUTHENTICATE): A.TOKEN,
    (S.REAUTHENTICATE, K.OTHER): A.ILLEGAL,
    (S.FAILED, K.API_VERSIONS): A.CLOSE,
    (S.FAILED, K.HANDSHAKE): A.CLOSE,
    (S.FAILED, K.AUTHENTICATE): A.CLOSE,
    (S.FAILED, K.OTHER): A.CLOSE,
}
