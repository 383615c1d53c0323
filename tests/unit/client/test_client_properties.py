"""Kafka's client properties to a ClientSecurity: protocols, SASL credentials from JAAS or
librdkafka's keys, TLS contexts from PEM stores, and refusals that name the key.

The TLS contexts are checked by a real handshake in memory (``ssl.MemoryBIO``) with a
broker certificate from a local CA: trust, host name checks and client certificates are
what OpenSSL decides, not attributes read back."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import pytest

from client.properties import (
    ClientPropertyError,
    client_security,
    client_ssl_context,
    jaas_credentials,
    parse_jaas_config,
)
from tools.certificates import CertificateAuthority, IssuedCertificate

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def refused(props: Mapping[str, str]) -> ClientPropertyError:
    with pytest.raises(ClientPropertyError) as info:
        client_security(props)
    return info.value


# -- protocol and SASL ---------------------------------------------------------------------


def test_no_properties_is_plaintext() -> None:
    security = client_security({})
    assert security.security_protocol == "PLAINTEXT"
    assert not security.uses_tls and not security.uses_sasl


def test_an_unknown_protocol_is_refused_naming_the_key() -> None:
    error = refused({"security.protocol": "TLS"})
    assert error.key == "security.protocol" and "'TLS'" in str(error)


def test_sasl_credentials_come_from_the_jaas_line() -> None:
    security = client_security(
        {
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{SCRAM} required username="alice" password="s3cr=t;";',
        }
    )
    assert security.security_protocol == "SASL_PLAINTEXT" and security.uses_sasl
    assert security.sasl is not None
    assert (security.sasl.mechanism, security.sasl.username, security.sasl.password) == (
        "SCRAM-SHA-512",
        "alice",
        "s3cr=t;",
    )
    assert "s3cr" not in repr(security.sasl)


def test_librdkafka_username_and_password_and_plural_mechanisms() -> None:
    security = client_security(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "bob",
            "sasl.password": "pw",
        }
    )
    assert security.sasl is not None
    assert (security.sasl.mechanism, security.sasl.username, security.sasl.password) == (
        "PLAIN",
        "bob",
        "pw",
    )


def test_sasl_without_a_mechanism_is_gssapi_which_is_refused() -> None:
    error = refused({"security.protocol": "SASL_PLAINTEXT", "sasl.username": "u"})
    assert error.key == "sasl.mechanism" and "GSSAPI" in str(error)


def test_sasl_without_credentials_names_the_jaas_key() -> None:
    error = refused({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"})
    assert error.key == "sasl.jaas.config"


# -- JAAS ----------------------------------------------------------------------------------


def test_jaas_values_bare_or_quoted_with_escapes_and_extra_options() -> None:
    entry = parse_jaas_config(
        f'{PLAIN} required username=admin password="a \\"quoted\\" \\\\ pw"\n'
        '  user_admin="admin-secret" ;'
    )
    assert entry.login_module == PLAIN and entry.control_flag == "required"
    assert dict(entry.options) == {
        "username": "admin",
        "password": 'a "quoted" \\ pw',
        "user_admin": "admin-secret",
    }
    assert "admin-secret" not in repr(entry)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (f'{SCRAM} required username="a" password="b"', "ending in ';'"),
        (f'{SCRAM} mandatory username="a";', "control flag"),
        (f'{SCRAM} required username "a";', "name=value"),
        (f'{SCRAM} required username="a"; {SCRAM} required;', "one login module"),
        (f'{SCRAM} required username="unterminated;', "cannot read"),
        ("", "expected"),
    ],
)
def test_malformed_jaas_is_refused_naming_the_key(text: str, why: str) -> None:
    with pytest.raises(ClientPropertyError) as info:
        parse_jaas_config(text, "sasl.jaas.config")
    assert info.value.key == "sasl.jaas.config" and why in str(info.value)


def test_a_jaas_error_does_not_show_the_password() -> None:
    with pytest.raises(ClientPropertyError) as info:
        parse_jaas_config(f'{SCRAM} required username="a" password="hunter2;')
    assert "hunter2" not in str(info.value) and "character" in str(info.value)
    with pytest.raises(ClientPropertyError) as info:
        parse_jaas_config(f'{SCRAM} "hunter2" username="a";')
    assert "hunter2" not in str(info.value)


def test_only_the_plain_and_scram_login_modules_give_credentials() -> None:
    krb = 'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true principal="x";'
    with pytest.raises(ClientPropertyError, match="Krb5LoginModule"):
        jaas_credentials(krb, "PLAIN", "sasl.jaas.config")
    with pytest.raises(ClientPropertyError, match="password"):
        jaas_credentials(f'{SCRAM} required username="a";', "SCRAM-SHA-256", "k")
    # the two modules carry the same options: either serves either mechanism
    assert jaas_credentials(f'{PLAIN} required username="a" password="b";', "SCRAM-SHA-256", "k")


# -- TLS -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority("test CA")


@pytest.fixture(scope="module")
def broker_cert(ca: CertificateAuthority) -> IssuedCertificate:
    return ca.issue("broker", hosts=["127.0.0.1", "localhost"])


def handshake(
    client: ssl.SSLContext,
    server_cert: IssuedCertificate,
    tmp_path: Path,
    *,
    hostname: str = "localhost",
    require_client_cert: ssl.SSLContext | None = None,
    ca: CertificateAuthority | None = None,
) -> ssl.SSLObject:
    """A TLS handshake between ``client`` and a server showing ``server_cert``, in memory;
    returns the server's end (its peer certificate is the client's)."""
    keystore = tmp_path / "server.pem"
    keystore.write_bytes(server_cert.keystore_pem)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(keystore)
    if ca is not None:
        server.verify_mode = ssl.CERT_REQUIRED
        server.load_verify_locations(cadata=ca.cert_pem.decode())
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    c = client.wrap_bio(c_in, c_out, server_side=False, server_hostname=hostname)
    s = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"c": False, "s": False}
    for _ in range(10):
        for name, end in (("c", c), ("s", s)):
            if not done[name]:
                try:
                    end.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
            s_in.write(c_out.read())
            c_in.write(s_out.read())
        if all(done.values()):
            return s
    raise AssertionError("the handshake did not finish")


def test_a_pem_truststore_trusts_the_ca_and_checks_the_host_name(
    ca: CertificateAuthority, broker_cert: IssuedCertificate, tmp_path: Path
) -> None:
    trust = tmp_path / "ca.crt"
    trust.write_bytes(ca.cert_pem)
    props = {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(trust),
    }
    security = client_security(props)
    assert security.uses_tls and security.ssl_context is not None
    handshake(security.ssl_context, broker_cert, tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError, match=r"[Hh]ostname"):
        handshake(security.ssl_context, broker_cert, tmp_path, hostname="elsewhere.example")
    # endpoint identification off: the name is not checked, the chain still is
    relaxed = client_ssl_context({**props, "ssl.endpoint.identification.algorithm": ""})
    handshake(relaxed, broker_cert, tmp_path, hostname="elsewhere.example")
    other = CertificateAuthority("another CA").issue("broker", hosts=["localhost"])
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(relaxed, other, tmp_path)


def test_inline_certificates_and_librdkafka_ca_location(
    ca: CertificateAuthority, broker_cert: IssuedCertificate, tmp_path: Path
) -> None:
    inline = client_ssl_context(
        {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": ca.cert_pem.decode()}
    )
    handshake(inline, broker_cert, tmp_path)
    trust = tmp_path / "ca.pem"
    trust.write_bytes(ca.cert_pem)
    handshake(client_ssl_context({"ssl.ca.location": str(trust)}), broker_cert, tmp_path)
    # a PEM store whose type is not given is read as what it is
    handshake(client_ssl_context({"ssl.truststore.location": str(trust)}), broker_cert, tmp_path)


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"ssl.truststore.type": "JKS", "ssl.truststore.location": "CA"}, "ssl.truststore.type"),
        ({"ssl.truststore.type": "PKCS12", "ssl.truststore.location": "CA"}, "ssl.truststore.type"),
        ({"ssl.truststore.location": "BINARY"}, "ssl.truststore.type"),
        ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "CA"}, "ssl.keystore.type"),
        ({"ssl.truststore.location": "MISSING"}, "ssl.truststore.location"),
        ({"ssl.truststore.certificates": "-----BEGIN nothing"}, "ssl.truststore.certificates"),
        ({"ssl.endpoint.identification.algorithm": "dns"}, "ssl.endpoint.identification.algorithm"),
        ({"ssl.keystore.certificate.chain": "x"}, "ssl.keystore.key"),
        ({"ssl.key.location": "x"}, "ssl.certificate.location"),
    ],
)
def test_unusable_tls_keys_are_refused_naming_the_key(
    props: dict[str, str], key: str, ca: CertificateAuthority, tmp_path: Path
) -> None:
    files = {"CA": ca.cert_pem, "BINARY": b"\xfe\xed\xfe\xed\x00\x00\x00\x02"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    resolved = {k: str(tmp_path / v) if v in (*files, "MISSING") else v for k, v in props.items()}
    with pytest.raises(ClientPropertyError) as info:
        client_security({"security.protocol": "SSL", **resolved})
    assert info.value.key == key
    if key.endswith(".type"):
        assert "PEM" in str(info.value)


def client_cert_contexts(
    ca: CertificateAuthority, tmp_path: Path
) -> dict[str, tuple[dict[str, str], str]]:
    """Each way of giving a client certificate -> (properties, the certificate's CN)."""
    trust = tmp_path / "ca.crt"
    trust.write_bytes(ca.cert_pem)
    base = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(trust)}
    keystore = ca.issue("keystore-client", client=True, key_password="kp")
    (tmp_path / "keystore.pem").write_bytes(keystore.keystore_pem)
    inline = ca.issue("inline-client", client=True)
    librdkafka = ca.issue("librdkafka-client", client=True)
    cert, key = librdkafka.write(tmp_path, "librdkafka")
    return {
        "keystore": (
            {
                **base,
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(tmp_path / "keystore.pem"),
                "ssl.key.password": "kp",
            },
            "keystore-client",
        ),
        "inline": (
            {
                **base,
                "ssl.keystore.type": "PEM",
                "ssl.keystore.certificate.chain": inline.cert_pem.decode(),
                "ssl.keystore.key": inline.key_pem.decode(),
            },
            "inline-client",
        ),
        "librdkafka": (
            {**base, "ssl.certificate.location": str(cert), "ssl.key.location": str(key)},
            "librdkafka-client",
        ),
    }


@pytest.mark.parametrize("way", ["keystore", "inline", "librdkafka"])
def test_a_client_certificate_is_shown_to_a_broker_that_asks(
    way: str, ca: CertificateAuthority, broker_cert: IssuedCertificate, tmp_path: Path
) -> None:
    props, common_name = client_cert_contexts(ca, tmp_path)[way]
    server_end = handshake(client_ssl_context(props), broker_cert, tmp_path, ca=ca)
    peer = server_end.getpeercert()
    assert peer is not None
    subject = cast(tuple[tuple[tuple[str, str], ...], ...], peer["subject"])
    names = [pair for rdn in subject for pair in rdn]
    assert ("commonName", common_name) in names


def test_a_wrong_key_password_names_the_keystore(ca: CertificateAuthority, tmp_path: Path) -> None:
    props, _ = client_cert_contexts(ca, tmp_path)["keystore"]
    with pytest.raises(ClientPropertyError) as info:
        client_ssl_context({**props, "ssl.key.password": "wrong"})
    assert info.value.key == "ssl.keystore.location" and "ssl.key.password" in str(info.value)
