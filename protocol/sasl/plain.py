"""SASL PLAIN (RFC 4616): one token from the client, ``authzid NUL authcid NUL password``.

The client sends its user name (authcid) and password in clear in a single message; the
server answers nothing and the exchange is over. The authorization id (authzid) names who
the client wants to act as: Kafka, and minikafka with it, accepts only an empty one or one
equal to the user name, so a user can never speak for another.

The token is UTF-8, split at its NULs into three fields (a missing one is empty, anything
after a third NUL is dropped, as Kafka splits it). Kafka checks, in this order: a
non-empty user name, a non-empty password (these two failures are not explained to the
client), the password, then the authorization id. The password check is the caller's
(``PlainServer`` takes a lookup of expected passwords) and compares in constant time, so
that the time taken says nothing about how much of a guess was right; an unknown user is
compared against a dummy password for the same reason.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Final

from protocol.sasl.errors import SaslAuthenticationFailed, SaslInvalidCredentials

MECHANISM: Final = "PLAIN"

#: compared against when the user is unknown, so both failures cost the same time
_DUMMY: Final = b"\x00" * 32


def client_token(username: str, password: str, authzid: str = "") -> bytes:
    """The client's only message."""
    return f"{authzid}\x00{username}\x00{password}".encode()


def parse_token(token: bytes) -> tuple[str, str, str]:
    """(authzid, username, password) of a PLAIN token, split at NULs as Kafka splits
    it: missing fields are empty, anything after a third NUL is dropped.
    SaslInvalidCredentials when the token is not UTF-8."""
    try:
        text = token.decode()
    except UnicodeDecodeError:
        raise SaslInvalidCredentials("Invalid SASL/PLAIN response: not UTF-8") from None
    fields = [*text.split("\x00"), "", ""]
    return fields[0], fields[1], fields[2]


class PlainServer:
    """The server side of one PLAIN exchange. ``passwords(user)`` is the password the
    user must give, or None for an unknown user."""

    mechanism = MECHANISM

    def __init__(self, passwords: Callable[[str], str | None]) -> None:
        self._passwords = passwords
        self.complete = False
        self.username: str | None = None

    def respond(self, token: bytes) -> bytes:
        """Check the client's token; the (empty) answer, or SaslError."""
        if self.complete:
            raise SaslInvalidCredentials("PLAIN exchange already complete")
        authzid, username, password = parse_token(token)
        # Kafka keeps these two reasons to itself (the client reads "invalid credentials")
        if not username:
            raise SaslInvalidCredentials("Authentication failed: username not specified")
        if not password:
            raise SaslInvalidCredentials("Authentication failed: password not specified")
        expected = self._passwords(username)
        # digests of equal length: compare_digest's time then says nothing of the length
        given = hashlib.sha256(password.encode()).digest()
        wanted = _DUMMY if expected is None else hashlib.sha256(expected.encode()).digest()
        matches = hmac.compare_digest(given, wanted)
        if expected is None or not matches:
            raise SaslAuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.username = username
        self.complete = True
        return b""
