"""``cluster up --security``: the keys, certificates and users of a secured local cluster.

``--security`` is one of plaintext (the default: nothing here is used), ssl,
sasl_plaintext or sasl_ssl. For the others, every listener of every broker -- the client
listener, which is also the inter-broker one, and the control plane -- speaks that
protocol, so brokers talk to each other exactly as clients talk to them. The client
listener is named after its protocol (``SASL_SSL://127.0.0.1:9092``), as Kafka's default
listener names are.

Made at each start, under ``DIR/security/`` (keys readable by their owner only):

- TLS (ssl, sasl_ssl): a local CA (``ca.crt``, the trust store of every party) and one
  certificate per broker for 127.0.0.1 and localhost, with its key in one PEM key store
  (``broker-<i>.keystore.pem``: ``ssl.keystore.type=PEM``). Clients check the broker's
  host name against it (``ssl.endpoint.identification.algorithm=https``).
- SASL (sasl_plaintext, sasl_ssl): the user ``admin`` with a new random password, given
  SCRAM-SHA-512 (and SCRAM-SHA-256) credentials in ZooKeeper before any broker starts
  (``create_users``); the brokers authenticate to each other as that user with
  SCRAM-SHA-512, through each listener's ``listener.name.<l>.scram-sha-512.sasl.jaas.config``.
  The authorizer is on (``authorizer.class.name``), with ``admin`` -- the brokers' own
  principal and the operator's -- as the one super user: other users need ACLs
  (``minikafka acls --command-config DIR/client.properties``).

``DIR/client.properties`` holds what a client needs: Kafka's keys (``security.protocol``,
``sasl.mechanism``, ``sasl.jaas.config``, ``ssl.truststore.*``), read by the Java tools
and every ``minikafka`` command (``--command-config``), and librdkafka's spellings of the
same (``sasl.username``/``sasl.password``, ``ssl.ca.location``). librdkafka refuses keys it
does not know, so ``DIR/librdkafka.properties`` repeats only librdkafka's keys, for
``kcat -F`` and confluent-kafka. Both files hold the password: mode 0600, like the brokers'
server.properties.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from config.properties import format_properties

if TYPE_CHECKING:
    from client.security import ClientSecurity

#: the --security choices: lower case on the command line, Kafka's protocol names inside
SECURITY_CHOICES: Final = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
ADMIN_USER: Final = "admin"
#: the authorizer of a SASL cluster (Kafka's class name; broker.auth)
ACL_AUTHORIZER: Final = "kafka.security.authorizer.AclAuthorizer"
#: the mechanism brokers and the written client properties use
MECHANISM: Final = "SCRAM-SHA-512"
#: the admin user's credentials in ZooKeeper (clients may pick either)
CREDENTIAL_MECHANISMS: Final = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_ITERATIONS: Final = 4096
#: the names a broker certificate is valid for
BROKER_HOSTS: Final = ("127.0.0.1", "localhost")
#: librdkafka's keys among the written client properties
LIBRDKAFKA_KEYS: Final = (
    "security.protocol",
    "sasl.mechanism",
    "sasl.username",
    "sasl.password",
    "ssl.ca.location",
    "ssl.endpoint.identification.algorithm",
)


def jaas_line(user: str, password: str) -> str:
    """The ScramLoginModule line of ``user`` (double quotes and backslashes escaped)."""

    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f"username={quoted(user)} password={quoted(password)};"
    )


@dataclass(frozen=True)
class ClusterSecurity:
    """A secured local cluster's protocol, files and admin credentials."""

    #: Kafka's name of the protocol: SSL, SASL_PLAINTEXT or SASL_SSL
    protocol: str
    #: DIR/security
    directory: Path
    #: DIR, where client.properties goes
    cluster_directory: Path
    admin_password: str

    def __repr__(self) -> str:  # never print the password
        return f"ClusterSecurity({self.protocol}, {self.directory})"

    @property
    def uses_tls(self) -> bool:
        return self.protocol.endswith("SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL")

    @property
    def listener_name(self) -> str:
        """The client (and inter-broker) listener's name."""
        return self.protocol

    @property
    def ca_path(self) -> Path:
        return self.directory / "ca.crt"

    def keystore_path(self, i: int) -> Path:
        return self.directory / f"broker-{i}.keystore.pem"

    @property
    def client_properties_path(self) -> Path:
        return self.cluster_directory / "client.properties"

    @property
    def librdkafka_properties_path(self) -> Path:
        return self.cluster_directory / "librdkafka.properties"

    def broker_properties(self, i: int, listener_names: tuple[str, ...]) -> dict[str, str]:
        """Broker i's security keys, for its listeners ``listener_names``."""
        props: dict[str, str] = {}
        if self.uses_tls:
            props |= {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(self.keystore_path(i)),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.ca_path),
            }
        if self.uses_sasl:
            props |= {
                "sasl.enabled.mechanisms": ",".join(CREDENTIAL_MECHANISMS),
                "sasl.mechanism.inter.broker.protocol": MECHANISM,
                # the admin user is also the brokers' own principal: a super user, so
                # brokers and the admin need no ACLs; anyone else needs ACLs
                "authorizer.class.name": ACL_AUTHORIZER,
                "super.users": f"User:{ADMIN_USER}",
            }
            line = jaas_line(ADMIN_USER, self.admin_password)
            for name in listener_names:
                props[f"listener.name.{name.lower()}.{MECHANISM.lower()}.sasl.jaas.config"] = line
        return props

    def client_properties(self) -> dict[str, str]:
        """Kafka's client keys, then librdkafka's spelling of the same."""
        props = {"security.protocol": self.protocol}
        if self.uses_sasl:
            props |= {
                "sasl.mechanism": MECHANISM,
                "sasl.jaas.config": jaas_line(ADMIN_USER, self.admin_password),
            }
        if self.uses_tls:
            props |= {
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.ca_path),
                "ssl.endpoint.identification.algorithm": "https",
            }
        if self.uses_sasl:
            props |= {"sasl.username": ADMIN_USER, "sasl.password": self.admin_password}
        if self.uses_tls:
            props["ssl.ca.location"] = str(self.ca_path)
        return props

    def librdkafka_properties(self) -> dict[str, str]:
        return {k: v for k, v in self.client_properties().items() if k in LIBRDKAFKA_KEYS}

    def client_security(self) -> ClientSecurity:
        """How ``cluster up``'s own checks connect (the client properties' security)."""
        from client.properties import client_security

        return client_security(self.client_properties())

    def write_client_properties(self, bootstrap_servers: str) -> None:
        header = {"bootstrap.servers": bootstrap_servers}
        for path, props, use in (
            (self.client_properties_path, self.client_properties(), "--command-config"),
            (self.librdkafka_properties_path, self.librdkafka_properties(), "kcat -F"),
        ):
            comment = f"# written by minikafka cluster up, for {use} {path}\n"
            _write_private(path, comment + properties_text({**header, **props}))

    def create_users(self, zookeeper_connect: str, timeout_s: float) -> None:
        """The admin user's SCRAM credentials in ZooKeeper (blocking; before the brokers
        start, which read them on startup)."""
        if not self.uses_sasl:
            return
        from zk.scram import create_scram_user

        create_scram_user(
            zookeeper_connect,
            ADMIN_USER,
            self.admin_password,
            CREDENTIAL_MECHANISMS,
            SCRAM_ITERATIONS,
            timeout_s,
        )


def security_protocol(choice: str) -> str | None:
    """Kafka's protocol name of a ``--security`` choice; None for plaintext."""
    if choice.lower() not in SECURITY_CHOICES:
        raise ValueError(f"--security {choice!r} is not one of {', '.join(SECURITY_CHOICES)}")
    protocol = choice.upper()
    return None if protocol == "PLAINTEXT" else protocol


def prepare_security(cluster_directory: Path, protocol: str, brokers: int) -> ClusterSecurity:
    """Make the cluster's CA, broker key stores (TLS) and admin password (SASL) under
    ``cluster_directory/security``; new ones at every call."""
    from tools.certificates import CertificateAuthority

    directory = cluster_directory / "security"
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    security = ClusterSecurity(
        protocol=protocol,
        directory=directory,
        cluster_directory=cluster_directory,
        admin_password=secrets.token_urlsafe(24),
    )
    if security.uses_tls:
        ca = CertificateAuthority("minikafka local cluster CA")
        security.ca_path.write_bytes(ca.cert_pem)
        for i in range(brokers):
            issued = ca.issue(f"broker-{i}", hosts=BROKER_HOSTS)
            _write_private(security.keystore_path(i), issued.keystore_pem.decode())
    return security


def properties_text(props: Mapping[str, str]) -> str:
    """``key=value`` lines that Java and librdkafka read alike: librdkafka's reader takes
    a line as it is (no escapes), so a value is escaped the Java way only when it must be
    (a backslash, a line break or leading blanks), which librdkafka then misreads."""
    lines = []
    for key, value in props.items():
        if any(c in value for c in "\\\n\r") or value != value.lstrip():
            lines.append(format_properties({key: value}).rstrip("\n"))
        else:
            lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to a file only its owner may read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)


def summary_lines(security: ClusterSecurity, bootstrap: str) -> list[str]:
    """What ``cluster up`` prints about a secured cluster: the files and one line to copy."""
    client, librdkafka = security.client_properties_path, security.librdkafka_properties_path
    return [
        f"  security: {security.protocol} on every listener"
        + (f", SASL {MECHANISM} as user {ADMIN_USER}" if security.uses_sasl else ""),
        f"  client properties: {client} (Java clients: the same keys)",
        f"  minikafka tools: minikafka topics --bootstrap-server {bootstrap} "
        f"--command-config {client} --list",
        f"  kcat / confluent-kafka: kcat -b {bootstrap} -F {librdkafka} -L",
    ]
