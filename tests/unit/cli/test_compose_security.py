"""The secured compose stack's files (tools.compose_security), read back as the broker and
the clients read them: each broker's configuration, layered under the compose file's
variables, derives SASL_SSL between brokers as the admin user from its own key store, and
the host's client properties connect with the same password."""

from __future__ import annotations

import re
from pathlib import Path

from broker.config.broker_config import BrokerConfig
from broker.config.keys import BROKER_CONFIG_DEFS
from broker.security.inter_broker import control_plane_security, inter_broker_security
from client.properties import client_security
from config.definitions import typed_values
from config.properties import read_properties
from config.sources import properties_from_env
from tools.compose_security import BASE_CONFIG, CONTAINER_DIR, make

ROOT = Path(__file__).resolve().parents[3]


_VAR = re.compile(r"^\s+(KAFKA_[A-Z_]+): \"?([^\"\n]*)\"?$", re.M)


def _block(text: str, header: str) -> str:
    """The lines of the YAML block that starts with the line ``header`` (up to the next
    line indented as little or less)."""
    start = text.index(f"\n{header}\n") + len(header) + 2
    indent = len(header) - len(header.lstrip())
    end = re.compile(rf"^ {{0,{indent}}}\S", re.M).search(text, start)
    return text[start : end.start() if end else len(text)]


def compose_env(broker: str) -> dict[str, str]:
    """The broker's KAFKA_* variables in docker-compose.yml, then docker-compose.secure.yml
    (its anchors of shared variables, then the service's own)."""
    env: dict[str, str] = {}
    for name, shared in (
        ("docker-compose.yml", "x-broker-env: &broker-env"),
        ("docker-compose.secure.yml", "x-secure-env: &secure-env"),
    ):
        text = (ROOT / name).read_text()
        env.update(_VAR.findall(_block(text, shared)))
        env.update(_VAR.findall(_block(text, f"  {broker}:")))
    return env


def test_each_broker_talks_sasl_ssl_as_admin_with_its_own_certificate(tmp_path: Path) -> None:
    security = make(tmp_path, read_properties(BASE_CONFIG))
    for broker_id in (1, 2, 3):
        text = (tmp_path / f"broker-{broker_id}.properties").read_text()
        assert str(CONTAINER_DIR / f"broker-{broker_id}.keystore.pem") in text
        # the container's paths, here under tmp_path, as the mount puts them
        local = {
            k: v.replace(str(CONTAINER_DIR), str(tmp_path))
            for k, v in read_properties(tmp_path / f"broker-{broker_id}.properties").items()
        }
        layered = {**local, **properties_from_env(compose_env(f"broker-{broker_id}"))}
        config = BrokerConfig(typed_values(BROKER_CONFIG_DEFS, layered), layered)
        assert config.inter_broker_listener_name == "INTERNAL"
        for derived in (inter_broker_security(config), control_plane_security(config)):
            assert derived.security_protocol == "SASL_SSL" and derived.sasl is not None
            assert derived.sasl.username == "admin"
            assert derived.sasl.password == security.admin_password
        protocols = config.security_protocol_map
        assert protocols["HEALTH"] == "PLAINTEXT"
        assert {protocols[n] for n in ("INTERNAL", "EXTERNAL", "CONTROLLER")} == {"SASL_SSL"}
        health = [e for e in config.listeners if e.listener_name == "HEALTH"]
        assert [(e.host, e.port) for e in health] == [("127.0.0.1", 29094)]
    assert (tmp_path / "admin.password").read_text() == security.admin_password
    host = client_security(read_properties(tmp_path / "client.properties"))
    assert host.sasl is not None and host.sasl.password == security.admin_password
    assert read_properties(tmp_path / "client.properties")["bootstrap.servers"] == (
        "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"
    )


def test_scram_init_gives_the_admin_both_mechanisms_before_the_brokers() -> None:
    text = (ROOT / "docker-compose.secure.yml").read_text()
    init = _block(text, "  scram-init:")
    assert "--zookeeper zookeeper:2181" in init and "--entity-name admin" in init
    assert "SCRAM-SHA-256=[password=$$pw],SCRAM-SHA-512=[password=$$pw]" in init
    shared = _block(text, "x-secure-broker: &secure-broker")
    assert "condition: service_completed_successfully" in _block(shared, "    scram-init:")
    assert '"127.0.0.1:29094"]' in shared
    for broker_id in (1, 2, 3):
        service = _block(text, f"  broker-{broker_id}:")
        assert "<<: *secure-broker" in service
        assert f"/etc/minikafka/security/broker-{broker_id}.properties" in service


def test_the_console_service_connects_with_the_containers_client_properties(
    tmp_path: Path,
) -> None:
    make(tmp_path, read_properties(BASE_CONFIG))
    props = read_properties(tmp_path / "console.properties")
    assert props["ssl.truststore.location"] == str(CONTAINER_DIR / "ca.crt")
    local = {k: v.replace(str(CONTAINER_DIR), str(tmp_path)) for k, v in props.items()}
    assert client_security(local).security_protocol == "SASL_SSL"
    service = _block((ROOT / "docker-compose.secure.yml").read_text(), "  console:")
    assert str(CONTAINER_DIR / "console.properties") in service
