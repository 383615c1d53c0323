"""ScramCredentialCache: what SASL/SCRAM logins are checked against, loaded whole at
startup and updated per user from the change notifications (through the broker's
DynamicConfigApplier), without logging any stored value."""

from __future__ import annotations

import logging

import pytest

from broker.config_changes import DynamicConfigApplier
from broker.security.credential_cache import ScramCredentialCache
from protocol.sasl.scram import SCRAM_SHA_256, SCRAM_SHA_512
from tests.unit.broker.handler_services import handler_services
from zk.scram_codec import updated_config

SALT = b"salt-salt-salt-!"
A256 = SCRAM_SHA_256.credential("a", 4096, SALT)
A512 = SCRAM_SHA_512.credential("a", 8192, SALT)
B256 = SCRAM_SHA_256.credential("b", 5000, SALT)


def test_an_empty_cache_knows_nobody() -> None:
    cache = ScramCredentialCache()
    assert cache.scram_credential("SCRAM-SHA-256", "alice") is None
    assert cache.users() == []
    assert dict(cache.credentials("alice")) == {}


def test_the_startup_load_replaces_everything() -> None:
    cache = ScramCredentialCache()
    cache.set_user("old", {"SCRAM-SHA-256": B256})
    cache.replace_all({"alice": {"SCRAM-SHA-256": A256, "SCRAM-SHA-512": A512}, "empty": {}})
    assert cache.users() == ["alice"]
    assert cache.scram_credential("SCRAM-SHA-512", "alice") == A512
    assert cache.scram_credential("SCRAM-SHA-256", "old") is None
    assert cache.scram_credential("PLAIN", "alice") is None


def test_a_user_entity_config_adds_changes_and_removes() -> None:
    cache = ScramCredentialCache()
    cache.apply_entity_config("alice", updated_config({}, {"SCRAM-SHA-256": A256}, []))
    assert cache.scram_credential("SCRAM-SHA-256", "alice") == A256
    # changed: the new credential replaces the old one, the other mechanism appears
    changed = updated_config({}, {"SCRAM-SHA-256": B256, "SCRAM-SHA-512": A512}, [])
    cache.apply_entity_config("alice", changed)
    assert cache.scram_credential("SCRAM-SHA-256", "alice") == B256
    assert cache.scram_credential("SCRAM-SHA-512", "alice") == A512
    # a mechanism deleted in ZooKeeper is gone here too
    cache.apply_entity_config("alice", {"SCRAM-SHA-512": A512.to_text()})
    assert cache.scram_credential("SCRAM-SHA-256", "alice") is None
    # quota keys alone: the user has no credential left, and leaves the cache
    cache.apply_entity_config("alice", {"producer_byte_rate": "10"})
    assert cache.users() == []


def test_entities_are_sanitized_names() -> None:
    cache = ScramCredentialCache()
    cache.apply_entity_config("CN%3Da%20b", {"SCRAM-SHA-256": A256.to_text()})
    assert cache.scram_credential("SCRAM-SHA-256", "CN=a b") == A256


def test_a_malformed_credential_is_skipped_and_its_values_never_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = ScramCredentialCache()
    caplog.set_level(logging.DEBUG)
    bad = "salt=c2VjcmV0LXNhbHQ=,stored_key=!!,server_key=x,iterations=4096"
    cache.apply_entity_config("alice", {"SCRAM-SHA-256": A256.to_text(), "SCRAM-SHA-512": bad})
    assert cache.credentials("alice") == {"SCRAM-SHA-256": A256}
    assert "SCRAM-SHA-512" in caplog.text and "alice" in caplog.text
    assert "c2VjcmV0LXNhbHQ" not in caplog.text
    assert A256.to_text().split(",")[1] not in caplog.text  # the stored key


def test_the_broker_routes_users_entities_to_its_cache() -> None:
    cache = ScramCredentialCache()
    services = handler_services(credentials=cache)
    applier: DynamicConfigApplier = services.configs.applier
    applier.apply("users", "bob", {"SCRAM-SHA-512": A512.to_text()})
    assert cache.scram_credential("SCRAM-SHA-512", "bob") == A512
    assert services.scram.cache is cache
    applier.apply("clients", "bob", {"SCRAM-SHA-256": A256.to_text()})  # not a user
    assert cache.scram_credential("SCRAM-SHA-256", "bob") is None
