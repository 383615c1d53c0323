"""Every real client over every secured listener: the client matrix of security, part one.

One broker for the module, with (beside the PLAINTEXT and CONTROLLER listeners that
``LocalCluster`` and the topic creation use) three secured listeners:

- ``SASL_SSL``: TLS with the broker's certificate from a local CA, SASL with
  SCRAM-SHA-512 only; the user ``carol`` has SCRAM credentials in ZooKeeper, written
  before the broker starts (as ``minikafka configs --zookeeper`` writes them);
- ``SASL_PLAINTEXT``: PLAIN (``alice`` from the listener's JAAS ``user_alice`` entry) and
  SCRAM-SHA-256 (``carol`` again, her SHA-256 credential);
- ``SSL``: ``ssl.client.auth=required``; each client library presents a certificate of
  its own, subject ``O=Matrix Tests,CN=<Name>-Client``, which ``MAPPING`` turns into the
  principal ``User:<name>-mtls`` (the group, a suffix, lower case).

confluent-kafka, kafka-python, aiokafka and kcat each produce a few records over each of
the four combinations (SASL_SSL/SCRAM-SHA-512, SASL_PLAINTEXT/PLAIN,
SASL_PLAINTEXT/SCRAM-SHA-256, SSL with a client certificate) and consume them back; the
values must come back byte for byte (binary ones, except kcat's, which reads and prints
lines). Each (client, combination) pair has a partition of its own in one shared topic,
so the cases are independent and no topic is made per case. What is checked beside the
bytes:

- over SASL, the broker counted a successful authentication with that mechanism on that
  listener (``minikafka_sasl_authentications_total``);
- over SSL, the principal the broker mapped from that client's certificate is the one the
  rule gives: the broker's INFO line of the finished handshake names it, and the TLS
  handshake time was observed (``minikafka_tls_handshake_duration_seconds``).

confluent-kafka consumes through a consumer group (subscribe), so the group coordinator
is exercised over every listener too; the others assign the partition.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.cluster import TestCluster
from tests.integration.secured_broker import start_secured_broker
from tools.zookeeper_server import ZooKeeperServer
from zk.scram import create_scram_user

pytestmark = pytest.mark.timeout(120)

KCAT = shutil.which("kcat")
TOPIC = "security-matrix"
CLIENTS = ("confluent", "kafka-python", "aiokafka", "kcat")
#: (listener, SASL mechanism or None for a client certificate)
COMBINATIONS = (
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SSL", None),
)
PLAIN_USER, PLAIN_PASSWORD = "alice", "alice-secret"
SCRAM_USER = "carol"
SCRAM_PASSWORDS = {"SCRAM-SHA-512": "carol-512-secret", "SCRAM-SHA-256": "carol-256-secret"}
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'user_{PLAIN_USER}="{PLAIN_PASSWORD}";'
)
MAPPING = "RULE:^O=Matrix Tests,CN=([A-Za-z]+)-Client$/$1-mtls/L,DEFAULT"
#: the certificate subject's common name of each client library
COMMON_NAMES = {
    "confluent": "Confluent-Client",
    "kafka-python": "Kafkapython-Client",
    "aiokafka": "Aiokafka-Client",
    "kcat": "Kcat-Client",
}
#: what MAPPING makes of each
PRINCIPALS = {
    "confluent": "User:confluent-mtls",
    "kafka-python": "User:kafkapython-mtls",
    "aiokafka": "User:aiokafka-mtls",
    "kcat": "User:kcat-mtls",
}
RECORDS = 4


@dataclass(frozen=True)
class Case:
    """One client over one listener and mechanism, with the connection settings."""

    client: str
    listener: str
    mechanism: str | None
    port: int
    ca: Path
    certificate: tuple[Path, Path] | None
    partition: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def user(self) -> str:
        return PLAIN_USER if self.mechanism == "PLAIN" else SCRAM_USER

    @property
    def password(self) -> str:
        if self.mechanism == "PLAIN":
            return PLAIN_PASSWORD
        assert self.mechanism is not None
        return SCRAM_PASSWORDS[self.mechanism]

    @property
    def uses_tls(self) -> bool:
        return self.listener.endswith("SSL")

    def values(self) -> list[bytes]:
        """What this case produces: binary bytes (every byte value appears across the
        records), or lines of text for kcat."""
        if self.client == "kcat":
            return [f"kcat {self.listener} {self.mechanism} #{i}".encode() for i in range(RECORDS)]
        tag = f"{self.client}/{self.listener}/{self.mechanism}".encode()
        return [tag + bytes(range(i, 256)) + bytes(range(i)) for i in range(RECORDS)]


@dataclass
class Matrix:
    cluster: TestCluster
    ports: dict[str, int]
    ca: Path
    certificates: dict[str, tuple[Path, Path]]

    def case(self, client: str, index: int) -> Case:
        listener, mechanism = COMBINATIONS[index]
        return Case(
            client=client,
            listener=listener,
            mechanism=mechanism,
            port=self.ports[listener],
            ca=self.ca,
            certificate=self.certificates[client] if mechanism is None else None,
            partition=CLIENTS.index(client) * len(COMBINATIONS) + index,
        )

    def sample(self, name: str, **labels: str) -> float:
        """The broker's sample ``name`` with exactly ``labels`` (0 if absent)."""
        url = self.cluster.layout.metrics_url(0)
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and sample.labels == labels:
                    return float(sample.value)
        return 0.0


@pytest.fixture(scope="module")
def m(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Matrix]:
    directory = tmp_path_factory.mktemp("matrix")

    def users(zk_connect: str) -> None:
        for mechanism, password in SCRAM_PASSWORDS.items():
            create_scram_user(zk_connect, SCRAM_USER, password, [mechanism], 4096, 15)

    broker = start_secured_broker(
        zookeeper,
        directory,
        ("SASL_SSL", "SASL_PLAINTEXT", "SSL"),
        {
            "listener.name.ssl.ssl.client.auth": "required",
            "listener.name.ssl.ssl.principal.mapping.rules": MAPPING,
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        },
        TOPIC,
        len(CLIENTS) * len(COMBINATIONS),
        users,
    )
    for b in broker:
        certificates = {
            client: b.ca.issue(name, client=True, organization="Matrix Tests").write(
                directory, client
            )
            for client, name in COMMON_NAMES.items()
        }
        yield Matrix(b.cluster, b.ports, b.ca_path, certificates)


# --- the four clients: produce the case's values, then read them back --------------------


def confluent(case: Case) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    config: dict[str, Any] = {"bootstrap.servers": case.bootstrap, "log_level": 0}
    if case.mechanism is None:
        cert, key = case.certificate or (None, None)
        config |= {"security.protocol": "SSL", "ssl.certificate.location": str(cert),
                   "ssl.key.location": str(key)}  # fmt: skip
    else:
        config |= {"security.protocol": case.listener, "sasl.mechanism": case.mechanism,
                   "sasl.username": case.user, "sasl.password": case.password}  # fmt: skip
    if case.uses_tls:
        config["ssl.ca.location"] = str(case.ca)
    producer = Producer({**config, "acks": "all"})
    for value in case.values():
        producer.produce(TOPIC, value, partition=case.partition)
    assert producer.flush(20) == 0
    consumer = Consumer(
        {**config, "group.id": f"matrix-{case.partition}", "auto.offset.reset": "earliest",
         "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000}
    )  # fmt: skip
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        consumer.subscribe([TOPIC])
        while len(got) < RECORDS and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            ours = message is not None and message.partition() == case.partition
            if message is not None and ours and message.error() is None:
                got.append(message.value() or b"")
    finally:
        consumer.close()
    return got


def _python_client_settings(case: Case) -> dict[str, Any]:
    """kafka-python's and aiokafka's keys (they share their names) but for TLS."""
    if case.mechanism is None:
        return {"security_protocol": "SSL"}
    return {
        "security_protocol": case.listener,
        "sasl_mechanism": case.mechanism,
        "sasl_plain_username": case.user,
        "sasl_plain_password": case.password,
    }


def kafka_python(case: Case) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    common: dict[str, Any] = {"bootstrap_servers": case.bootstrap, **_python_client_settings(case)}
    if case.uses_tls:
        common |= {"ssl_cafile": str(case.ca), "ssl_check_hostname": True}
    if case.certificate is not None:
        common |= {"ssl_certfile": str(case.certificate[0]),
                   "ssl_keyfile": str(case.certificate[1])}  # fmt: skip
    producer = KafkaProducer(**common, acks="all")
    try:
        for value in case.values():
            producer.send(TOPIC, value=value, partition=case.partition).get(timeout=20)
    finally:
        producer.close(timeout=10)
    consumer = KafkaConsumer(**common, consumer_timeout_ms=10_000)
    try:
        tp = TopicPartition(TOPIC, case.partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [record.value for _, record in zip(range(RECORDS), consumer, strict=False)]
    finally:
        consumer.close()


def aiokafka(case: Case) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    common: dict[str, Any] = {"bootstrap_servers": case.bootstrap, **_python_client_settings(case)}
    if case.uses_tls:
        context = ssl.create_default_context(cafile=str(case.ca))
        if case.certificate is not None:
            context.load_cert_chain(*case.certificate)
        common["ssl_context"] = context

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**common, acks="all")
        await producer.start()
        try:
            for value in case.values():
                await producer.send_and_wait(TOPIC, value, partition=case.partition)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**common)
        await consumer.start()
        try:
            tp = TopicPartition(TOPIC, case.partition)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            got: list[bytes] = []
            deadline = time.monotonic() + 15
            while len(got) < RECORDS and time.monotonic() < deadline:
                batch = await consumer.getmany(tp, timeout_ms=1000)
                got.extend(record.value or b"" for record in batch.get(tp, []))
            return got
        finally:
            await consumer.stop()

    return asyncio.run(run())


def kcat(case: Case) -> list[bytes]:
    assert KCAT is not None
    settings = {"security.protocol": case.listener}
    if case.mechanism is None:
        assert case.certificate is not None
        settings |= {"ssl.certificate.location": str(case.certificate[0]),
                     "ssl.key.location": str(case.certificate[1])}  # fmt: skip
    else:
        settings |= {"sasl.mechanisms": case.mechanism, "sasl.username": case.user,
                     "sasl.password": case.password}  # fmt: skip
    if case.uses_tls:
        settings["ssl.ca.location"] = str(case.ca)
    options = [arg for key, value in settings.items() for arg in ("-X", f"{key}={value}")]
    base = [KCAT, "-b", case.bootstrap, *options, "-t", TOPIC, "-p", str(case.partition)]
    lines = b"".join(value + b"\n" for value in case.values())
    produced = subprocess.run([*base, "-P"], input=lines, capture_output=True, timeout=30)
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = subprocess.run(
        [*base, "-C", "-o", "beginning", "-e", "-c", str(RECORDS), "-J", "-q"],
        capture_output=True, timeout=30,
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr.decode()
    return [json.loads(line)["payload"].encode() for line in consumed.stdout.decode().splitlines()]


RUN: dict[str, Callable[[Case], list[bytes]]] = {
    "confluent": confluent,
    "kafka-python": kafka_python,
    "aiokafka": aiokafka,
    "kcat": kcat,
}


def _handshakes(m: Matrix) -> float:
    return m.sample("minikafka_tls_handshake_duration_seconds_count", listener="SSL")


def _authentications(m: Matrix, case: Case) -> float:
    labels = {"listener": case.listener, "mechanism": str(case.mechanism), "result": "success"}
    return m.sample("minikafka_sasl_authentications_total", **labels)


@pytest.mark.parametrize("index", range(len(COMBINATIONS)), ids=[
    f"{listener}-{mechanism or 'mTLS'}" for listener, mechanism in COMBINATIONS
])  # fmt: skip
@pytest.mark.parametrize("client", CLIENTS)
def test_client_produces_and_consumes(m: Matrix, client: str, index: int) -> None:
    if client == "kcat" and KCAT is None:
        pytest.skip("kcat is not installed")
    case = m.case(client, index)
    sasl = case.mechanism is not None
    before = _authentications(m, case) if sasl else _handshakes(m)

    assert RUN[client](case) == case.values()

    if sasl:
        assert _authentications(m, case) > before
        return
    assert _handshakes(m) > before
    # the handshake's log line names the principal the rule made of this client's subject
    line = rf"on SSL: TLS handshake done \(TLSv1\.\d \S+\), principal {PRINCIPALS[client]}$"
    assert re.search(line, m.cluster.log_text(0), re.MULTILINE), PRINCIPALS[client]
