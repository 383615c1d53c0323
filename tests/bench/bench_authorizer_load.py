"""Produce and fetch with the authorizer on (1,000 ACLs, 100 prefixed) beside it off, in
one run, over the same SASL/PLAIN user.

    .venv/bin/python tests/bench/bench_authorizer_load.py [--mb 100]

Two brokers of one cluster (an embedded ZooKeeper, ``LocalCluster``): one runs the
authorizer with 1,000 ACLs written to ZooKeeper before it starts (900 literal, 100
prefixed; the user ``bench`` holds a literal WRITE and a prefixed READ on its topic), the
other none. Each leads one single-partition topic; confluent-kafka, in this process,
produces ``--mb`` MiB of 1 KiB records (acks 1, linger 5 ms) to each, then reads them
back from offset 0; each phase twice, alternating, the better kept. The two brokers are
not alike (one is the controller), so the cluster runs twice, the authorizer on broker 0
then on broker 1, and the ratio on/off is given for each placement and as their
geometric mean, which cancels the brokers' difference (target: at least 0.95). Both
brokers share the machine's cores with the load: compare the rows, not the numbers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from protocol.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from tools.cluster import ClusterLayout, LocalCluster
from tools.zookeeper_server import ZooKeeperServer, free_port
from zk import acls
from zk.session import ZkSession

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="bench" password="bench-secret" user_bench="bench-secret";'
)
TOPICS = ("bench-authorized", "bench-open")


@dataclass(frozen=True)
class BenchLayout(ClusterLayout):
    sasl_ports: tuple[int, ...] = ()
    #: the broker running the authorizer
    authorized: int = 0

    def broker_properties(self, i: int) -> dict[str, str]:
        props = super().broker_properties(i)
        extra = f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_ports[i]}"
        props["listeners"] += "," + extra
        props["advertised.listeners"] += "," + extra
        props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        props["sasl.enabled.mechanisms"] = "PLAIN"
        props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = JAAS
        if i == self.authorized:
            props["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer"
            props["super.users"] = "User:ANONYMOUS"
        return props


def write_acls(zk_connect: str, topic: str) -> None:
    session = ZkSession.connect(zk_connect, connect_timeout_s=15.0)
    try:
        allow = AclPermissionType.ALLOW
        for i in range(900):
            pattern = ResourcePattern(ResourceType.TOPIC, f"other-{i}", PatternType.LITERAL)
            entry = AccessControlEntry(f"User:u{i % 300}", "*", AclOperation.WRITE, allow)
            acls.add_acls(session, pattern, [entry])
        for i in range(98):
            pattern = ResourcePattern(ResourceType.TOPIC, f"team-{i}-", PatternType.PREFIXED)
            entry = AccessControlEntry(f"User:u{i}", "*", AclOperation.READ, allow)
            acls.add_acls(session, pattern, [entry])
        acls.add_acls(
            session,
            ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
            [AccessControlEntry("User:bench", "*", AclOperation.WRITE, allow)],
        )
        acls.add_acls(
            session,
            ResourcePattern(ResourceType.TOPIC, "bench-", PatternType.PREFIXED),
            [AccessControlEntry("User:bench", "*", AclOperation.READ, allow)],
        )
        acls.add_acls(
            session,
            ResourcePattern(ResourceType.TOPIC, "be", PatternType.PREFIXED),
            [AccessControlEntry("User:u7", "*", AclOperation.READ, allow)],
        )
        assert sum(len(v) for v in acls.get_all_acls(session).values()) == 1001
    finally:
        session.close()


def client(port: int) -> dict[str, Any]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "bench",
        "sasl.password": "bench-secret",
    }


def produce(port: int, topic: str, mb: int) -> float:
    producer = Producer({**client(port), "linger.ms": 5, "batch.size": 65536, "acks": 1})
    value = b"x" * 1024
    count = mb * 1024
    failed: list[object] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failed.append(error)

    start = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    elapsed = time.perf_counter() - start
    assert not failed, failed[:3]
    return mb / elapsed


def consume(port: int, topic: str, mb: int) -> float:
    consumer = Consumer({**client(port), "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    wanted, got = 2 * mb * 1024 * 1024, 0  # both produce rounds
    start = time.perf_counter()
    while got < wanted:
        for msg in consumer.consume(1000, 1.0):
            if msg.error() is None:
                got += len(msg.value() or b"")
    elapsed = time.perf_counter() - start
    consumer.close()
    return 2 * mb / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=100)
    mb = parser.parse_args().mb
    ratios: dict[str, list[float]] = {"produce": [], "fetch": []}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        zookeeper = ZooKeeperServer(data_dir=directory / "zk", port=free_port())
        zookeeper.start()
        try:
            for authorized in (0, 1):
                zk_connect = f"{zookeeper.connect_string}/bench-{authorized}"
                write_acls(zk_connect, TOPICS[authorized])
                ports = [free_port() for _ in range(8)]
                layout = BenchLayout(
                    directory=directory / f"cluster-{authorized}",
                    client_ports=tuple(ports[0:2]),
                    control_ports=tuple(ports[2:4]),
                    metrics_ports=tuple(ports[4:6]),
                    zookeeper_connect=zk_connect,
                    overrides=(("zookeeper.connect", zk_connect),),
                    sasl_ports=tuple(ports[6:8]),
                    authorized=authorized,
                )
                local = LocalCluster(layout)
                local.start(timeout_s=90)
                try:
                    for phase, ratio in run(layout, mb):
                        ratios[phase].append(ratio)
                finally:
                    local.stop(grace_s=30)
        finally:
            zookeeper.stop()
    for phase, values in ratios.items():
        mean = (values[0] * values[1]) ** 0.5
        print(f"{phase:<8} on/off, both placements: {mean:.2f}")


def run(layout: BenchLayout, mb: int) -> list[tuple[str, float]]:
    admin = AdminClient({"bootstrap.servers": layout.bootstrap_servers})
    topics = [NewTopic(t, 1, replica_assignment=[[i]]) for i, t in enumerate(TOPICS)]
    for future in admin.create_topics(topics).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # both leaders known before measuring
        found = admin.list_topics(timeout=10).topics
        if all(t in found and found[t].partitions[0].leader >= 0 for t in TOPICS):
            break
        time.sleep(0.1)  # polling interval of a bounded wait
    on_port, on_topic = layout.sasl_ports[layout.authorized], TOPICS[layout.authorized]
    other = 1 - layout.authorized
    off_port, off_topic = layout.sasl_ports[other], TOPICS[other]
    rows = []
    for phase, fn in (("produce", produce), ("fetch", consume)):
        # alternating, twice each, the best of each kept: the first run of a process warms
        # up what the second finds warm
        on = off = 0.0
        for _ in range(2):
            off = max(off, fn(off_port, off_topic, mb))
            on = max(on, fn(on_port, on_topic, mb))
        rows.append((phase, on, off))
    print(f"authorizer on broker {layout.authorized} (MiB/s, 1,001 ACLs)")
    print(f"{'':<8} {'on':>8} {'off':>8} {'ratio':>6}")
    for phase, on, off in rows:
        print(f"{phase:<8} {on:>8.1f} {off:>8.1f} {on / off:>6.2f}")
    return [(phase, on / off) for phase, on, off in rows]


if __name__ == "__main__":
    main()
