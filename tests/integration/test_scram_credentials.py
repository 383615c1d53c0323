"""SCRAM credentials on a live 2-broker cluster: written with ``minikafka configs``
(through the brokers, and through ZooKeeper before they started) and with confluent-kafka's
AdminClient, and seen by every broker's credential cache without a restart.

Each broker's cache is observed through DescribeUserScramCredentials asked of that
broker: it answers from its own cache. The stored keys are checked against the password
with the stored salt, which proves the client's salting and the broker's derivation agree.
Every wait is a poll with a deadline.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from protocol import ApiKey, ErrorCode
from protocol.messages import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from protocol.sasl import scram
from protocol.sasl.scram import SCRAM_SHA_256, SCRAM_SHA_512, ScramCredential
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.zk_fixtures import kazoo_session
from tests.polling import wait_until
from tools.main import main
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(120)

#: a change must reach every broker within this (the issue asks for a second; slack
#: for a loaded machine)
PROPAGATION_S = 3.0
SHA256, SHA512 = SCRAM_SHA_256.wire_type, SCRAM_SHA_512.wire_type


def _create_admin_before_start(zk_connect: str) -> None:
    """The first credential, written in ZooKeeper with no broker running; its change
    notification is removed, so that only the brokers' startup load can find it."""
    command = [
        "configs", "--zookeeper", zk_connect, "--entity-type", "users", "--entity-name",
        "admin", "--alter", "--add-config", "SCRAM-SHA-512=[iterations=5000,password=admin-secret]",
    ]  # fmt: skip
    assert main(command) == 0
    with kazoo_session(zk_connect) as zk:
        for name in zk.get_children("/config/changes"):
            zk.delete(f"/config/changes/{name}")


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(
        zookeeper, tmp_path_factory.mktemp("scram"), 2, prepare=_create_admin_before_start
    )


def described(c: TestCluster, broker: int, user: str) -> tuple[int, list[tuple[int, int]]]:
    """(error code, [(mechanism id, iterations)]) broker ``broker`` reports for ``user``."""
    body = c.request(
        broker,
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        0,
        DescribeUserScramCredentialsRequest(
            users=[DescribeUserScramCredentialsRequest.UserName(name=user)]
        ),
    )
    (result,) = body.results
    return result.error_code, sorted((i.mechanism, i.iterations) for i in result.credential_infos)


def everywhere(c: TestCluster, user: str, expected: tuple[int, list[tuple[int, int]]]) -> None:
    """Every broker reports ``expected`` for ``user`` within PROPAGATION_S."""
    for broker in c.broker_ids:
        wait_until(
            lambda broker=broker: described(c, broker, user) == expected,  # type: ignore[misc]
            timeout=PROPAGATION_S,
            what=f"broker {broker} reporting {expected} for {user}",
        )


def stored(c: TestCluster, user: str) -> dict[str, ScramCredential]:
    with kazoo_session(c.zk_connect) as zk:
        config = json.loads(zk.get(f"/config/users/{user}")[0])["config"]
    return {k: ScramCredential.from_text(v) for k, v in config.items()}


def derived_from(
    credential: ScramCredential, mechanism: scram.ScramMechanism, password: str
) -> bool:
    return credential == mechanism.credential(password, credential.iterations, credential.salt)


def configs(c: TestCluster, *args: str) -> list[str]:
    return [
        "configs", "--bootstrap-server", c.layout.bootstrap_servers,
        "--entity-type", "users", *args,
    ]  # fmt: skip


def test_credentials_written_before_start_are_loaded_by_every_broker(c: TestCluster) -> None:
    for broker in c.broker_ids:
        assert described(c, broker, "admin") == (ErrorCode.NONE, [(SHA512, 5000)])
    assert derived_from(stored(c, "admin")["SCRAM-SHA-512"], SCRAM_SHA_512, "admin-secret")


def test_configs_tool_adds_changes_and_deletes_on_every_broker(
    c: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    alice = configs(c, "--entity-name", "alice")
    add = "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=a512]"
    assert main([*alice, "--alter", "--add-config", add]) == 0
    assert capsys.readouterr().out == "Completed updating config for user alice.\n"
    everywhere(c, "alice", (ErrorCode.NONE, [(SHA256, 8192), (SHA512, 4096)]))
    credentials = stored(c, "alice")
    assert derived_from(credentials["SCRAM-SHA-256"], SCRAM_SHA_256, "alice-secret")
    assert derived_from(credentials["SCRAM-SHA-512"], SCRAM_SHA_512, "a512")
    assert main([*alice, "--describe"]) == 0
    assert capsys.readouterr().out == (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
    )

    # changed: a new password and iteration count replace the old credential
    change = "SCRAM-SHA-256=[iterations=4500,password=alice-new]"
    assert main([*alice, "--alter", "--add-config", change]) == 0
    everywhere(c, "alice", (ErrorCode.NONE, [(SHA256, 4500), (SHA512, 4096)]))
    assert derived_from(stored(c, "alice")["SCRAM-SHA-256"], SCRAM_SHA_256, "alice-new")

    assert main([*alice, "--alter", "--delete-config", "SCRAM-SHA-512"]) == 0
    everywhere(c, "alice", (ErrorCode.NONE, [(SHA256, 4500)]))
    assert main([*alice, "--alter", "--delete-config", "SCRAM-SHA-256"]) == 0
    everywhere(c, "alice", (ErrorCode.RESOURCE_NOT_FOUND, []))
    capsys.readouterr()
    assert main([*alice, "--describe"]) == 0
    assert capsys.readouterr().out == ""  # no credentials: nothing, as Kafka's tool


def test_a_change_reaches_every_broker_within_a_second(c: TestCluster) -> None:
    assert main([*configs(c, "--entity-name", "quick"), "--alter", "--add-config",
                 "SCRAM-SHA-256=[password=q]"]) == 0  # fmt: skip
    # counted from the controller's answer: the write is in ZooKeeper by then
    started = time.monotonic()
    wait_until(
        lambda: all(described(c, b, "quick")[0] == ErrorCode.NONE for b in c.broker_ids),
        timeout=1.0,
        what="every broker knowing user quick within a second",
    )
    assert time.monotonic() - started < 1.0


def test_errors_of_the_configs_tool(c: TestCluster, capsys: pytest.CaptureFixture[str]) -> None:
    bob = configs(c, "--entity-name", "bob")
    add = "SCRAM-SHA-256=[iterations=100,password=bob-secret]"
    assert main([*bob, "--alter", "--add-config", add]) == 1
    assert "UNACCEPTABLE_CREDENTIAL: Too few iterations" in capsys.readouterr().err
    assert main([*bob, "--alter", "--delete-config", "SCRAM-SHA-512"]) == 1
    assert "RESOURCE_NOT_FOUND" in capsys.readouterr().err
    for broker in c.broker_ids:
        assert described(c, broker, "bob") == (ErrorCode.RESOURCE_NOT_FOUND, [])


def test_only_the_controller_alters(c: TestCluster) -> None:
    controller = wait_until(c.controller, what="a controller")
    other = next(b for b in c.broker_ids if b != controller)
    request = AlterUserScramCredentialsRequest(
        deletions=[AlterUserScramCredentialsRequest.ScramCredentialDeletion(name="z", mechanism=1)],
        upsertions=[],
    )
    body = c.request(other, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, request)
    assert [(r.user, r.error_code) for r in body.results] == [("z", ErrorCode.NOT_CONTROLLER)]
    body = c.request(controller, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, request)
    assert [(r.user, r.error_code) for r in body.results] == [("z", ErrorCode.RESOURCE_NOT_FOUND)]


def _result(future: Any) -> Any:
    return future.result(timeout=30)


def test_confluent_kafka_admin_client_alters_and_describes(c: TestCluster) -> None:
    admin = AdminClient({"bootstrap.servers": c.layout.bootstrap_servers})
    upsert = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 6000), b"carol-secret"
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        assert _result(future) is None
    everywhere(c, "carol", (ErrorCode.NONE, [(SHA256, 6000)]))
    # librdkafka salted the password itself: the keys still derive from it
    assert derived_from(stored(c, "carol")["SCRAM-SHA-256"], SCRAM_SHA_256, "carol-secret")
    futures: dict[str, Any] = admin.describe_user_scram_credentials(["carol"])  # type: ignore[assignment]
    description = _result(futures["carol"])
    infos = [(i.mechanism, i.iterations) for i in description.scram_credential_infos]
    assert infos == [(ScramMechanism.SCRAM_SHA_256, 6000)]
    deletion = UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)
    for future in admin.alter_user_scram_credentials([deletion]).values():
        assert _result(future) is None
    everywhere(c, "carol", (ErrorCode.RESOURCE_NOT_FOUND, []))


def test_a_malformed_user_znode_does_not_stop_later_changes(c: TestCluster) -> None:
    with kazoo_session(c.zk_connect) as zk:
        zk.create("/config/users/mallory", b"{not json")
        zk.create(
            "/config/changes/config_change_",
            b'{"version":2,"entity_path":"users/mallory"}',
            sequence=True,
        )
    assert main([*configs(c, "--entity-name", "after"), "--alter", "--add-config",
                 "SCRAM-SHA-512=[password=p]"]) == 0  # fmt: skip
    everywhere(c, "after", (ErrorCode.NONE, [(SHA512, 4096)]))
    for broker in c.broker_ids:
        assert c.is_running(broker)
        assert described(c, broker, "mallory") == (ErrorCode.RESOURCE_NOT_FOUND, [])
