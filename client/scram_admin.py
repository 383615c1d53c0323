"""Users' SCRAM credentials: describe (DescribeUserScramCredentials) and alter
(AlterUserScramCredentials), as Kafka's Admin client does.

The password never leaves this process: for each upsertion the client draws a random
salt and sends the salt with ``SaltedPassword = PBKDF2(password, salt, iterations)``
(``ScramMechanism.salted_password``); the broker derives the stored and server keys from
them. Describing any broker answers (what that broker authenticates with); altering goes
to the controller (a broker that is not answers NOT_CONTROLLER for every user, and the
call retries after a metadata refresh). Results are per user: one failing user does not
fail the others.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from client.admin import _to_controller
from client.client import KafkaClient
from client.errors import KafkaError
from protocol import ApiKey, ErrorCode
from protocol.messages import (
    AlterUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequest,
)
from protocol.sasl.scram import SCRAM_BY_WIRE_TYPE, SCRAM_MECHANISMS

#: the iteration count Kafka's tool uses when none is given
DEFAULT_ITERATIONS = 4096
SALT_BYTES = 32


@dataclass(frozen=True, slots=True)
class ScramCredentialInfo:
    """A credential as a broker describes it: its mechanism and iteration count."""

    mechanism: str
    iterations: int


@dataclass(frozen=True, slots=True)
class ScramUpsertion:
    """Give ``user`` a credential for ``password`` under ``mechanism``
    (``SCRAM-SHA-256`` / ``SCRAM-SHA-512``), replacing the one it has."""

    user: str
    mechanism: str
    password: str = field(repr=False)
    iterations: int = DEFAULT_ITERATIONS


@dataclass(frozen=True, slots=True)
class ScramDeletion:
    """Remove ``user``'s credential under ``mechanism``."""

    user: str
    mechanism: str


def _wire_type(mechanism: str) -> int:
    """The mechanism's id on the wire; an unknown name is sent as 0 (UNKNOWN), which the
    broker refuses with UNSUPPORTED_SASL_MECHANISM, as Kafka's client does."""
    known = SCRAM_MECHANISMS.get(mechanism)
    return 0 if known is None else known.wire_type


def _mechanism_name(wire_type: int) -> str:
    known = SCRAM_BY_WIRE_TYPE.get(wire_type)
    return f"UNKNOWN({wire_type})" if known is None else known.name


async def describe_user_scram_credentials(
    client: KafkaClient, users: Sequence[str] | None = None
) -> dict[str, list[ScramCredentialInfo] | KafkaError]:
    """Each user's credentials (or the error the broker gave for it: RESOURCE_NOT_FOUND
    for a user without any). ``users`` None: every user that has one. KafkaError when the
    whole request failed."""

    def build(version: int) -> Any:
        return DescribeUserScramCredentialsRequest(
            users=None
            if users is None
            else [DescribeUserScramCredentialsRequest.UserName(name=u) for u in users]
        )

    body = await client.retrying(
        lambda: client.request(None, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, build)
    )
    if body.error_code != ErrorCode.NONE:
        raise KafkaError(body.error_code, body.error_message)
    out: dict[str, list[ScramCredentialInfo] | KafkaError] = {}
    for result in body.results:
        if result.error_code != ErrorCode.NONE:
            out[result.user] = KafkaError(result.error_code, result.error_message)
        else:
            out[result.user] = [
                ScramCredentialInfo(_mechanism_name(i.mechanism), i.iterations)
                for i in result.credential_infos
            ]
    return out


def _upsertion(item: ScramUpsertion) -> AlterUserScramCredentialsRequest.ScramCredentialUpsertion:
    mechanism = SCRAM_MECHANISMS.get(item.mechanism)
    salt = os.urandom(SALT_BYTES)
    # an unknown mechanism has no hash to salt with: the broker refuses it by its id
    salted = (
        b""
        if mechanism is None
        else mechanism.salted_password(item.password, salt, item.iterations)
    )
    return AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
        name=item.user,
        mechanism=_wire_type(item.mechanism),
        iterations=item.iterations,
        salt=salt,
        salted_password=salted,
    )


async def alter_user_scram_credentials(
    client: KafkaClient,
    alterations: Sequence[ScramUpsertion | ScramDeletion],
    *,
    timeout_s: float = 30.0,
) -> dict[str, KafkaError | None]:
    """Apply the alterations; each user named -> None (done) or the KafkaError that
    refused its whole change."""
    deletions = [
        AlterUserScramCredentialsRequest.ScramCredentialDeletion(
            name=a.user, mechanism=_wire_type(a.mechanism)
        )
        for a in alterations
        if isinstance(a, ScramDeletion)
    ]
    # salted once: a retry sends the same salts, so a change applied before a lost
    # answer is applied again identically
    upsertions = [_upsertion(a) for a in alterations if isinstance(a, ScramUpsertion)]

    def build(version: int) -> Any:
        return AlterUserScramCredentialsRequest(deletions=deletions, upsertions=upsertions)

    body = await _to_controller(client, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, build, timeout_s)
    return {
        r.user: (
            None if r.error_code == ErrorCode.NONE else KafkaError(r.error_code, r.error_message)
        )
        for r in body.results
    }
