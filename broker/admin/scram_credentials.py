"""The rules of DescribeUserScramCredentials and AlterUserScramCredentials (pure).

Both APIs answer per user, and a user's outcome is all or nothing: one bad item of a user
fails that user's every change, while the other users of the request still apply. The
rules, in the order they are checked (Kafka's ZooKeeper-mode broker):

Alter, per item (an upsertion or a deletion):

- an empty user name: UNACCEPTABLE_CREDENTIAL "Username must not be empty";
- a mechanism id that is not SCRAM-SHA-256 (1) or SCRAM-SHA-512 (2):
  UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism";
- (upsertions) iterations below 4096 or above 16384: UNACCEPTABLE_CREDENTIAL "Too few
  iterations" / "Too many iterations"; an empty salt or salted password:
  UNACCEPTABLE_CREDENTIAL;

then, among the users still valid, a (user, mechanism) pair named twice (two upsertions,
or an upsertion and a deletion): DUPLICATE_RESOURCE "A user credential cannot be altered
twice in the same request". A deletion of a credential the user does not have is
RESOURCE_NOT_FOUND; only the write can tell (``zk.scram``), so the handler maps it.

Describe: no user list (or an empty one) describes every user with a credential, sorted;
otherwise each distinct name once, in request order: an empty name is RESOURCE_NOT_FOUND
"Username must not be empty", a name given twice DUPLICATE_RESOURCE, a user without
credentials RESOURCE_NOT_FOUND "Attempt to describe a user credential that does not
exist: <user>".

The broker derives the stored credential from the salted password it receives
(``ScramMechanism.credential_from_salted``); the salted password itself is never kept,
logged or echoed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from protocol import ErrorCode
from protocol.sasl.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    SCRAM_BY_WIRE_TYPE,
    ScramCredential,
)

EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
TOO_FEW_ITERATIONS = "Too few iterations"
TOO_MANY_ITERATIONS = "Too many iterations"
EMPTY_SALT = "Salt must not be empty"
EMPTY_SALTED_PASSWORD = "Salted password must not be empty"
DUPLICATE_ALTERATION = "A user credential cannot be altered twice in the same request"
DELETE_MISSING = "Attempt to delete a user credential that does not exist"
DESCRIBE_MISSING = "Attempt to describe a user credential that does not exist"
DESCRIBE_TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request"

#: (error code, message) of a user that failed
Failure = tuple[int, str]


@dataclass(frozen=True, slots=True)
class Upsertion:
    """One ScramCredentialUpsertion as received (``mechanism``: the wire id)."""

    user: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class Deletion:
    user: str
    mechanism: int


@dataclass(slots=True)
class UserChange:
    """What one valid user's alteration writes: credentials by mechanism name, and the
    mechanism names to delete."""

    upserts: dict[str, ScramCredential] = field(default_factory=dict)
    deletions: list[str] = field(default_factory=list)


def _upsertion_failure(item: Upsertion) -> Failure | None:
    if not item.user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_USER
    if item.mechanism not in SCRAM_BY_WIRE_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM
    if item.iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_ITERATIONS
    if item.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_MANY_ITERATIONS
    if not item.salt:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_SALT
    if not item.salted_password:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_SALTED_PASSWORD
    return None


def _deletion_failure(item: Deletion) -> Failure | None:
    if not item.user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_USER
    if item.mechanism not in SCRAM_BY_WIRE_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM
    return None


def plan_alterations(
    deletions: Sequence[Deletion], upsertions: Sequence[Upsertion]
) -> tuple[list[str], dict[str, Failure], dict[str, UserChange]]:
    """Check a request: (every user it names, once each, in order of appearance; the
    users that failed with why; the changes of the users that passed)."""
    users = list(dict.fromkeys([d.user for d in deletions] + [u.user for u in upsertions]))
    failed: dict[str, Failure] = {}
    checks: list[tuple[str, Failure | None]] = [
        (d.user, _deletion_failure(d)) for d in deletions
    ] + [(u.user, _upsertion_failure(u)) for u in upsertions]
    for user, failure in checks:
        if failure is not None and user not in failed:
            failed[user] = failure
    seen: set[tuple[str, int]] = set()
    for user, mechanism in [(d.user, d.mechanism) for d in deletions] + [
        (u.user, u.mechanism) for u in upsertions
    ]:
        if user in failed:
            continue
        if (user, mechanism) in seen:
            failed[user] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_ALTERATION)
        seen.add((user, mechanism))
    changes: dict[str, UserChange] = {u: UserChange() for u in users if u not in failed}
    for d in deletions:
        if d.user in changes:
            changes[d.user].deletions.append(SCRAM_BY_WIRE_TYPE[d.mechanism].name)
    for u in upsertions:
        if u.user in changes:
            scram = SCRAM_BY_WIRE_TYPE[u.mechanism]
            changes[u.user].upserts[scram.name] = scram.credential_from_salted(
                u.salt, u.salted_password, u.iterations
            )
    return users, failed, changes


@dataclass(frozen=True, slots=True)
class Described:
    """One user's describe result: its credentials' (mechanism id, iterations), or the
    failure."""

    user: str
    infos: tuple[tuple[int, int], ...] = ()
    failure: Failure | None = None


def _infos(credentials: Mapping[str, ScramCredential]) -> tuple[tuple[int, int], ...]:
    return tuple(
        sorted(
            (mechanism.wire_type, credentials[mechanism.name].iterations)
            for mechanism in SCRAM_BY_WIRE_TYPE.values()
            if mechanism.name in credentials
        )
    )


def describe(
    users: Sequence[str] | None,
    credentials_of: Callable[[str], Mapping[str, ScramCredential]],
    all_users: Callable[[], Sequence[str]],
) -> list[Described]:
    """The results of a describe request for ``users`` (None or empty: every user)."""
    if not users:
        return [Described(user, _infos(credentials_of(user))) for user in sorted(all_users())]
    counts: dict[str, int] = {}
    for user in users:
        counts[user] = counts.get(user, 0) + 1
    out = []
    for user in counts:  # distinct, in request order
        if not user:
            out.append(Described(user, failure=(ErrorCode.RESOURCE_NOT_FOUND, EMPTY_USER)))
        elif counts[user] > 1:
            out.append(
                Described(user, failure=(ErrorCode.DUPLICATE_RESOURCE, f"{DESCRIBE_TWICE}: {user}"))
            )
        elif not (credentials := credentials_of(user)):
            out.append(
                Described(
                    user, failure=(ErrorCode.RESOURCE_NOT_FOUND, f"{DESCRIBE_MISSING}: {user}")
                )
            )
        else:
            out.append(Described(user, _infos(credentials)))
    return out
