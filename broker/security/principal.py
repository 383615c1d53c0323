"""Principals: the identity a connection authenticated as, in Kafka's ``Type:name`` form.

Every request carries its connection's principal to the handlers, the request log and the
metrics. On a PLAINTEXT or SASL-less SSL listener without a client certificate it is
``User:ANONYMOUS``; after SASL it is ``User:<username>``; with a client certificate
it is ``User:<name mapped from the certificate's distinguished name>``
(``ssl.principal.mapping.rules``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

USER_TYPE: Final = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @staticmethod
    def user(name: str) -> KafkaPrincipal:
        return KafkaPrincipal(USER_TYPE, name)

    @staticmethod
    def parse(text: str) -> KafkaPrincipal:
        """``Type:name`` (the name may contain colons); ValueError without a type."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type:
            raise ValueError(f"{text!r} is not a principal of the form Type:name")
        return KafkaPrincipal(principal_type, name)


#: the principal of a connection that did not authenticate
ANONYMOUS: Final = KafkaPrincipal.user("ANONYMOUS")
