"""``minikafka cluster up --security sasl_ssl`` end to end: the brokers talk SASL_SSL with
SCRAM-SHA-512 among themselves, and the client properties it prints connect every kind of
client -- the admin tools under ``--command-config``, the console tools under
``--producer.config`` / ``--consumer.config``, api-versions, and confluent-kafka with the
librdkafka file -- while a client without them is not served.

One 3-broker cluster for the module, started by the command itself as a user runs it (a
subprocess with its own ZooKeeper on free ports), stopped by its pid with SIGTERM. The last
test stops one of its brokers (a failover over the secured listeners), so it stays last.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from config.properties import read_properties
from tests.polling import wait_until
from tools.cluster import port_in_use
from tools.zookeeper_server import find_java, free_port

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[2]
MINIKAFKA = [sys.executable, "-m", "tools.main"]


@dataclass(frozen=True)
class SecuredCluster:
    bootstrap: str
    directory: Path
    #: what ``cluster up`` printed
    output: str
    #: the ``cluster up`` process (its brokers are its children)
    pid: int

    def broker_pid(self, i: int) -> int:
        """Broker i's process: the child of ``cluster up`` that runs its server.properties."""
        config = str(self.directory / f"broker-{i}" / "server.properties").encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue  # exited meanwhile
            if ppid == self.pid and config in cmdline:
                return int(entry.name)
        raise AssertionError(f"no process of broker {i}")

    @property
    def client_properties(self) -> Path:
        return self.directory / "client.properties"

    @property
    def librdkafka_properties(self) -> Path:
        return self.directory / "librdkafka.properties"


def _free_base(count: int) -> int:
    for _ in range(200):
        base = free_port()
        if base + count < 65_000 and not any(port_in_use(base + i) for i in range(count)):
            return base
    raise AssertionError("no run of free ports found")


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredCluster]:
    try:
        find_java()
    except Exception as exc:
        pytest.skip(str(exc))
    tmp = tmp_path_factory.mktemp("secured")
    base, zk_port, console_port = _free_base(9), free_port(), free_port()
    out = tmp / "cluster.out"
    cmd = [
        *MINIKAFKA, "cluster", "up", "--security", "sasl_ssl", "--brokers", "3",
        "--dir", str(tmp / "data"), "--base-port", str(base),
        "--control-base-port", str(base + 3), "--metrics-base-port", str(base + 6),
        "--zookeeper-port", str(zk_port), "--console-port", str(console_port),
    ]  # fmt: skip
    with open(out, "wb") as sink:
        proc = subprocess.Popen(
            cmd, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
            start_new_session=True,
        )  # fmt: skip
    try:
        wait_until(
            lambda: "brokers up" in out.read_text() or proc.poll() is not None, 120, "cluster up"
        )
        assert proc.poll() is None, out.read_text()
        bootstrap = ",".join(f"127.0.0.1:{base + i}" for i in range(3))
        yield SecuredCluster(bootstrap, tmp / "data", out.read_text(), proc.pid)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(90)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(30)


def mk(
    cluster: SecuredCluster, *args: str, stdin: bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """``minikafka <command> --bootstrap-server <cluster> <args...>``."""
    command, *rest = args
    argv = [*MINIKAFKA, command, "--bootstrap-server", cluster.bootstrap, *rest]
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout, cwd=ROOT)


def admin(cluster: SecuredCluster, *args: str) -> subprocess.CompletedProcess[bytes]:
    return mk(cluster, *args, "--command-config", str(cluster.client_properties))


def test_cluster_up_prints_the_line_to_copy(secured: SecuredCluster) -> None:
    assert f"--command-config {secured.client_properties}" in secured.output
    props = read_properties(secured.client_properties)
    assert props["security.protocol"] == "SASL_SSL"
    assert props["sasl.mechanism"] == "SCRAM-SHA-512"
    assert props["sasl.password"] not in secured.output  # the password stays in the file
    server = read_properties(secured.directory / "broker-0" / "server.properties")
    assert server["inter.broker.listener.name"] == "SASL_SSL"


def test_the_web_console_connects_with_the_client_properties(secured: SecuredCluster) -> None:
    import json
    import urllib.request

    (url,) = re.findall(r"web console: (http://127\.0\.0\.1:\d+/)", secured.output)

    def brokers() -> list[int]:
        with urllib.request.urlopen(url + "api/cluster", timeout=10) as response:
            return [b["id"] for b in json.loads(response.read())["brokers"]]

    assert wait_until(brokers, 60, "the web console over SASL_SSL") == [0, 1, 2]


def test_admin_tools_with_command_config_and_replication_over_sasl_ssl(
    secured: SecuredCluster,
) -> None:
    created = admin(secured, "topics", "--create", "--topic", "secure", "--partitions", "2",
                    "--replication-factor", "2")  # fmt: skip
    assert created.returncode == 0, created.stderr
    assert "secure" in admin(secured, "topics", "--list").stdout.decode().split()

    def fully_replicated() -> bool:
        described = admin(secured, "topics", "--describe", "--topic", "secure").stdout.decode()
        rows = re.findall(r"Replicas: (\S+)\s+Isr: (\S+)", described)
        return len(rows) == 2 and all(
            len(replicas.split(",")) == 2 and sorted(isr.split(",")) == sorted(replicas.split(","))
            for replicas, isr in rows
        )

    # both replicas in every ISR: the followers fetch over the SASL_SSL inter-broker listener
    wait_until(fully_replicated, 30, "both replicas in sync")
    configs = admin(secured, "configs", "--describe", "--entity-type", "topics",
                    "--entity-name", "secure")  # fmt: skip
    assert configs.returncode == 0, configs.stderr
    log_dirs = admin(secured, "log-dirs", "--describe")
    assert log_dirs.returncode == 0 and b"secure-0" in log_dirs.stdout
    versions = subprocess.run(
        [*MINIKAFKA, "api-versions", "--bootstrap-server", secured.bootstrap.split(",")[0],
         "--command-config", str(secured.client_properties)],
        capture_output=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert versions.returncode == 0, versions.stderr
    assert "SaslAuthenticate" in versions.stdout.decode()


def test_a_client_without_the_properties_is_not_served(secured: SecuredCluster) -> None:
    """A PLAINTEXT client's first request is not answered: the connection is closed."""
    first = secured.bootstrap.split(",")[0]
    plain = subprocess.run(
        [*MINIKAFKA, "api-versions", "--bootstrap-server", first, "--timeout", "10"],
        capture_output=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert plain.returncode == 1
    assert b"cannot query" in plain.stderr and plain.stdout == b""


def test_console_tools_with_role_config_files(secured: SecuredCluster) -> None:
    topic = f"console-{uuid.uuid4().hex[:6]}"
    lines = [f"line {i}" for i in range(10)]
    produced = mk(secured, "console-producer", "--topic", topic,
                  "--producer.config", str(secured.client_properties),
                  "--producer-property", "acks=all",
                  stdin=("\n".join(lines) + "\n").encode())  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    assert b"WARN" not in produced.stderr  # security keys are known keys
    consumed = mk(secured, "console-consumer", "--topic", topic, "--from-beginning",
                  "--max-messages", "10", "--timeout-ms", "20000",
                  "--consumer.config", str(secured.client_properties))  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.decode().splitlines()) == sorted(lines)


def test_confluent_kafka_with_the_librdkafka_properties(secured: SecuredCluster) -> None:
    from confluent_kafka import Consumer, Producer

    settings = dict(read_properties(secured.librdkafka_properties))
    topic = f"rdkafka-{uuid.uuid4().hex[:6]}"
    producer = Producer({**settings, "acks": "all"})
    delivered: list[object] = []
    for i in range(20):
        producer.produce(topic, f"v{i}".encode(), on_delivery=lambda e, m: delivered.append(e))
    assert producer.flush(30) == 0
    assert delivered == [None] * 20
    consumer = Consumer({**settings, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:

        def read_some() -> bool:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value() or b"")
            return len(got) >= 20

        wait_until(read_some, 60, "20 records consumed over SASL_SSL")
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"v{i}".encode() for i in range(20))


def test_kcat_with_the_printed_line(secured: SecuredCluster) -> None:
    """The kcat line cluster up prints lists the cluster (librdkafka reads the file)."""
    printed = next(line for line in secured.output.splitlines() if "kcat -b" in line)
    command = printed.split(": ", 1)[1].split()
    assert command[0] == "kcat" and "-F" in command
    listed = subprocess.run(command, capture_output=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count(b"broker ") >= 3


def leaders_and_isrs(cluster: SecuredCluster, topic: str) -> list[tuple[str, list[str]]]:
    described = admin(cluster, "topics", "--describe", "--topic", topic).stdout.decode()
    return [
        (leader, sorted(isr.split(",")))
        for leader, isr in re.findall(r"Leader: (\S+)\s+Replicas: \S+\s+Isr: (\S+)", described)
    ]


def test_a_broker_stops_and_the_others_carry_on_over_sasl_ssl(secured: SecuredCluster) -> None:
    """Last in the module: broker stopped for good. Its controlled shutdown goes over the
    SASL_SSL control plane, the followers' fetches over the SASL_SSL inter-broker listener,
    and a consumer group keeps working."""
    from confluent_kafka import Consumer, Producer

    created = admin(secured, "topics", "--create", "--topic", "failover", "--partitions", "1",
                    "--replication-factor", "3")  # fmt: skip
    assert created.returncode == 0, created.stderr
    wait_until(
        lambda: [isr for _, isr in leaders_and_isrs(secured, "failover")] == [["0", "1", "2"]],
        30,
        "three replicas in sync",
    )
    settings = dict(read_properties(secured.librdkafka_properties))
    producer = Producer({**settings, "acks": "all"})
    for i in range(10):
        producer.produce("failover", f"before {i}".encode())
    assert producer.flush(30) == 0
    # the group is formed (and __consumer_offsets made, which needs all three brokers
    # for its replication factor) before a broker stops: the group must live through it
    consumer = Consumer({**settings, "group.id": "failover", "auto.offset.reset": "earliest"})
    consumer.subscribe(["failover"])
    got: list[bytes] = []

    def read_up_to(count: int) -> Callable[[], bool]:
        def read_some() -> bool:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value() or b"")
            return len(got) >= count

        return read_some

    try:
        wait_until(read_up_to(10), 60, "10 records before the failover")
        [(leader, _)] = leaders_and_isrs(secured, "failover")
        stopping = secured.broker_pid(int(leader))
        os.kill(stopping, signal.SIGTERM)
        wait_until(lambda: not Path(f"/proc/{stopping}").exists(), 60, f"broker {leader} to exit")

        def moved() -> bool:
            [(now, isr)] = leaders_and_isrs(secured, "failover")
            return now not in (leader, "none", "-1") and leader not in isr

        wait_until(moved, 30, "a new leader without the stopped broker in the ISR")
        for i in range(10):
            producer.produce("failover", f"after {i}".encode())
        assert producer.flush(30) == 0
        wait_until(read_up_to(20), 60, "20 records after the failover")
    finally:
        consumer.close()
    expected = [f"{when} {i}".encode() for when in ("before", "after") for i in range(10)]
    assert got == expected
    log = (secured.directory / f"broker-{leader}" / "server.log").read_text(errors="replace")
    assert "controlled shutdown attempt" not in log and "controlled shutdown left" not in log
