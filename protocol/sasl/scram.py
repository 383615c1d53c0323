"""SCRAM (RFC 5802; SHA-256 and SHA-512 as RFC 7677 and Kafka name them): the credential
a server keeps for a user, and the formulas that derive it.

A server never keeps a password. From the password, a random salt and an iteration count
it keeps::

    SaltedPassword = PBKDF2-HMAC(H, password, salt, iterations)
    ClientKey      = HMAC(SaltedPassword, "Client Key")
    StoredKey      = H(ClientKey)
    ServerKey      = HMAC(SaltedPassword, "Server Key")

and stores (salt, StoredKey, ServerKey, iterations): Kafka's ScramCredential, which it
writes in ZooKeeper as ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``
under ``/config/users/<user>``, one entry per mechanism. An AlterUserScramCredentials
request carries the salt and SaltedPassword, never the password.

Kafka accepts iteration counts from 4096 (``MIN_ITERATIONS``) to 16384 (``MAX_ITERATIONS``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Final

MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    """A SCRAM mechanism: its SASL name, hash, and the wire id AlterUserScramCredentials
    and DescribeUserScramCredentials use (Kafka's ScramMechanism type)."""

    name: str
    hash_name: str
    wire_type: int

    def digest(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        # RFC 5802 asks for SASLprep of the password; Kafka's client and server use the
        # UTF-8 bytes as they are, and so do we, so that credentials agree with Kafka's
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)

    def client_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Client Key")

    def credential_from_salted(
        self, salt: bytes, salted_password: bytes, iterations: int
    ) -> ScramCredential:
        return ScramCredential(
            salt=salt,
            stored_key=self.digest(self.client_key(salted_password)),
            server_key=self.hmac(salted_password, b"Server Key"),
            iterations=iterations,
        )

    def credential(
        self, password: str, iterations: int, salt: bytes | None = None
    ) -> ScramCredential:
        """A new credential for ``password`` (a random 32-byte salt unless given)."""
        salt = os.urandom(32) if salt is None else salt
        return self.credential_from_salted(
            salt, self.salted_password(password, salt, iterations), iterations
        )


SCRAM_SHA_256: Final = ScramMechanism("SCRAM-SHA-256", "sha256", 1)
SCRAM_SHA_512: Final = ScramMechanism("SCRAM-SHA-512", "sha512", 2)

#: SASL mechanism name -> mechanism
SCRAM_MECHANISMS: Final[dict[str, ScramMechanism]] = {
    m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)
}
#: AlterUserScramCredentials' mechanism id -> mechanism (0 is UNKNOWN)
SCRAM_BY_WIRE_TYPE: Final[dict[int, ScramMechanism]] = {
    m.wire_type: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)
}


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_text(self) -> str:
        """Kafka's text form, as stored in ZooKeeper."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @staticmethod
    def from_text(text: str) -> ScramCredential:
        """Parse Kafka's text form; ValueError names what is missing or malformed."""
        fields: dict[str, str] = {}
        for item in text.split(","):
            name, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"SCRAM credential item {item!r} is not name=value")
            fields[name.strip()] = value.strip()
        try:
            return ScramCredential(
                salt=base64.b64decode(fields["salt"], validate=True),
                stored_key=base64.b64decode(fields["stored_key"], validate=True),
                server_key=base64.b64decode(fields["server_key"], validate=True),
                iterations=int(fields["iterations"]),
            )
        except KeyError as missing:
            raise ValueError(f"SCRAM credential without {missing.args[0]}") from None
        except (ValueError, TypeError) as exc:
            raise ValueError(f"malformed SCRAM credential: {exc}") from None
