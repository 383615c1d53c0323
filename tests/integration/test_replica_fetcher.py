"""Followers copy their leaders' logs: the same batches, byte for byte, on every replica.

One 3-broker cluster for the module (real ZooKeeper, real broker processes). Records go
in with Produce requests to the leader; what each replica holds is read straight from
its segment files, so a replica is equal to its leader only if every batch (offsets,
leader epochs, producer fields, CRC) is. Three situations: plain replication; a follower
whose log tail was torn while it was down (recovery cuts it, fetching repairs it); an old
leader holding records no other replica got, which it must drop (OffsetForLeaderEpoch
truncation) once it follows the new leader, whose log took other records at those
offsets. Unclean leader election is on so that the last situation does not depend on
how the controller shrinks ISRs of stopped brokers. Each test leaves all brokers running.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from client.connection import Connection, ConnectionConfig
from protocol import ApiKey, ErrorCode
from protocol.messages import CreateTopicsRequest, ProduceRequest
from protocol.records.batch import LOG_OVERHEAD, iter_batches
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from storage.log_manager import CLEAN_SHUTDOWN_FILE
from tests.integration.cluster import TestCluster, start_cluster
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(240)

OVERRIDES = (
    ("replica.fetch.backoff.ms", "200"),
    ("replica.fetch.wait.max.ms", "200"),
    ("unclean.leader.election.enable", "true"),
)


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("replication"), 3, OVERRIDES)


# -- helpers ----------------------------------------------------------------------------


def create_topic(c: TestCluster, name: str, partitions: int) -> None:
    topic = CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=3
    )
    body = CreateTopicsRequest(topics=[topic], timeout_ms=20_000, validate_only=False)
    controller = wait_until(c.controller, 30, "a controller")
    (result,) = c.request(controller, ApiKey.CREATE_TOPICS, 7, body).topics
    assert result.error_code == ErrorCode.NONE, result.error_message


def leader_of(c: TestCluster, topic: str, partition: int, ask: int) -> int | None:
    """The partition's leader as broker ``ask`` sees it (None while it has none)."""
    (t,) = c.metadata(ask, [topic]).topics
    leader = next(p.leader_id for p in t.partitions if p.partition_index == partition)
    return int(leader) if leader >= 0 else None


def produce(
    c: TestCluster, broker: int, topic: str, partition: int, values: list[bytes], **batch: Any
) -> int:
    """One batch of ``values`` to ``broker`` (acks=1); its base offset."""
    now = int(time.time() * 1000)
    records = bytes(build_batch([SimpleRecord(None, v, (), now) for v in values], **batch))
    data = ProduceRequest.PartitionProduceData(index=partition, records=records)
    body = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=10_000,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[data])],
    )
    (part,) = c.request(broker, ApiKey.PRODUCE, 7, body).responses[0].partition_responses
    assert part.error_code == ErrorCode.NONE, ErrorCode(part.error_code).name
    return int(part.base_offset)


def partition_dir(c: TestCluster, i: int, topic: str, partition: int) -> Path:
    return Path(c.layout.log_dir(i)) / f"{topic}-{partition}"


def disk_batches(c: TestCluster, i: int, topic: str, partition: int) -> list[bytes]:
    """Every whole batch in broker i's segment files of the partition, in offset order."""
    found: list[bytes] = []
    for segment in sorted(partition_dir(c, i, topic, partition).glob("*.log")):
        data = segment.read_bytes()
        for pos, header in iter_batches(data):
            found.append(data[pos : pos + LOG_OVERHEAD + header.batch_length])
    return found


def replicas_equal(c: TestCluster, topic: str, partition: int, batches: int) -> list[bytes]:
    """The partition's batches once all three replicas hold the same ``batches`` ones."""
    copies = [disk_batches(c, i, topic, partition) for i in c.broker_ids]
    lengths = [len(b) for b in copies]
    if any(n != batches for n in lengths) or copies[1:] != copies[:-1]:
        raise AssertionError(f"batches per replica: {lengths}, wanted {batches} each, equal")
    return copies[0]


def stop(c: TestCluster, i: int) -> None:
    """Graceful stop (SIGTERM): its logs are closed cleanly."""
    assert c.local.stop_broker(i, grace_s=60) == 0


def headers(batches: list[bytes]) -> list[Any]:
    return [h for b in batches for _, h in iter_batches(b)]


# -- tests ------------------------------------------------------------------------------


def test_every_replica_stores_the_leaders_batches(c: TestCluster) -> None:
    create_topic(c, "copied", 2)
    for p in (0, 1):
        leader = wait_until(partial(leader_of, c, "copied", p, 0), 30, "a leader")
        produce(c, leader, "copied", p, [b"a%d" % i for i in range(3)])
        produce(c, leader, "copied", p, [b"b" * 1000] * 5)
        # an idempotent producer's batch: its producer id and sequence must be copied too
        produce(c, leader, "copied", p, [b"c"], producer_id=4000 + p, producer_epoch=0,
                base_sequence=0)  # fmt: skip
    for p in (0, 1):
        batches = wait_until(partial(replicas_equal, c, "copied", p, 3), 30, "replicas")
        hs = headers(batches)
        assert [h.base_offset for h in hs] == [0, 3, 8]
        assert hs[2].producer_id == 4000 + p and hs[2].base_sequence == 0
        assert len({h.partition_leader_epoch for h in hs}) == 1  # one leader wrote them
    lag = wait_until(
        lambda: all(c.metric(i, "minikafka_replica_fetcher_max_lag") == 0 for i in c.broker_ids),
        30,
        "no follower lag",
    )
    assert lag


def test_a_torn_follower_tail_is_fetched_again(c: TestCluster) -> None:
    create_topic(c, "torn", 1)
    leader = wait_until(lambda: leader_of(c, "torn", 0, 0), 30, "a leader")
    for n in range(3):
        produce(c, leader, "torn", 0, [b"before-%d" % n] * 4)
    before = wait_until(lambda: replicas_equal(c, "torn", 0, 3), 30, "replicas")
    follower = next(i for i in c.broker_ids if i != leader)

    stop(c, follower)
    directory = partition_dir(c, follower, "torn", 0)
    (segment,) = sorted(directory.glob("*.log"))
    size = segment.stat().st_size
    with open(segment, "r+b") as f:  # the last batch loses its tail; garbage follows
        f.truncate(size - 7)
        f.seek(0, os.SEEK_END)
        f.write(b"\xde\xad\xbe\xef" * 10)
    # without the clean-shutdown marker the broker recovers (and cuts) the segment
    (Path(c.layout.log_dir(follower)) / CLEAN_SHUTDOWN_FILE).unlink()
    produce(c, leader, "torn", 0, [b"while-down"] * 2)
    c.restart(follower)

    after = wait_until(lambda: replicas_equal(c, "torn", 0, 4), 60, "the follower repaired")
    assert after[:3] == before
    assert [h.base_offset for h in headers(after)] == [0, 4, 8, 12]


def test_divergent_records_of_an_old_leader_are_truncated(c: TestCluster) -> None:
    create_topic(c, "diverge", 1)
    old = wait_until(lambda: leader_of(c, "diverge", 0, 0), 30, "a leader")
    f1, f2 = (i for i in c.broker_ids if i != old)
    produce(c, old, "diverge", 0, [b"agreed"] * 3)
    agreed = wait_until(lambda: replicas_equal(c, "diverge", 0, 1), 30, "replicas")

    # Both followers go; the old leader takes records nobody copies, then dies.
    stop(c, f1)
    stop(c, f2)
    produce(c, old, "diverge", 0, [b"lost-1"] * 2)
    produce(c, old, "diverge", 0, [b"lost-2"] * 2)
    os.kill(c.pid(old), signal.SIGKILL)
    c.local.processes[old].wait(30)

    # The followers come back; one is elected (the old leader's session expires) and
    # takes different records at the same offsets, in a newer epoch.
    c.restart(f1)
    c.restart(f2)
    new = wait_until(
        lambda: (leader := leader_of(c, "diverge", 0, f1)) in (f1, f2) and leader,
        60,
        "a new leader among the restarted brokers",
    )
    assert isinstance(new, int)
    offset = wait_until(lambda: produce(c, new, "diverge", 0, [b"new"] * 4), 30, "new leader")
    assert offset == 3

    c.restart(old)
    final = wait_until(lambda: replicas_equal(c, "diverge", 0, 2), 60, "the old leader")
    assert final[0] == agreed[0]
    first, second = headers(final)
    assert (second.base_offset, second.records_count) == (3, 4)
    assert second.partition_leader_epoch > first.partition_leader_epoch
    assert all(b"lost" not in b for b in disk_batches(c, old, "diverge", 0))


def test_pipelined_acks_all_produces_are_answered_in_order(c: TestCluster) -> None:
    """Five acks=all Produce requests written at once on one connection (an idempotent
    producer's batches): they wait for the followers together, and each answer comes back
    in request order (the client checks correlation ids) with its batch's offsets."""
    create_topic(c, "pipelined", 1)
    leader = wait_until(partial(leader_of, c, "pipelined", 0, 0), 30, "a leader")
    wait_until(partial(full_isr, c, "pipelined"), 30, "a full ISR")

    def body(n: int) -> ProduceRequest:
        now = int(time.time() * 1000)
        values = [b"p%d-%d" % (n, i) for i in range(3)]
        batch = build_batch([SimpleRecord(None, v, (), now) for v in values],
                            producer_id=5000, producer_epoch=0, base_sequence=3 * n)  # fmt: skip
        data = ProduceRequest.PartitionProduceData(index=0, records=bytes(batch))
        topic = ProduceRequest.TopicProduceData(name="pipelined", partition_data=[data])
        return ProduceRequest(acks=-1, timeout_ms=20_000, topic_data=[topic])

    async def pipelined() -> list[Any]:
        port = c.layout.client_ports[leader]
        conn = await Connection.open("127.0.0.1", port, ConnectionConfig("pipelining", 5.0))
        try:
            sends = [conn.request(ApiKey.PRODUCE, body(n), version=7) for n in range(5)]
            return list(await asyncio.gather(*sends))
        finally:
            conn.close()
            await conn.wait_closed()

    answers = asyncio.run(pipelined())
    parts = [a.responses[0].partition_responses[0] for a in answers]
    assert [ErrorCode(p.error_code) for p in parts] == [ErrorCode.NONE] * 5
    assert [p.base_offset for p in parts] == [0, 3, 6, 9, 12]
    batches = wait_until(partial(replicas_equal, c, "pipelined", 0, 5), 30, "replicas")
    assert [(h.base_offset, h.base_sequence) for h in headers(batches)] == [
        (3 * n, 3 * n) for n in range(5)
    ]


def full_isr(c: TestCluster, topic: str) -> bool:
    (t,) = c.metadata(0, [topic]).topics
    return all(len(p.isr_nodes) == 3 for p in t.partitions)
