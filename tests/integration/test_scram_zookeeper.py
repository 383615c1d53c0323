"""SCRAM credentials written to a real ZooKeeper with no broker running (zk.scram and
``minikafka configs --zookeeper``): Kafka's znode and notification payloads, conditional
rewrites that keep other keys."""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient

from protocol.sasl.scram import SCRAM_SHA_256, SCRAM_SHA_512, ScramCredential
from tools.main import main
from zk import scram
from zk.session import ZkSession


def _notifications(kazoo: KazooClient) -> list[dict[str, object]]:
    names = sorted(kazoo.get_children("/config/changes"))
    return [json.loads(kazoo.get(f"/config/changes/{n}")[0]) for n in names]


def test_create_scram_user_writes_kafkas_znode_and_notification(
    zk_connect: str, kazoo_client: KazooClient
) -> None:
    scram.create_scram_user(
        zk_connect, "admin", "admin-secret", ["SCRAM-SHA-256", "SCRAM-SHA-512"], 8192, 10.0
    )
    data, _ = kazoo_client.get("/config/users/admin")
    stored = json.loads(data)
    assert stored["version"] == 1
    assert set(stored["config"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    for name, mechanism in (("SCRAM-SHA-256", SCRAM_SHA_256), ("SCRAM-SHA-512", SCRAM_SHA_512)):
        credential = ScramCredential.from_text(stored["config"][name])
        assert credential.iterations == 8192
        # the stored keys are the ones the password derives with the stored salt
        assert credential == mechanism.credential("admin-secret", 8192, credential.salt)
    assert b"admin-secret" not in data
    assert _notifications(kazoo_client) == [{"version": 2, "entity_path": "users/admin"}]


def test_alter_keeps_other_mechanisms_and_quota_keys(
    zk_connect: str, kazoo_client: KazooClient
) -> None:
    kazoo_client.create(
        "/config/users/bob",
        b'{"version":1,"config":{"producer_byte_rate":"1024"}}',
        makepath=True,
    )
    session = ZkSession.connect(zk_connect, connect_timeout_s=10.0)
    try:
        first = SCRAM_SHA_256.credential("one", 4096)
        second = SCRAM_SHA_512.credential("two", 4096)
        scram.alter_user_credentials(session, "bob", {"SCRAM-SHA-256": first}, [])
        scram.alter_user_credentials(session, "bob", {"SCRAM-SHA-512": second}, [])
        assert scram.get_user_credentials(session, "bob") == {
            "SCRAM-SHA-256": first,
            "SCRAM-SHA-512": second,
        }
        scram.alter_user_credentials(session, "bob", {}, ["SCRAM-SHA-256"])
        assert scram.get_user_credentials(session, "bob") == {"SCRAM-SHA-512": second}
        config = json.loads(kazoo_client.get("/config/users/bob")[0])["config"]
        assert config["producer_byte_rate"] == "1024"
        assert scram.get_all_user_credentials(session) == {"bob": {"SCRAM-SHA-512": second}}
        kazoo_client.create("/config/users/mallory", b"{not json")  # skipped, not fatal
        assert scram.get_all_user_credentials(session) == {"bob": {"SCRAM-SHA-512": second}}
        assert len(_notifications(kazoo_client)) == 3
    finally:
        session.close()


def test_user_names_are_sanitized_in_paths_and_notifications(
    zk_connect: str, kazoo_client: KazooClient
) -> None:
    session = ZkSession.connect(zk_connect, connect_timeout_s=10.0)
    try:
        credential = SCRAM_SHA_256.credential("pw", 4096)
        scram.alter_user_credentials(session, "CN=a b/c*", {"SCRAM-SHA-256": credential}, [])
        assert kazoo_client.get_children("/config/users") == ["CN%3Da%20b%2Fc%2A"]
        assert _notifications(kazoo_client) == [
            {"version": 2, "entity_path": "users/CN%3Da%20b%2Fc%2A"}
        ]
        assert scram.get_scram_users(session) == ["CN=a b/c*"]
        assert scram.get_user_credentials(session, "CN=a b/c*") == {"SCRAM-SHA-256": credential}
    finally:
        session.close()


def test_configs_tool_with_zookeeper_and_no_broker(
    zk_connect: str, kazoo_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    user = ["configs", "--zookeeper", zk_connect, "--entity-type", "users", "--entity-name", "al"]
    add = "SCRAM-SHA-256=[iterations=8192,password=al-secret],SCRAM-SHA-512=[password=x]"
    assert main([*user, "--alter", "--add-config", add]) == 0
    assert capsys.readouterr().out == "Completed updating config for entity: user-principal 'al'.\n"
    config = json.loads(kazoo_client.get("/config/users/al")[0])["config"]
    credential = ScramCredential.from_text(config["SCRAM-SHA-256"])
    assert credential == SCRAM_SHA_256.credential("al-secret", 8192, credential.salt)
    assert ScramCredential.from_text(config["SCRAM-SHA-512"]).iterations == 4096  # the default
    assert main([*user, "--describe"]) == 0
    assert capsys.readouterr().out == (
        "SCRAM credential configs for user-principal 'al' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
    )
    assert main([*user, "--alter", "--delete-config", "SCRAM-SHA-512"]) == 0
    capsys.readouterr()
    assert main([*user[:-2], "--describe"]) == 0  # every user
    assert capsys.readouterr().out == (
        "SCRAM credential configs for user-principal 'al' are SCRAM-SHA-256=iterations=8192\n"
    )
    assert len(_notifications(kazoo_client)) == 2
    # refused before anything is written
    assert main([*user, "--alter", "--add-config", "SCRAM-SHA-256=[iterations=99,password=p]"]) == 1
    assert "iterations must be between 4096 and 16384" in capsys.readouterr().err
    assert main([*user, "--alter", "--delete-config", "SCRAM-SHA-512"]) == 1
    assert "no SCRAM-SHA-512 credential to delete" in capsys.readouterr().err
    topic = ["configs", "--zookeeper", zk_connect, "--entity-type", "topics", "--entity-name", "t"]
    assert main([*topic, "--describe"]) == 1
    assert "--zookeeper is only supported for users' SCRAM credentials" in capsys.readouterr().err
    assert len(_notifications(kazoo_client)) == 2
