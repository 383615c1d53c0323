"""The project's group client against librdkafka's mock cluster (confluent-kafka with
``test.mock.num.brokers``), which serves FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit and OffsetFetch of named partitions (not ListGroups,
DescribeGroups, DeleteGroups, OffsetDelete or OffsetFetch of every partition: those are
tested on a real cluster).

One mock cluster of three brokers for the module, with one topic written once; each test
uses its own group id.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from client import KafkaClient
from client.group import GroupConfig, GroupMember
from client.group_admin import alter_group_offsets, list_group_offsets
from protocol.values import TopicPartition
from tests.polling import until

TOPIC = "orders"
RECORDS = 40


@dataclass(frozen=True)
class Mock:
    bootstrap: str
    partitions: int


@pytest.fixture(scope="module")
def mock() -> Iterator[Mock]:
    from confluent_kafka import Producer

    handle: Any = Producer({"test.mock.num.brokers": 3, "log_level": 3})
    for i in range(RECORDS):
        handle.produce(TOPIC, value=b"r%d" % i, partition=i % 4)
    assert handle.flush(30) == 0
    metadata = handle.list_topics(timeout=10)
    broker = next(iter(metadata.brokers.values()))
    yield Mock(f"{broker.host}:{broker.port}", len(metadata.topics[TOPIC].partitions))
    del handle


def _config(group: str) -> GroupConfig:
    return GroupConfig(group, session_timeout_ms=6000, heartbeat_interval_ms=200)


async def _joined(boot: str, group: str, n: int) -> list[tuple[KafkaClient, GroupMember]]:
    """``n`` members joined in one generation."""
    clients = [KafkaClient(boot) for _ in range(n)]
    for c in clients:
        await c.start()
    members = [GroupMember(c, _config(group), [TOPIC]) for c in clients]
    joins: dict[int, asyncio.Task[object]] = {}

    # Members joining at once may take more than one rebalance (a JoinGroup that reaches
    # the coordinator after a round closed starts another; the mock also ends a round on
    # the leader's SyncGroup and refuses a follower's that reaches it later, which under
    # load happens round after round), and a member learns it from its next heartbeat.
    # Each member then rejoins at once, on its own, as each consumer's loop does.
    # Rejoining them batch after batch livelocks: a member told to rejoin while the
    # other's join is in flight waits for that join, which in turn waits for it until the
    # coordinator closes the round without it -- and the left-out member's rejoin starts
    # the next round alone, the other then waiting in its turn.
    def settled() -> bool:
        for i, member in enumerate(members):
            task = joins.get(i)
            if task is not None and task.done():
                del joins[i]
                task.result()  # a failed join is reported (and retried at the next poll)
            if member.needs_rejoin and i not in joins:
                joins[i] = asyncio.create_task(member.join())
        return (
            not joins
            and not any(m.needs_rejoin for m in members)
            and len({m.generation for m in members}) == 1
        )

    try:
        # each round after the first lasts the mock's rebalance delay (the session timeout
        # less a second, 5 s here) however fast the members are: room for ten of them
        await until(settled, timeout=60, what=f"{n} members in one generation")
    finally:
        for task in joins.values():
            task.cancel()
    return list(zip(clients, members, strict=True))


async def _close(pairs: list[tuple[KafkaClient, GroupMember]]) -> None:
    for client, member in pairs:
        await member.close()
        await client.close()


def test_two_members_split_the_partitions_and_read_each_others_commits(mock: Mock) -> None:
    async def scenario() -> None:
        pairs = await _joined(mock.bootstrap, "split", 2)
        try:
            (_, a), (_, b) = pairs
            assert a.generation == b.generation > 0
            assert [a.is_leader, b.is_leader].count(True) == 1
            mine = a.assignment.topic_partitions()
            theirs = b.assignment.topic_partitions()
            assert not set(mine) & set(theirs)
            assert sorted(mine + theirs) == [(TOPIC, p) for p in range(mock.partitions)]
            # range: contiguous halves
            assert len(mine) == len(theirs) == mock.partitions // 2

            await a.commit({TopicPartition(t, p): 3 for t, p in mine})
            seen = await b.committed([TopicPartition(t, p) for t, p in mine + theirs])
            assert seen == {TopicPartition(t, p): 3 for t, p in mine}
        finally:
            await _close(pairs)

    asyncio.run(scenario())


def test_a_member_leaving_makes_the_other_rejoin_and_take_everything(mock: Mock) -> None:
    async def scenario() -> None:
        pairs = await _joined(mock.bootstrap, "leave", 2)
        (_, a), (_, b) = pairs
        try:
            generation = a.generation
            await b.leave()
            # a's next heartbeat is answered REBALANCE_IN_PROGRESS
            await until(lambda: a.needs_rejoin, timeout=10, what="a told to rejoin")
            assignment = await a.join()
            assert a.generation > generation
            assert assignment.topic_partitions() == [(TOPIC, p) for p in range(mock.partitions)]
        finally:
            await _close(pairs)

    asyncio.run(scenario())


def test_offsets_altered_from_outside_an_empty_group_are_read_back(mock: Mock) -> None:
    async def scenario() -> None:
        async with KafkaClient(mock.bootstrap) as client:
            wanted = {TopicPartition(TOPIC, 0): 7, TopicPartition(TOPIC, 1): 2}
            await alter_group_offsets(client, "outside", wanted)
            every = [TopicPartition(TOPIC, p) for p in range(mock.partitions)]
            assert await list_group_offsets(client, "outside", every) == wanted

    asyncio.run(scenario())


def _console(mock: Mock, group: str, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable, "-m", "tools.main", "console-consumer",
        "--bootstrap-server", mock.bootstrap, "--topic", TOPIC, "--group", group,
        "--consumer-property", "session.timeout.ms=6000", *extra,
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def test_console_consumer_in_a_group_resumes_from_its_commits(mock: Mock) -> None:
    first = _console(mock, "console", "--from-beginning", "--max-messages", "25")
    assert first.returncode == 0, first.stderr
    second = _console(mock, "console", "--from-beginning", "--timeout-ms", "3000")
    assert second.returncode == 0, second.stderr
    values = first.stdout.split() + second.stdout.split()
    # --from-beginning applied only to the first run: the group had no commit then
    assert sorted(values) == sorted(f"r{i}" for i in range(RECORDS))
    assert "Processed a total of 15 messages" in second.stderr
