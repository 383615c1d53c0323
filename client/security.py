"""How a client connection secures itself: the security protocol, TLS and SASL settings.

``ClientSecurity`` is what ``client.connection.Connection`` needs to open a connection on
any listener: PLAINTEXT, SSL (``ssl_context`` set), SASL_PLAINTEXT (``sasl`` set) or
SASL_SSL (both). Kafka's client properties (``security.protocol``, ``sasl.mechanism``,
``sasl.jaas.config``, ``ssl.truststore.location`` ...) are turned into one by the
properties module; internal clients (replica fetchers, the controller's channel) build
theirs from the broker's inter-broker listener.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Final

SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class SaslCredentials:
    """A SASL mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with a user's password."""

    mechanism: str
    username: str
    password: str

    def __repr__(self) -> str:  # never print a password
        return f"SaslCredentials({self.mechanism}, {self.username!r})"


@dataclass(frozen=True)
class ClientSecurity:
    security_protocol: str = "PLAINTEXT"
    #: the TLS context (SSL and SASL_SSL); ``server_hostname`` checks follow its
    #: ``check_hostname``
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslCredentials | None = None

    def __post_init__(self) -> None:
        protocol = self.security_protocol
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security.protocol {protocol!r} is not one of {SECURITY_PROTOCOLS}")
        if protocol.endswith("SSL") and self.ssl_context is None:
            raise ValueError(f"security.protocol {protocol} needs a TLS context")
        if protocol.startswith("SASL") and self.sasl is None:
            raise ValueError(f"security.protocol {protocol} needs SASL credentials")

    @property
    def uses_tls(self) -> bool:
        return self.ssl_context is not None and self.security_protocol.endswith("SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.sasl is not None and self.security_protocol.startswith("SASL")


PLAINTEXT: Final = ClientSecurity()
