"""A TLS listener's server context from its ssl.* keys: PEM stores, refusals, ciphers."""

from __future__ import annotations

import logging
import ssl
import tempfile
from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.security.tls import (
    CIPHER_NAMES,
    cipher_string,
    listener_context,
    server_context,
    tls_settings,
)
from config.errors import ConfigError
from tests.unit.broker.tls_doubles import (
    MemoryClient,
    client_context,
    listener,
    pem_listener,
    server_session,
    write_stores,
)
from tools.certificates import CertificateAuthority


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority()


def handshakes(context: ssl.SSLContext, ca: CertificateAuthority, tmp_path: Path) -> bool:
    """Whether a client trusting ``ca`` completes a handshake with ``context``."""
    peer = MemoryClient(client_context(ca, None, tmp_path), server_session(context))
    try:
        peer.handshake()
        return peer.server.handshake_done
    finally:
        peer.close()


def test_pem_keystore_file(ca: CertificateAuthority, tmp_path: Path) -> None:
    context = listener_context(pem_listener(tmp_path, ca))
    assert context.verify_mode is ssl.CERT_NONE
    assert handshakes(context, ca, tmp_path)


def test_inline_chain_and_key(
    ca: CertificateAuthority, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    issued = ca.issue("broker", hosts=["127.0.0.1"])
    config = listener(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": issued.cert_pem.decode(),
            "ssl.keystore.key": issued.key_pem.decode(),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": ca.cert_pem.decode(),
        }
    )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    context = listener_context(config)
    assert handshakes(context, ca, tmp_path)
    assert list(scratch.iterdir()) == []  # the key's file is gone once loaded


def test_encrypted_key_needs_its_password(ca: CertificateAuthority, tmp_path: Path) -> None:
    issued = ca.issue("broker", hosts=["127.0.0.1"], key_password="s3cret")
    keystore, _ = write_stores(tmp_path, ca, issued)
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore)}
    assert handshakes(
        listener_context(listener({**props, "ssl.key.password": "s3cret"})), ca, tmp_path
    )
    for wrong in ({}, {"ssl.key.password": "nope"}):
        with pytest.raises(ConfigError) as info:
            listener_context(listener({**props, **wrong}))
        assert info.value.key == "ssl.keystore.location"
        assert "s3cret" not in str(info.value)


def test_the_default_jks_keystore_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        tls_settings(listener({"ssl.keystore.location": "/x/broker.jks"}))
    assert info.value.key == "ssl.keystore.type"
    assert "PEM" in str(info.value)


def test_a_prefixed_pkcs12_keystore_is_refused_naming_the_prefixed_key() -> None:
    props = {
        "ssl.keystore.type": "PEM",
        "listener.name.secure.ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": "/x/broker.p12",
    }
    with pytest.raises(ConfigError) as info:
        tls_settings(listener(props))
    assert info.value.key == "listener.name.secure.ssl.keystore.type"
    assert "PKCS12" in str(info.value) and "PEM" in str(info.value)


def test_a_jks_truststore_is_refused(ca: CertificateAuthority, tmp_path: Path) -> None:
    config = pem_listener(tmp_path, ca, **{"ssl.truststore.type": "JKS"})
    with pytest.raises(ConfigError) as info:
        tls_settings(config)
    assert info.value.key == "ssl.truststore.type"


def test_a_listener_without_keystore_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        tls_settings(listener({"ssl.keystore.type": "PEM"}))
    assert info.value.key == "ssl.keystore.location"


def test_a_missing_keystore_file_is_refused_naming_the_key(tmp_path: Path) -> None:
    props = {
        "ssl.keystore.type": "PEM",
        "listener.name.secure.ssl.keystore.location": str(tmp_path / "absent.pem"),
    }
    with pytest.raises(ConfigError) as info:
        server_context(tls_settings(listener(props)))
    assert info.value.key == "listener.name.secure.ssl.keystore.location"


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("none", ssl.CERT_NONE), ("requested", ssl.CERT_OPTIONAL), ("required", ssl.CERT_REQUIRED)],
)
def test_client_auth_modes(
    ca: CertificateAuthority, tmp_path: Path, mode: str, expected: ssl.VerifyMode
) -> None:
    context = listener_context(pem_listener(tmp_path, ca, **{"ssl.client.auth": mode}))
    assert context.verify_mode is expected


def test_enabled_protocols_set_the_version_range(ca: CertificateAuthority, tmp_path: Path) -> None:
    context = listener_context(pem_listener(tmp_path, ca, **{"ssl.enabled.protocols": "TLSv1.2"}))
    assert context.minimum_version is ssl.TLSVersion.TLSv1_2
    assert context.maximum_version is ssl.TLSVersion.TLSv1_2
    peer = MemoryClient(client_context(ca, None, tmp_path), server_session(context))
    try:
        peer.handshake()
        assert peer.obj.version() == "TLSv1.2"
    finally:
        peer.close()


def test_cipher_suites_map_iana_names_to_openssl_names() -> None:
    names = ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"]
    assert cipher_string("ssl.cipher.suites", names) == (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        ("TLS_AES_256_GCM_SHA384",),
    )
    assert cipher_string("ssl.cipher.suites", []) == (None, ())


def test_every_mapped_suite_is_known_to_openssl() -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.set_ciphers(":".join(CIPHER_NAMES.values()))
    offered = {cipher["name"] for cipher in context.get_ciphers()}
    assert set(CIPHER_NAMES.values()) <= offered


def test_an_unknown_suite_is_refused_naming_the_key(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    config = pem_listener(
        tmp_path, ca, **{"listener.name.secure.ssl.cipher.suites": "TLS_BOGUS_WITH_NOTHING"}
    )
    with pytest.raises(ConfigError) as info:
        tls_settings(config)
    assert info.value.key == "listener.name.secure.ssl.cipher.suites"


def test_restricted_tls12_suites_are_the_only_ones_offered(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    suite = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
    config = pem_listener(
        tmp_path, ca, **{"ssl.cipher.suites": suite, "ssl.enabled.protocols": "TLSv1.2"}
    )
    context = listener_context(config)
    peer = MemoryClient(client_context(ca, None, tmp_path), server_session(context))
    try:
        peer.handshake()
        cipher = peer.obj.cipher()
        assert cipher is not None and cipher[0] == CIPHER_NAMES[suite]
    finally:
        peer.close()


def test_tls13_suites_cannot_be_restricted_and_say_so(
    ca: CertificateAuthority, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = pem_listener(tmp_path, ca, **{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"})
    with caplog.at_level(logging.WARNING, logger="broker.security.tls"):
        listener_context(config)
    assert "cannot restrict TLS 1.3" in caplog.text
    assert "TLS_AES_128_GCM_SHA256" in caplog.text


def test_a_broker_config_with_a_default_ssl_listener_is_refused_at_load() -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig.from_properties({"listeners": "SSL://:9093"})
    assert info.value.key == "ssl.keystore.type"


def test_a_broker_config_validates_every_tls_listener(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    keystore, _ = write_stores(tmp_path, ca, ca.issue("b", hosts=["127.0.0.1"]))
    props = {
        "listeners": "PLAIN://127.0.0.1:0,SECURE://127.0.0.1:0",
        "listener.security.protocol.map": "PLAIN:PLAINTEXT,SECURE:SASL_SSL",
        "listener.name.secure.ssl.keystore.type": "PEM",
        "listener.name.secure.ssl.keystore.location": str(keystore),
        "listener.name.secure.ssl.principal.mapping.rules": "RULE:^CN=(.*)$/$1/,DEFAULT",
    }
    BrokerConfig.from_properties(props)  # PLAIN keeps the default JKS type: not TLS
    bad = {**props, "listener.name.secure.ssl.principal.mapping.rules": "RULE:nope"}
    with pytest.raises(ConfigError) as info:
        BrokerConfig.from_properties(bad)
    assert info.value.key == "listener.name.secure.ssl.principal.mapping.rules"


@pytest.mark.parametrize("store", ["keystore", "truststore"])
def test_a_pem_store_password_is_refused(
    ca: CertificateAuthority, tmp_path: Path, store: str
) -> None:
    config = pem_listener(tmp_path, ca, **{f"listener.name.secure.ssl.{store}.password": "pw"})
    with pytest.raises(ConfigError) as info:
        tls_settings(config)
    assert info.value.key == f"listener.name.secure.ssl.{store}.password"
    assert "pw" not in str(info.value).replace("password", "")
