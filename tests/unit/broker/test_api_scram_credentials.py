"""DescribeUserScramCredentials and AlterUserScramCredentials handlers: describe from this
broker's cache; alter only on the active controller, per user all or nothing, written to
ZooKeeper and into the cache at once, nothing secret in the logs."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from broker.apis import alter_user_scram_credentials, describe_user_scram_credentials
from broker.apis.services import ScramAdmin
from broker.security.credential_cache import ScramCredentialCache
from protocol import ApiKey, ErrorCode, make_request
from protocol.messages import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from protocol.sasl.scram import SCRAM_SHA_256, SCRAM_SHA_512
from tests.fakes.zk import FakeZk
from tests.unit.broker.handler_services import handler_services
from tests.unit.controller_double import controller_double

SALT = b"0123456789abcdef"
SALTED = SCRAM_SHA_256.salted_password("alice-secret", SALT, 8192)
Upsertion = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
Deletion = AlterUserScramCredentialsRequest.ScramCredentialDeletion


class Req:
    def __init__(self, api_key: int, body: Any) -> None:
        self.header = make_request(api_key, 0, 1, "c", body).header
        self.body = body


def ctx(active: bool = True, zk: FakeZk | None = None) -> ScramAdmin:
    return handler_services(
        controller=controller_double(active), zk=zk or FakeZk(), credentials=ScramCredentialCache()
    ).scram


async def alter(ctx: ScramAdmin, deletions: list[Any], upsertions: list[Any]) -> list[Any]:
    body = AlterUserScramCredentialsRequest(deletions=deletions, upsertions=upsertions)
    response = await alter_user_scram_credentials.handle(
        ctx, Req(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, body)
    )
    return [(r.user, r.error_code, r.error_message) for r in response.body.results]


async def describe(ctx: ScramAdmin, users: list[str] | None) -> Any:
    listed = (
        None
        if users is None
        else [DescribeUserScramCredentialsRequest.UserName(name=u) for u in users]
    )
    body = DescribeUserScramCredentialsRequest(users=listed)
    response = await describe_user_scram_credentials.handle(
        ctx, Req(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, body)
    )
    return response.body


def upsert(user: str, mechanism: int = 1, iterations: int = 8192) -> Any:
    return Upsertion(
        name=user, mechanism=mechanism, iterations=iterations, salt=SALT, salted_password=SALTED
    )


async def test_a_broker_that_is_not_the_controller_answers_not_controller() -> None:
    zk = FakeZk()
    results = await alter(ctx(active=False, zk=zk), [Deletion(name="b", mechanism=1)],
                          [upsert("c"), upsert("a")])  # fmt: skip
    message = "This is not the correct controller for this cluster."
    assert results == [(u, ErrorCode.NOT_CONTROLLER, message) for u in ("a", "b", "c")]
    assert zk.entity_configs == {}


async def test_the_controller_writes_zookeeper_and_its_cache_at_once() -> None:
    zk = FakeZk()
    c = ctx(zk=zk)
    assert await alter(c, [], [upsert("alice"), upsert("alice", 2, 4096)]) == [
        ("alice", ErrorCode.NONE, None)
    ]
    expected = SCRAM_SHA_256.credential("alice-secret", 8192, SALT)
    assert c.cache.scram_credential("SCRAM-SHA-256", "alice") == expected
    assert c.cache.scram_credential("SCRAM-SHA-512", "alice") is not None
    assert (await zk.get_user_credentials("alice"))["SCRAM-SHA-256"] == expected
    assert zk.config_changes == ["users/alice"]  # one write, one notification, per user
    body = await describe(c, ["alice"])
    (result,) = body.results
    assert [(i.mechanism, i.iterations) for i in result.credential_infos] == [(1, 8192), (2, 4096)]

    assert await alter(c, [Deletion(name="alice", mechanism=2)], []) == [
        ("alice", ErrorCode.NONE, None)
    ]
    assert set(c.cache.credentials("alice")) == {"SCRAM-SHA-256"}


async def test_users_fail_alone() -> None:
    zk = FakeZk()
    c = ctx(zk=zk)
    results = await alter(
        c,
        [Deletion(name="gone", mechanism=1)],
        [upsert("ok"), upsert("few", iterations=10), upsert("mech", mechanism=3)],
    )
    assert results == [
        ("gone", ErrorCode.RESOURCE_NOT_FOUND,
         "Attempt to delete a user credential that does not exist"),
        ("ok", ErrorCode.NONE, None),
        ("few", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("mech", ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    ]  # fmt: skip
    assert c.cache.users() == ["ok"]
    assert zk.config_changes == ["users/ok"]


async def test_zookeeper_trouble_fails_the_users_it_hit() -> None:
    zk = FakeZk()
    zk.fail_credential_writes = True
    c = ctx(zk=zk)
    (result,) = await alter(c, [], [upsert("alice")])
    assert result[:2] == ("alice", ErrorCode.UNKNOWN_SERVER_ERROR)
    assert c.cache.users() == []


async def test_nothing_secret_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    c = ctx()
    await alter(c, [], [upsert("alice")])
    zk = FakeZk()
    zk.fail_credential_writes = True
    await alter(ctx(zk=zk), [], [upsert("bob")])
    assert "alice" in caplog.text and "bob" in caplog.text  # the logs name users...
    credential = SCRAM_SHA_256.credential("alice-secret", 8192, SALT)
    for secret in (SALTED, SALT, credential.stored_key, credential.server_key):
        assert secret.hex() not in caplog.text
        assert repr(secret) not in caplog.text
        assert credential.to_text() not in caplog.text


async def test_describe_answers_from_this_brokers_cache() -> None:
    c = ctx()
    c.cache.set_user("bob", {"SCRAM-SHA-512": SCRAM_SHA_512.credential("x", 5000, SALT)})
    body = await describe(c, None)
    assert body.error_code == ErrorCode.NONE
    assert [(r.user, r.error_code) for r in body.results] == [("bob", ErrorCode.NONE)]
    assert [(i.mechanism, i.iterations) for i in body.results[0].credential_infos] == [(2, 5000)]
    body = await describe(c, ["nobody"])
    assert [(r.user, r.error_code, r.error_message) for r in body.results] == [
        ("nobody", ErrorCode.RESOURCE_NOT_FOUND,
         "Attempt to describe a user credential that does not exist: nobody")
    ]  # fmt: skip
