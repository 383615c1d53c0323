"""``cluster up --security``: the files it makes and the keys it writes, read back by the
parsers that use them (the client properties by the client's, the brokers' keys by the
broker's inter-broker derivation), so the two sides cannot drift apart."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from broker.config.broker_config import BrokerConfig
from broker.security.inter_broker import control_plane_security, inter_broker_security
from client.properties import client_security
from config.properties import read_properties
from tools.cluster import ClusterLayout
from tools.cluster_security import (
    ADMIN_USER,
    MECHANISM,
    prepare_security,
    properties_text,
    security_protocol,
    summary_lines,
)
from tools.main import build_parser


def test_the_choices_map_to_kafkas_protocol_names() -> None:
    assert security_protocol("plaintext") is None
    assert security_protocol("sasl_ssl") == "SASL_SSL"
    assert security_protocol("SSL") == "SSL"
    with pytest.raises(ValueError, match="tls"):
        security_protocol("tls")
    args = build_parser().parse_args(["cluster", "up", "--security", "sasl_ssl"])
    assert args.security == "sasl_ssl"
    assert build_parser().parse_args(["cluster", "up"]).security == "plaintext"


@pytest.fixture
def layout(tmp_path: Path) -> ClusterLayout:
    security = prepare_security(tmp_path, "SASL_SSL", brokers=2)
    layout = ClusterLayout.standard(tmp_path, brokers=2, security=security)
    layout.write_configs()
    return layout


def private(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


def test_sasl_ssl_files_are_made_and_kept_private(layout: ClusterLayout, tmp_path: Path) -> None:
    security = layout.security
    assert security is not None
    assert security.ca_path == tmp_path / "security" / "ca.crt"
    assert b"BEGIN CERTIFICATE" in security.ca_path.read_bytes()
    for i in range(2):
        keystore = security.keystore_path(i).read_bytes()
        assert b"PRIVATE KEY" in keystore and b"BEGIN CERTIFICATE" in keystore
        assert private(security.keystore_path(i)) and private(layout.config_path(i))
    assert private(security.client_properties_path)
    assert private(security.librdkafka_properties_path)
    assert security.admin_password not in repr(security)


def test_the_client_properties_read_back_as_sasl_ssl_scram(layout: ClusterLayout) -> None:
    assert layout.security is not None
    props = read_properties(layout.security.client_properties_path)
    assert props["bootstrap.servers"] == layout.bootstrap_servers
    parsed = client_security(props)
    assert parsed.security_protocol == "SASL_SSL" and parsed.uses_tls
    assert parsed.sasl is not None
    assert (parsed.sasl.mechanism, parsed.sasl.username, parsed.sasl.password) == (
        MECHANISM,
        ADMIN_USER,
        layout.security.admin_password,
    )
    # librdkafka's file: only keys librdkafka knows, the same credentials
    rd = read_properties(layout.security.librdkafka_properties_path)
    assert "sasl.jaas.config" not in rd and not any(k.startswith("ssl.truststore") for k in rd)
    assert (rd["sasl.username"], rd["sasl.password"]) == (
        ADMIN_USER,
        layout.security.admin_password,
    )
    assert rd["ssl.ca.location"] == str(layout.security.ca_path)
    assert client_security(rd).sasl == parsed.sasl


def test_brokers_talk_sasl_ssl_among_themselves_as_the_admin(layout: ClusterLayout) -> None:
    assert layout.security is not None
    props = read_properties(layout.config_path(1))
    assert props["listeners"].startswith("SASL_SSL://127.0.0.1:")
    assert props["inter.broker.listener.name"] == "SASL_SSL"
    assert props["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL"
    assert props["ssl.keystore.location"] == str(layout.security.keystore_path(1))
    config = _unchecked(props)
    for security in (inter_broker_security(config), control_plane_security(config)):
        assert security.security_protocol == "SASL_SSL" and security.sasl is not None
        assert (security.sasl.mechanism, security.sasl.username) == (MECHANISM, ADMIN_USER)
        assert security.sasl.password == layout.security.admin_password


def test_a_sasl_cluster_runs_the_authorizer_with_the_admin_as_super_user(
    layout: ClusterLayout,
) -> None:
    props = read_properties(layout.config_path(0))
    assert props["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
    assert props["super.users"] == f"User:{ADMIN_USER}"
    # the brokers' own principal (they log in as the admin) is that super user
    security = inter_broker_security(_unchecked(props))
    assert security.sasl is not None and f"User:{security.sasl.username}" == props["super.users"]


def _unchecked(props: dict[str, str]) -> BrokerConfig:
    """The broker configuration of ``props`` without the startup checks across keys."""
    from broker.config.keys import BROKER_CONFIG_DEFS
    from config.definitions import typed_values

    return BrokerConfig(typed_values(BROKER_CONFIG_DEFS, props), props)


def test_ssl_only_has_no_users_and_plaintext_is_unchanged(tmp_path: Path) -> None:
    ssl_only = prepare_security(tmp_path / "ssl", "SSL", brokers=1)
    props = ClusterLayout.standard(tmp_path / "ssl", brokers=1, security=ssl_only)
    broker = props.broker_properties(0)
    assert broker["listener.security.protocol.map"] == "SSL:SSL,CONTROLLER:SSL"
    assert not any(k.startswith("sasl") or "jaas" in k for k in broker)
    assert "authorizer.class.name" not in broker
    assert "sasl.username" not in ssl_only.client_properties()
    plain = ClusterLayout.standard(tmp_path / "plain", brokers=1).broker_properties(0)
    assert plain["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert not any(k.startswith(("ssl.", "sasl.")) for k in plain)


def test_the_summary_gives_the_line_to_copy(layout: ClusterLayout) -> None:
    assert layout.security is not None
    text = "\n".join(summary_lines(layout.security, layout.bootstrap_servers))
    bootstrap = layout.bootstrap_servers
    client = layout.security.client_properties_path
    assert (
        f"minikafka topics --bootstrap-server {bootstrap} --command-config {client} --list" in text
    )
    assert f"kcat -b {bootstrap} -F {layout.security.librdkafka_properties_path} -L" in text
    assert layout.security.admin_password not in text


def test_the_files_are_plain_lines_that_librdkafka_reads_as_they_are(
    layout: ClusterLayout, tmp_path: Path
) -> None:
    """librdkafka (kcat -F) does not unescape: ``127.0.0.1\\:9092`` would be its host."""
    assert layout.security is not None
    text = layout.security.librdkafka_properties_path.read_text()
    assert f"bootstrap.servers={layout.bootstrap_servers}\n" in text
    assert "\\" not in text and text.startswith("# written by minikafka cluster up")
    odd = {"a": "C:\\dir", "b": "  lead", "c": "plain:value"}
    written = tmp_path / "odd.properties"
    written.write_text(properties_text(odd))
    assert read_properties(written) == odd
    assert "c=plain:value\n" in written.read_text()
