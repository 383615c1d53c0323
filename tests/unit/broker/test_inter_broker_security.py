"""The broker's own ClientSecurity towards its peers: the inter-broker listener's (or the
control plane's) protocol, its listener.name.<l>.ssl.* keys and the broker's own SASL
credentials from the listener's JAAS key, and the keys named when they are unusable.

The configurations are built from typed values without BrokerConfig's startup checks
across keys, so that what is tested is the derivation alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config.broker_config import BrokerConfig
from broker.config.keys import BROKER_CONFIG_DEFS
from broker.security.inter_broker import (
    control_plane_listener_name,
    control_plane_security,
    inter_broker_security,
    listener_client_security,
)
from config.definitions import typed_values
from config.errors import ConfigError
from tools.certificates import CertificateAuthority

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def config(props: dict[str, str]) -> BrokerConfig:
    base = {"broker.id": "0", "log.dirs": "/unused", "zookeeper.connect": "127.0.0.1:1"}
    merged = {**base, **props}
    return BrokerConfig(typed_values(BROKER_CONFIG_DEFS, merged), merged)


@pytest.fixture
def trust(tmp_path: Path) -> Path:
    path = tmp_path / "ca.crt"
    path.write_bytes(CertificateAuthority("inter-broker test CA").cert_pem)
    return path


def secured(trust: Path, **extra: str) -> dict[str, str]:
    """Client listener EXTERNAL (SASL_SSL) and inter-broker listener INTERNAL (SASL_SSL)
    whose trust store and JAAS key are its own."""
    return {
        "listeners": "EXTERNAL://127.0.0.1:9092,INTERNAL://127.0.0.1:9093",
        "listener.security.protocol.map": "EXTERNAL:SASL_SSL,INTERNAL:SASL_SSL",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "ssl.truststore.type": "JKS",  # the plain key: INTERNAL's own override wins
        "listener.name.internal.ssl.truststore.type": "PEM",
        "listener.name.internal.ssl.truststore.location": str(trust),
        "listener.name.internal.scram-sha-512.sasl.jaas.config": (
            f'{SCRAM} required username="broker" password="b-secret";'
        ),
        **extra,
    }


def test_a_plaintext_cluster_connects_in_plaintext() -> None:
    security = inter_broker_security(config({"listeners": "PLAINTEXT://127.0.0.1:9092"}))
    assert security.security_protocol == "PLAINTEXT"
    assert security.ssl_context is None and security.sasl is None


def test_sasl_ssl_inter_broker_listener_with_its_own_keys(trust: Path) -> None:
    security = inter_broker_security(config(secured(trust)))
    assert security.security_protocol == "SASL_SSL" and security.uses_tls
    assert security.sasl is not None
    assert (security.sasl.mechanism, security.sasl.username, security.sasl.password) == (
        "SCRAM-SHA-512",
        "broker",
        "b-secret",
    )
    assert security.ssl_context is not None and security.ssl_context.check_hostname


def test_the_derivation_is_remembered_per_configuration(trust: Path) -> None:
    first = config(secured(trust))
    assert inter_broker_security(first) is inter_broker_security(first)
    second = config(secured(trust))
    assert inter_broker_security(second) is not inter_broker_security(first)


def test_endpoint_identification_off_on_the_listener(trust: Path) -> None:
    props = secured(trust, **{"listener.name.internal.ssl.endpoint.identification.algorithm": ""})
    context = inter_broker_security(config(props)).ssl_context
    assert context is not None and not context.check_hostname


def test_the_protocol_name_gives_the_listener_without_inter_broker_listener_name() -> None:
    props = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:9092",
        "security.inter.broker.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="pw" user_admin="pw";',
    }
    security = inter_broker_security(config(props))
    assert security.security_protocol == "SASL_PLAINTEXT" and security.sasl is not None
    assert (security.sasl.mechanism, security.sasl.username) == ("PLAIN", "admin")


def test_missing_broker_credentials_name_the_listeners_jaas_key(trust: Path) -> None:
    props = secured(trust)
    del props["listener.name.internal.scram-sha-512.sasl.jaas.config"]
    with pytest.raises(ConfigError) as info:
        inter_broker_security(config(props))
    assert info.value.key == "listener.name.internal.scram-sha-512.sasl.jaas.config"


def test_kafkas_default_gssapi_is_refused_naming_the_mechanism_key(trust: Path) -> None:
    props = secured(trust)
    del props["sasl.mechanism.inter.broker.protocol"]
    with pytest.raises(ConfigError) as info:
        inter_broker_security(config(props))
    assert info.value.key == "sasl.mechanism.inter.broker.protocol" and "GSSAPI" in str(info.value)


def test_a_jks_store_is_refused_naming_the_key_as_given(trust: Path) -> None:
    """The plain ssl.truststore.type=JKS reaches a listener without its own type."""
    props = secured(trust)
    del props["listener.name.internal.ssl.truststore.type"]
    props["listener.name.internal.ssl.truststore.location"] = str(trust.with_suffix(".jks"))
    trust.with_suffix(".jks").write_bytes(b"\xfe\xed\xfe\xed binary")
    with pytest.raises(ConfigError) as info:
        inter_broker_security(config(props))
    assert info.value.key == "ssl.truststore.type" and "PEM" in str(info.value)


def test_bad_jaas_text_is_refused_naming_its_key(trust: Path) -> None:
    props = secured(trust)
    props["listener.name.internal.scram-sha-512.sasl.jaas.config"] = f"{SCRAM} required user"
    with pytest.raises(ConfigError) as info:
        inter_broker_security(config(props))
    assert info.value.key == "listener.name.internal.scram-sha-512.sasl.jaas.config"


def test_the_control_plane_listener_has_its_own_security(trust: Path) -> None:
    props = secured(
        trust,
        listeners="EXTERNAL://127.0.0.1:9092,INTERNAL://127.0.0.1:9093,CONTROL://127.0.0.1:9094",
        **{
            "listener.security.protocol.map": "EXTERNAL:SASL_SSL,INTERNAL:SASL_SSL,CONTROL:SSL",
            "control.plane.listener.name": "CONTROL",
            "listener.name.control.ssl.truststore.type": "PEM",
            "listener.name.control.ssl.truststore.location": str(trust),
        },
    )
    cfg = config(props)
    assert control_plane_listener_name(cfg) == "CONTROL"
    control = control_plane_security(cfg)
    assert control.security_protocol == "SSL" and control.sasl is None and control.uses_tls
    assert inter_broker_security(cfg).security_protocol == "SASL_SSL"
    # without a control-plane listener the controller uses the inter-broker one
    del props["control.plane.listener.name"]
    plain_control = config(props)
    assert control_plane_listener_name(plain_control) == "INTERNAL"
    assert control_plane_security(plain_control).security_protocol == "SASL_SSL"


def test_any_listener_can_be_asked_for_with_its_own_keys(trust: Path) -> None:
    cfg = config(secured(trust))
    with pytest.raises(ConfigError) as info:  # EXTERNAL has no JAAS key of its own
        listener_client_security(cfg, "EXTERNAL")
    assert info.value.key == "listener.name.external.scram-sha-512.sasl.jaas.config"
