"""The rules of AlterUserScramCredentials and DescribeUserScramCredentials
(broker.admin.scram_credentials), as Kafka's ZooKeeper-mode broker applies them."""

from __future__ import annotations

from broker.admin.scram_credentials import (
    DESCRIBE_MISSING,
    DUPLICATE_ALTERATION,
    EMPTY_USER,
    TOO_FEW_ITERATIONS,
    TOO_MANY_ITERATIONS,
    UNKNOWN_MECHANISM,
    Deletion,
    Described,
    Upsertion,
    describe,
    plan_alterations,
)
from protocol import ErrorCode
from protocol.sasl.scram import SCRAM_SHA_256, SCRAM_SHA_512, ScramCredential

SALT = b"0123456789abcdef"
SALTED = SCRAM_SHA_256.salted_password("pw", SALT, 4096)
SHA256, SHA512 = SCRAM_SHA_256.wire_type, SCRAM_SHA_512.wire_type


def up(user: str, mechanism: int = SHA256, iterations: int = 4096, **kw: bytes) -> Upsertion:
    return Upsertion(user, mechanism, iterations, kw.get("salt", SALT), kw.get("salted", SALTED))


def test_a_valid_request_derives_each_users_credentials() -> None:
    users, failed, changes = plan_alterations(
        [Deletion("bob", SHA512)], [up("alice"), up("bob", SHA256, 8192)]
    )
    assert users == ["bob", "alice"]  # each once, in order of appearance
    assert failed == {}
    assert changes["alice"].upserts == {
        "SCRAM-SHA-256": SCRAM_SHA_256.credential_from_salted(SALT, SALTED, 4096)
    }
    assert changes["alice"].deletions == []
    assert changes["bob"].deletions == ["SCRAM-SHA-512"]
    assert changes["bob"].upserts["SCRAM-SHA-256"].iterations == 8192
    # the stored credential is what the password gives: the salted password was used
    assert changes["alice"].upserts["SCRAM-SHA-256"] == SCRAM_SHA_256.credential("pw", 4096, SALT)


def test_each_bad_item_fails_its_whole_user_with_kafkas_error() -> None:
    users, failed, changes = plan_alterations(
        [Deletion("", SHA256), Deletion("d", 9)],
        [
            up("few", iterations=4095),
            up("many", iterations=16385),
            up("mech", mechanism=0),
            up("nosalt", salt=b""),
            up("nosalted", salted=b""),
            up("few", SHA512),  # its other item is fine, the user still fails
            up("ok", iterations=16384),
        ],
    )
    assert failed[""] == (ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_USER)
    assert failed["d"] == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM)
    assert failed["few"] == (ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_ITERATIONS)
    assert failed["many"] == (ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_MANY_ITERATIONS)
    assert failed["mech"] == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM)
    assert failed["nosalt"][0] == ErrorCode.UNACCEPTABLE_CREDENTIAL
    assert failed["nosalted"][0] == ErrorCode.UNACCEPTABLE_CREDENTIAL
    assert set(changes) == {"ok"}
    assert set(users) == set(failed) | {"ok"}


def test_a_credential_altered_twice_is_a_duplicate() -> None:
    _, failed, changes = plan_alterations(
        [Deletion("a", SHA256)], [up("a", SHA256), up("b", SHA256), up("b", SHA256), up("c")]
    )
    assert failed == {
        "a": (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_ALTERATION),
        "b": (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_ALTERATION),
    }
    assert set(changes) == {"c"}
    # two mechanisms of one user are two credentials, not a duplicate
    _, failed, changes = plan_alterations([Deletion("a", SHA512)], [up("a", SHA256)])
    assert failed == {} and set(changes) == {"a"}


def test_an_invalid_user_is_not_also_reported_duplicate() -> None:
    _, failed, _ = plan_alterations([], [up("a", iterations=1), up("a", iterations=1)])
    assert failed == {"a": (ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_ITERATIONS)}


def test_the_salted_password_stays_out_of_reprs() -> None:
    assert SALTED.hex() not in repr(up("a"))
    assert repr(SALTED) not in repr(up("a"))


CREDS: dict[str, dict[str, ScramCredential]] = {
    "bob": {"SCRAM-SHA-512": SCRAM_SHA_512.credential("x", 8192, SALT)},
    "alice": {
        "SCRAM-SHA-512": SCRAM_SHA_512.credential("x", 4096, SALT),
        "SCRAM-SHA-256": SCRAM_SHA_256.credential("x", 5000, SALT),
    },
}


def run_describe(users: list[str] | None) -> list[Described]:
    return describe(users, lambda u: CREDS.get(u, {}), lambda: list(CREDS))


def test_describing_everyone_lists_each_user_sorted_with_its_iterations() -> None:
    expected = [
        Described("alice", ((SHA256, 5000), (SHA512, 4096))),
        Described("bob", ((SHA512, 8192),)),
    ]
    assert run_describe(None) == expected
    assert run_describe([]) == expected


def test_describing_named_users() -> None:
    assert run_describe(["bob", "nobody", "", "alice", "alice", ""]) == [
        Described("bob", ((SHA512, 8192),)),
        Described("nobody", failure=(ErrorCode.RESOURCE_NOT_FOUND, f"{DESCRIBE_MISSING}: nobody")),
        Described("", failure=(ErrorCode.RESOURCE_NOT_FOUND, EMPTY_USER)),
        Described(
            "alice",
            failure=(
                ErrorCode.DUPLICATE_RESOURCE,
                "Cannot describe SCRAM credentials for the same user twice in a single "
                "request: alice",
            ),
        ),
    ]
