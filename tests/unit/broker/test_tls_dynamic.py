"""Dynamic TLS stores: which listener keys AlterConfigs accepts, the refusal of a key store
that does not load, the reload decision, and secrets kept out of the change log line."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.config.alter import AlterRefused, validate_broker
from broker.config_changes import redacted
from broker.metrics import BrokerMetrics
from broker.network import NetworkSettings, SocketServer
from broker.network.request_channel import Request
from config.errors import ConfigError
from protocol import ErrorCode
from tests.unit.broker.tls_doubles import write_stores
from tools.certificates import CertificateAuthority


def test_listener_prefixed_store_keys_are_dynamic() -> None:
    validate_broker(
        "0",
        {
            "listener.name.secure.ssl.keystore.location": "/etc/new.pem",
            "listener.name.secure.ssl.key.password": "pw",
            "listener.name.secure.ssl.truststore.certificates": "-----BEGIN...",
        },
    )


def test_store_keys_are_per_broker_never_the_cluster_default() -> None:
    key = "listener.name.secure.ssl.keystore.location"
    with pytest.raises(AlterRefused) as info:
        validate_broker("", {key: "/etc/new.pem"})
    assert info.value.error_code == ErrorCode.INVALID_REQUEST
    assert "broker id must be specified" in info.value.message and key in info.value.message


@pytest.mark.parametrize("key", ["ssl.keystore.location", "listener.name.secure.ssl.client.auth"])
def test_plain_store_keys_and_other_listener_ssl_keys_need_a_restart(key: str) -> None:
    with pytest.raises(AlterRefused) as info:
        validate_broker("0", {key: "required"})
    assert info.value.error_code == ErrorCode.INVALID_REQUEST
    assert f"Cannot update these configs dynamically: Set({key})" in info.value.message


def test_a_prefixed_value_is_checked_naming_the_prefixed_key() -> None:
    with pytest.raises(AlterRefused) as info:
        validate_broker("0", {"listener.name.secure.ssl.enabled.protocols": "SSLv3"})
    # ssl.enabled.protocols is not dynamic: refused as such before its value is looked at
    assert "listener.name.secure.ssl.enabled.protocols" in info.value.message


def test_passwords_and_inline_keys_stay_out_of_the_log_line() -> None:
    config = {
        "listener.name.secure.ssl.keystore.location": "/etc/new.pem",
        "listener.name.secure.ssl.key.password": "hunter2",
        "listener.name.secure.ssl.keystore.key": "-----BEGIN PRIVATE KEY-----",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": "user_admin=secret",
        "log.retention.ms": "1000",
    }
    shown = str(redacted(config))
    assert "hunter2" not in shown and "PRIVATE KEY" not in shown and "secret" not in shown
    assert "/etc/new.pem" in shown and "1000" in shown


def _config(directory: Path, ca: CertificateAuthority) -> BrokerConfig:
    keystore, truststore = write_stores(directory, ca, ca.issue("b", hosts=["127.0.0.1"]))
    return BrokerConfig.from_properties(
        {
            "listeners": "SECURE://127.0.0.1:0",
            "listener.security.protocol.map": "SECURE:SSL",
            "log.dirs": str(directory / "logs"),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(truststore),
        }
    )


async def _unused(request: Request) -> None:
    return None


def test_reconfigure_swaps_the_context_of_a_listener_whose_stores_changed(
    tmp_path: Path,
) -> None:
    ca = CertificateAuthority()
    old = _config(tmp_path, ca)
    server = SocketServer(old, _unused, metrics=BrokerMetrics())
    before = server.tls_context("SECURE")
    server.reconfigure(old, old.with_dynamic(default=False, config={"log.retention.ms": "5"}))
    assert server.tls_context("SECURE") is before  # nothing of TLS changed
    renewed = tmp_path / "renewed"
    renewed.mkdir()
    keystore, _ = write_stores(renewed, ca, ca.issue("b2", hosts=["127.0.0.1"]))
    key = "listener.name.secure.ssl.keystore.location"
    new = old.with_dynamic(default=False, config={key: str(keystore)})
    server.reconfigure(old, new)
    assert server.tls_context("SECURE") is not before
    current = server.tls_context("SECURE")
    broken = old.with_dynamic(default=False, config={key: str(tmp_path / "absent.pem")})
    server.reconfigure(new, broken)
    assert server.tls_context("SECURE") is current  # a store that does not load: kept
    with pytest.raises(ConfigError) as info:
        broken.validate_tls()
    assert key in str(info.value)


@pytest.mark.parametrize(("idle_ms", "bound_s"), [("3000", 3.0), ("600000", 10.0)])
def test_the_handshake_bound_is_the_idle_timeout_up_to_ten_seconds(
    tmp_path: Path, idle_ms: str, bound_s: float
) -> None:
    config = BrokerConfig.from_properties(
        {"log.dirs": str(tmp_path), "connections.max.idle.ms": idle_ms}
    )
    assert NetworkSettings.from_config(config).processor.handshake_timeout_s == bound_s
