"""``cluster up --security sasl_*`` gives its admin user SCRAM credentials in a real
ZooKeeper before any broker runs: Kafka's /config/users/<user> znode, holding for each
mechanism a credential that the generated password (and only it) proves."""

from __future__ import annotations

import json
from pathlib import Path

from kazoo.client import KazooClient

from protocol.sasl.scram import SCRAM_MECHANISMS, ScramCredential
from tools.cluster_security import ADMIN_USER, CREDENTIAL_MECHANISMS, prepare_security


def test_the_admin_user_is_created_before_the_brokers(
    zk_connect: str, kazoo_client: KazooClient, tmp_path: Path
) -> None:
    security = prepare_security(tmp_path, "SASL_PLAINTEXT", brokers=1)
    security.create_users(zk_connect, timeout_s=15)
    data, _ = kazoo_client.get(f"/config/users/{ADMIN_USER}")
    config = json.loads(data)["config"]
    assert sorted(config) == sorted(CREDENTIAL_MECHANISMS)
    for name, text in config.items():
        stored = ScramCredential.from_text(text)
        mechanism = SCRAM_MECHANISMS[name]
        proven = mechanism.credential(security.admin_password, stored.iterations, stored.salt)
        assert proven == stored
        wrong = mechanism.credential(security.admin_password + "x", stored.iterations, stored.salt)
        assert wrong != stored
