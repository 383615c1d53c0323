"""The /config/users/<user> payload of SCRAM credentials (zk.scram_codec): Kafka's entity
config with one key per mechanism, other keys kept, user names sanitized as Kafka does."""

from __future__ import annotations

import json

import pytest

from protocol.sasl.scram import SCRAM_SHA_256, SCRAM_SHA_512
from zk import codec
from zk.scram_codec import (
    credentials_from_config,
    desanitize_user,
    sanitize_user,
    updated_config,
)

SALT = bytes(range(16))
C256 = SCRAM_SHA_256.credential("pw", 4096, SALT)
C512 = SCRAM_SHA_512.credential("pw", 8192, SALT)


@pytest.mark.parametrize(
    ("user", "znode"),
    [
        ("alice", "alice"),
        ("a.b-c_d~e", "a.b-c_d~e"),
        ("CN=a b", "CN%3Da%20b"),
        ("x*y/z+w", "x%2Ay%2Fz%2Bw"),
        ("é", "%C3%A9"),
    ],
)
def test_user_names_are_sanitized_like_kafka(user: str, znode: str) -> None:
    assert sanitize_user(user) == znode
    assert desanitize_user(znode) == user


def test_a_credential_is_written_in_kafkas_entity_config_layout() -> None:
    config = updated_config({}, {"SCRAM-SHA-256": C256}, [])
    payload = json.loads(codec.encode_entity_config(config))
    assert payload == {"version": 1, "config": {"SCRAM-SHA-256": C256.to_text()}}
    assert payload["config"]["SCRAM-SHA-256"].startswith(
        "salt=AAECAwQFBgcICQoLDA0ODw==,stored_key="
    )
    assert payload["config"]["SCRAM-SHA-256"].endswith(",iterations=4096")


def test_updates_keep_other_keys_and_other_mechanisms() -> None:
    start = {"producer_byte_rate": "1024", "SCRAM-SHA-512": C512.to_text()}
    config = updated_config(start, {"SCRAM-SHA-256": C256}, [])
    assert config == {**start, "SCRAM-SHA-256": C256.to_text()}
    config = updated_config(config, {}, ["SCRAM-SHA-512"])
    assert config == {"producer_byte_rate": "1024", "SCRAM-SHA-256": C256.to_text()}
    assert start == {"producer_byte_rate": "1024", "SCRAM-SHA-512": C512.to_text()}  # untouched


def test_only_scram_mechanisms_are_written() -> None:
    with pytest.raises(ValueError, match="PLAIN"):
        updated_config({}, {"PLAIN": C256}, [])
    with pytest.raises(ValueError, match="producer_byte_rate"):
        updated_config({"producer_byte_rate": "1"}, {}, ["producer_byte_rate"])


def test_reading_ignores_other_keys_and_reports_malformed_credentials() -> None:
    config = {
        "producer_byte_rate": "1024",
        "SCRAM-SHA-256": C256.to_text(),
        "SCRAM-SHA-512": "salt=AAEC,iterations=4096",
    }
    found, bad = credentials_from_config(config)
    assert found == {"SCRAM-SHA-256": C256}
    assert set(bad) == {"SCRAM-SHA-512"}
    assert "stored_key" in bad["SCRAM-SHA-512"]
