"""The secured compose stack's keys and certificates, made on the host before it starts.

    python -m tools.compose_security [--dir compose-security]
    docker-compose -f docker-compose.yml -f docker-compose.secure.yml up -d

``docker-compose.secure.yml`` turns the three brokers' INTERNAL, EXTERNAL and CONTROLLER
listeners to SASL_SSL (SCRAM-SHA-512 between brokers, as user ``admin``) and mounts DIR at
``/etc/minikafka/security`` in every broker. DIR holds:

- ``ca.crt``: the local CA, every party's trust store;
- ``broker-<id>.keystore.pem`` (id 1 to 3): the broker's key and certificate, valid for
  ``broker-<id>`` (what the other containers connect to), ``localhost`` and ``127.0.0.1``
  (where the host's clients reach the published ports);
- ``broker-<id>.properties``: the image's server.properties with the broker's security
  keys (container paths) after it: what ``minikafka server`` runs with; the compose
  file's ``KAFKA_*`` variables still come on top;
- ``admin.password``: the admin user's password, which the one-shot ``scram-init`` service
  writes to ZooKeeper as SCRAM credentials (``minikafka configs --zookeeper``) before any
  broker starts;
- ``client.properties`` / ``librdkafka.properties``: the host's clients (bootstrap
  127.0.0.1:9092-9094, host paths), as ``cluster up --security`` writes them;
- ``console.properties``: the same client keys with container paths, for the web console
  service (``--command-config``).

The brokers run as uid 1000 in their containers: run as root, this chowns the files they
read to that uid; run as another user than 1000, it makes them readable by others and says
so. A new run makes new keys and a new password: restart the stack after it.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path
from typing import Final

from config.properties import read_properties
from tools.certificates import CertificateAuthority
from tools.cluster_security import (
    ADMIN_USER,
    MECHANISM,
    ClusterSecurity,
    properties_text,
)

BROKER_IDS: Final = (1, 2, 3)
#: the listeners docker-compose.yml gives every broker, all SASL_SSL in the secured stack
LISTENERS: Final = ("INTERNAL", "EXTERNAL", "CONTROLLER")
#: where docker-compose.secure.yml mounts DIR in the containers
CONTAINER_DIR: Final = Path("/etc/minikafka/security")
#: the image's user (Dockerfile: useradd --uid 1000)
CONTAINER_UID: Final = 1000
BASE_CONFIG: Final = Path(__file__).resolve().parents[1] / "config" / "server.properties"
HOST_BOOTSTRAP: Final = "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"


def broker_properties(
    security: ClusterSecurity, broker_id: int, base: dict[str, str]
) -> dict[str, str]:
    """Broker ``broker_id``'s server.properties: ``base``, then its security keys with
    the paths its container sees."""
    return {**base, **_inside(security).broker_properties(broker_id, LISTENERS)}


def _inside(security: ClusterSecurity) -> ClusterSecurity:
    """``security`` with the paths the containers see."""
    return ClusterSecurity(
        protocol=security.protocol,
        directory=CONTAINER_DIR,
        cluster_directory=CONTAINER_DIR,
        admin_password=security.admin_password,
    )


def make(directory: Path, base: dict[str, str]) -> ClusterSecurity:
    """Write every file of the module docstring under ``directory``; the security."""
    directory.mkdir(parents=True, exist_ok=True)
    security = ClusterSecurity(
        protocol="SASL_SSL",
        directory=directory,
        cluster_directory=directory,
        admin_password=secrets.token_urlsafe(24),
    )
    ca = CertificateAuthority("minikafka compose CA")
    security.ca_path.write_bytes(ca.cert_pem)
    container_read = [security.ca_path]
    for broker_id in BROKER_IDS:
        issued = ca.issue(
            f"broker-{broker_id}", hosts=(f"broker-{broker_id}", "localhost", "127.0.0.1")
        )
        keystore = directory / f"broker-{broker_id}.keystore.pem"
        config = directory / f"broker-{broker_id}.properties"
        _private(keystore, issued.keystore_pem.decode())
        _private(config, properties_text(broker_properties(security, broker_id, base)))
        container_read += [keystore, config]
    password = directory / "admin.password"
    _private(password, security.admin_password)
    container_read.append(password)
    security.write_client_properties(HOST_BOOTSTRAP)
    console = directory / "console.properties"
    _private(console, properties_text(_inside(security).client_properties()))
    container_read.append(console)
    _let_the_container_read(directory, container_read)
    return security


def _private(path: Path, text: str) -> None:
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)


def _let_the_container_read(directory: Path, paths: list[Path]) -> None:
    uid = os.getuid()
    if uid == 0:
        for path in [directory, *paths]:
            os.chown(path, CONTAINER_UID, CONTAINER_UID)
    elif uid != CONTAINER_UID:
        for path in paths:
            path.chmod(0o644)
        print(
            f"compose-security: the containers' user (uid {CONTAINER_UID}) is not you: "
            f"the brokers' keys and the admin password in {directory} are readable by "
            "every user of this machine",
            file=sys.stderr,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.compose_security")
    parser.add_argument("--dir", type=Path, default=Path("compose-security"))
    args = parser.parse_args(argv)
    directory = args.dir.resolve()
    security = make(directory, read_properties(BASE_CONFIG))
    print(
        f"compose-security: SASL_SSL ({MECHANISM}, user {ADMIN_USER}) keys in {directory}\n"
        "  docker-compose -f docker-compose.yml -f docker-compose.secure.yml up -d\n"
        f"  minikafka topics --bootstrap-server {HOST_BOOTSTRAP} "
        f"--command-config {security.client_properties_path} --list\n"
        f"  kcat -b {HOST_BOOTSTRAP} -F {security.librdkafka_properties_path} -L"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
