"""SCRAM exchanges (RFC 5802) as two small state machines, the server's and the client's.

The four messages, as Kafka's clients and librdkafka send them (the gs2 header is always
``n``: no channel binding; an authorization id, when given, must be the user name)::

    client-first   n,[a=<authzid>],n=<saslname>,r=<client nonce>[,<ext>=<value>...]
    server-first   r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=<base64 gs2 header>,r=<the whole nonce>[,<ext>=...],p=<base64 proof>
    server-final   v=<base64 server signature>          (or e=<error> from other servers)

``client-first`` less its gs2 header is the *bare* message. The AuthMessage both sides
sign is ``bare,server-first,client-final-without-proof``, taken byte for byte as sent.

A saslname escapes ``=`` as ``=3D`` and ``,`` as ``=2C`` (any other ``=`` is malformed).
The server's nonce must start with the client's and add to it; the server checks that the
client-final echoes it whole. Extensions are ignored, except ``tokenauth=true`` (Kafka's
delegation tokens), which minikafka does not serve: such a client is refused.

The proof check (``ScramServer``): ``ClientKey = proof XOR HMAC(StoredKey, AuthMessage)``
and ``H(ClientKey)`` must equal the stored key, compared in constant time; the client in
turn checks the server's signature ``HMAC(ServerKey, AuthMessage)``, which proves the
server knew the credential. Neither side ever sends the password or anything a listener
could replay.

Each machine is sans-IO: ``respond`` takes the peer's message bytes and returns the next
message, raising ``SaslError`` (``protocol.sasl.errors``) when the exchange fails, after
which the machine accepts nothing more.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from protocol.sasl.errors import SaslAuthenticationFailed, SaslError, SaslInvalidCredentials
from protocol.sasl.scram import MIN_ITERATIONS, ScramCredential, ScramMechanism

#: Kafka's extension that marks a delegation-token login
TOKEN_AUTH: Final = "tokenauth"


def escape_username(username: str) -> str:
    """A user name as a saslname: ``=`` -> ``=3D``, ``,`` -> ``=2C`` (``=`` first)."""
    return username.replace("=", "=3D").replace(",", "=2C")


def unescape_saslname(saslname: str) -> str:
    """The user name of a saslname; ValueError on an ``=`` that starts no known escape."""
    out: list[str] = []
    i = 0
    while i < len(saslname):
        ch = saslname[i]
        if ch == "=":
            code = saslname[i + 1 : i + 3]
            if code == "2C":
                out.append(",")
            elif code == "3D":
                out.append("=")
            else:
                raise ValueError(f"invalid escape in saslname {saslname!r}")
            i += 3
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def new_nonce() -> str:
    """A fresh random nonce: 32 URL-safe base64 characters (printable, never a comma)."""
    return secrets.token_urlsafe(24)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SaslInvalidCredentials(f"invalid base64 {what}") from None


def _text(message: bytes, what: str) -> str:
    try:
        return message.decode()
    except UnicodeDecodeError:
        raise SaslInvalidCredentials(f"Invalid SCRAM {what} message: not UTF-8") from None


def _attributes(text: str, what: str) -> list[tuple[str, str]]:
    """``a=v,b=w`` as [(a, v), (b, w)]: each attribute one ASCII letter or an
    extension name, then ``=``."""
    pairs: list[tuple[str, str]] = []
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if not sep or not name.isalpha() or not name.isascii():
            raise SaslInvalidCredentials(f"Invalid SCRAM {what} message format: {text!r}")
        pairs.append((name, value))
    return pairs


def _printable_nonce(nonce: str) -> bool:
    return bool(nonce) and all(0x21 <= ord(c) <= 0x7E and c != "," for c in nonce)


@dataclass(frozen=True, slots=True)
class ClientFirst:
    gs2_header: str  # "n,," or "n,a=<authzid>,"
    authzid: str
    username: str
    nonce: str
    extensions: dict[str, str]
    bare: str

    @staticmethod
    def parse(message: bytes) -> ClientFirst:
        text = _text(message, "client first")
        flag, sep1, rest = text.partition(",")
        authz_part, sep2, bare = rest.partition(",")
        if flag != "n" or not sep1 or not sep2:
            # "y" and "p" ask for channel binding, which Kafka does not offer either
            raise SaslInvalidCredentials(f"Invalid SCRAM client first message format: {text!r}")
        authzid = ""
        if authz_part:
            if not authz_part.startswith("a="):
                raise SaslInvalidCredentials(f"Invalid SCRAM client first message format: {text!r}")
            authzid = _unescape(authz_part[2:])
        pairs = _attributes(bare, "client first")
        if len(pairs) < 2 or pairs[0][0] != "n" or pairs[1][0] != "r":
            raise SaslInvalidCredentials(f"Invalid SCRAM client first message format: {text!r}")
        nonce = pairs[1][1]
        if not _printable_nonce(nonce):
            raise SaslInvalidCredentials("Invalid SCRAM client first message: bad nonce")
        return ClientFirst(
            gs2_header=f"n,{authz_part},",
            authzid=authzid,
            username=_unescape(pairs[0][1]),
            nonce=nonce,
            extensions=dict(pairs[2:]),
            bare=bare,
        )


def _unescape(saslname: str) -> str:
    try:
        return unescape_saslname(saslname)
    except ValueError as exc:
        raise SaslInvalidCredentials(str(exc)) from None


class ServerState(enum.Enum):
    RECEIVE_CLIENT_FIRST = "receive client-first"
    RECEIVE_CLIENT_FINAL = "receive client-final"
    COMPLETE = "complete"
    FAILED = "failed"


#: Server state -> the state each message leads to when it is accepted
SERVER_TRANSITIONS: Final = {
    ServerState.RECEIVE_CLIENT_FIRST: ServerState.RECEIVE_CLIENT_FINAL,
    ServerState.RECEIVE_CLIENT_FINAL: ServerState.COMPLETE,
}


class ScramServer:
    """The server side of one SCRAM exchange. ``credentials(username)`` is the user's
    stored credential for this mechanism, or None; ``nonce()`` makes the server's part
    of the nonce."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        credentials: Callable[[str], ScramCredential | None],
        nonce: Callable[[], str] = new_nonce,
    ) -> None:
        self.mechanism = mechanism
        self._credentials = credentials
        self._nonce = nonce
        self.state = ServerState.RECEIVE_CLIENT_FIRST
        self.username: str | None = None
        self._first: ClientFirst | None = None
        self._server_first = ""
        self._credential: ScramCredential | None = None

    @property
    def complete(self) -> bool:
        return self.state is ServerState.COMPLETE

    def respond(self, message: bytes) -> bytes:
        """The answer to the client's next message; SaslError ends the exchange."""
        state = self.state
        try:
            if state is ServerState.RECEIVE_CLIENT_FIRST:
                answer = self._on_client_first(message)
            elif state is ServerState.RECEIVE_CLIENT_FINAL:
                answer = self._on_client_final(message)
            else:
                raise SaslInvalidCredentials(f"Unexpected SCRAM message in state {state.value}")
        except SaslError:
            self.state = ServerState.FAILED
            self._credential = None
            raise
        self.state = SERVER_TRANSITIONS[state]
        return answer

    def _on_client_first(self, message: bytes) -> bytes:
        first = ClientFirst.parse(message)
        if first.extensions.get(TOKEN_AUTH, "").lower() == "true":
            raise SaslInvalidCredentials("Token Authentication failed: tokens are not supported")
        credential = self._credentials(first.username)
        if credential is None:
            raise SaslInvalidCredentials("Authentication failed: Invalid user credentials")
        if first.authzid and first.authzid != first.username:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        if credential.iterations < MIN_ITERATIONS:
            raise SaslInvalidCredentials(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{MIN_ITERATIONS} for {self.mechanism.name}"
            )
        self._first, self._credential = first, credential
        self._server_first = (
            f"r={first.nonce}{self._nonce()},s={_b64(credential.salt)},i={credential.iterations}"
        )
        return self._server_first.encode()

    def _on_client_final(self, message: bytes) -> bytes:
        first, credential = self._first, self._credential
        assert first is not None and credential is not None
        text = _text(message, "client final")
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise SaslInvalidCredentials("Invalid SCRAM client final message format")
        pairs = _attributes(without_proof, "client final")
        if len(pairs) < 2 or pairs[0][0] != "c" or pairs[1][0] != "r":
            raise SaslInvalidCredentials("Invalid SCRAM client final message format")
        if _unb64(pairs[0][1], "channel binding") != first.gs2_header.encode():
            raise SaslInvalidCredentials("Invalid SCRAM channel binding")
        # Kafka checks that the nonce ENDS with the server's: librdkafka before 2.6.1
        # (Debian's kcat) repeats its own nonce in front of it, and Kafka accepts that
        nonce = self._server_first[2 : self._server_first.index(",")].encode()
        echoed = pairs[1][1].encode()
        if len(echoed) < len(nonce) or not hmac.compare_digest(echoed[-len(nonce) :], nonce):
            raise SaslInvalidCredentials("Invalid client nonce in the final client message.")
        proof = _unb64(proof_text, "proof")
        m = self.mechanism
        auth_message = f"{first.bare},{self._server_first},{without_proof}".encode()
        signature = m.hmac(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslInvalidCredentials("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(m.digest(client_key), credential.stored_key):
            raise SaslInvalidCredentials("Invalid client credentials")
        self.username = first.username
        self._credential = None
        return f"v={_b64(m.hmac(credential.server_key, auth_message))}".encode()


class ClientState(enum.Enum):
    SEND_CLIENT_FIRST = "send client-first"
    RECEIVE_SERVER_FIRST = "receive server-first"
    RECEIVE_SERVER_FINAL = "receive server-final"
    COMPLETE = "complete"
    FAILED = "failed"


class ScramClient:
    """The client side of one SCRAM exchange: ``first()``, then ``respond(server_first)``
    gives the client-final, then ``respond(server_final)`` checks the server's signature
    (it returns b"" once the exchange is complete)."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        nonce: Callable[[], str] = new_nonce,
    ) -> None:
        self.mechanism = mechanism
        self._username = username
        self._password = password
        self._nonce = nonce()
        self.state = ClientState.SEND_CLIENT_FIRST
        self._bare = ""
        self._server_signature = b""

    @property
    def complete(self) -> bool:
        return self.state is ClientState.COMPLETE

    def first(self) -> bytes:
        if self.state is not ClientState.SEND_CLIENT_FIRST:
            raise SaslError(f"client-first already sent (state {self.state.value})")
        self._bare = f"n={escape_username(self._username)},r={self._nonce}"
        self.state = ClientState.RECEIVE_SERVER_FIRST
        return f"n,,{self._bare}".encode()

    def respond(self, message: bytes) -> bytes:
        state = self.state
        try:
            if state is ClientState.RECEIVE_SERVER_FIRST:
                answer = self._on_server_first(message)
                self.state = ClientState.RECEIVE_SERVER_FINAL
            elif state is ClientState.RECEIVE_SERVER_FINAL:
                answer = self._on_server_final(message)
                self.state = ClientState.COMPLETE
            else:
                raise SaslError(f"unexpected SCRAM server message in state {state.value}")
        except SaslError:
            self.state = ClientState.FAILED
            raise
        return answer

    def _on_server_first(self, message: bytes) -> bytes:
        text = _text(message, "server first")
        pairs = dict(_attributes(text, "server first"))
        try:
            nonce, salt_text, iterations = pairs["r"], pairs["s"], int(pairs["i"])
        except (KeyError, ValueError):
            raise SaslError(f"Invalid SCRAM server first message format: {text!r}") from None
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslError("Invalid server nonce: it does not extend the client nonce")
        if iterations < MIN_ITERATIONS:
            raise SaslError(
                f"Requested iterations {iterations} is less than the minimum "
                f"{MIN_ITERATIONS} for {self.mechanism.name}"
            )
        m = self.mechanism
        salted = m.salted_password(self._password, _unb64(salt_text, "salt"), iterations)
        without_proof = f"c={_b64(b'n,,')},r={nonce}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        client_key = m.client_key(salted)
        signature = m.hmac(m.digest(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = m.hmac(m.hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={_b64(proof)}".encode()

    def _on_server_final(self, message: bytes) -> bytes:
        text = _text(message, "server final")
        name, _, value = text.split(",", 1)[0].partition("=")
        if name == "e":
            raise SaslError(f"SCRAM server refused the exchange: {value}")
        if name != "v":
            raise SaslError(f"Invalid SCRAM server final message format: {text!r}")
        if not hmac.compare_digest(_unb64(value, "server signature"), self._server_signature):
            raise SaslError("Invalid server signature in the server final message")
        return b""
