"""Consumer groups with the four real clients against a 3-broker minikafka cluster.

Every test runs real members (tests.integration.group_clients: confluent-kafka,
kafka-python and aiokafka consumers in threads, kcat -G processes) and checks two sides:
what the members were handed (each record to exactly one member, none skipped), and what
the coordinator says over the wire (DescribeGroups, OffsetFetch, FindCoordinator).

- A group of three members of one client shares a 6-partition topic, each record going
  to exactly one member, the member that owns its partition.
- Members leaving and joining: each rebalance resumes every partition from its committed
  offset (auto.offset.reset=earliest, so a lost commit would show as records read twice,
  and a skipped record as one never read).
- cooperative-sticky (confluent-kafka): a joining member takes partitions away from the
  others without the others giving up the ones they keep.
- A group of confluent-kafka [range, roundrobin] and kafka-python [roundrobin, range]
  members chooses its protocol by vote: the majority's roundrobin, although the group's
  leader (the first to join, a confluent-kafka member) prefers range.
- A member frozen with SIGSTOP (kcat: its connections stay open, its heartbeats stop)
  is removed after its session timeout and its partitions go to the others; static
  members (group.instance.id) restarting get their partitions back in the same
  generation, without a rebalance; a second consumer started with a running one's
  group.instance.id takes its place in the same generation, and the first's member id is
  fenced (FENCED_INSTANCE_ID).
- ``group.max.size``: once the group's places are taken (members handed an id by
  MEMBER_ID_REQUIRED hold one), a new member gets GROUP_MAX_SIZE_REACHED; the places come
  free when those members' session timeouts pass without them rejoining.
- The lag (log end offset minus committed offset) over the wire, and as
  `minikafka consumer-groups --describe` prints it.
- "polygenelubricants", whose Java hashCode is Integer.MIN_VALUE, lives in partition 0 of
  __consumer_offsets (Kafka's abs maps MIN_VALUE to 0): its coordinator is that
  partition's leader and its commits are records of that partition.
- Last, because they move leaders: kill -9 of a group's coordinator moves the group to
  the new leader of its offsets partition with the commits intact and the members
  consuming on; a restart of the whole cluster keeps every commit.

The offsets topic has 6 partitions (quick to load, and 2^31 mod 6 != 0, so the MIN_VALUE
rule is visible); new groups wait 100 ms for more members; sessions may be as short as one
second. One cluster for the module; every wait is a poll with a deadline.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from protocol import ApiKey, ErrorCode
from protocol.messages import (
    CreateTopicsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
)
from spark_jobs.offsets_topic import decode_commit
from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.group_clients import (
    KCAT,
    OFFSETS_TOPIC,
    ConfluentMember,
    KafkaPythonMember,
    KcatMember,
    Member,
    all_deliveries,
    close_all,
    committed,
    coordinator,
    describe,
    end_offsets,
    member_of,
    offsets_topic_records,
    produce_values,
    split_assignment,
    stable_with,
    wait_committed,
    wait_delivered,
)
from tests.integration.roundtrip import leader_of, restart_once_expired
from tests.polling import wait_until
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]
OFFSETS_PARTITIONS = 6
PARTITIONS = 6
OVERRIDES = (
    ("offsets.topic.num.partitions", str(OFFSETS_PARTITIONS)),
    ("group.initial.rebalance.delay.ms", "100"),
    ("group.min.session.timeout.ms", "1000"),
    ("group.max.size", str(5)),
)
#: group.max.size above: more than any test's group holds at once
MAX_GROUP_SIZE = 5
CLIENTS = ("kcat", "confluent-kafka", "kafka-python", "aiokafka")
#: a rebalance: every member notices (heartbeat), rejoins, and the leader assigns
REBALANCE_TIMEOUT_S = 45.0
#: a string whose Java hashCode is Integer.MIN_VALUE
MIN_VALUE_GROUP = "polygenelubricants"


@pytest.fixture(scope="module")
def c(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    directory = tmp_path_factory.mktemp("groups")
    with contextlib.contextmanager(start_cluster)(zookeeper, directory, 3, OVERRIDES) as cluster:
        wait_until(lambda: cluster.local.metadata_complete(), 30, "every broker's metadata")
        yield cluster


def new_topic(c: TestCluster, name: str, partitions: int = PARTITIONS) -> str:
    controller = wait_until(c.controller, 20, "a controller")
    new = [CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions,
                                              replication_factor=3)]  # fmt: skip
    body = CreateTopicsRequest(topics=new, timeout_ms=30_000, validate_only=False)
    (created,) = c.request(controller, ApiKey.CREATE_TOPICS, 7, body).topics
    assert created.error_code == ErrorCode.NONE
    wait_until(
        lambda: all(
            len(t.partitions) == partitions and all(p.leader_id >= 0 for p in t.partitions)
            for i in c.broker_ids
            for t in c.metadata(i, [name]).topics
        ),
        30,
        f"every broker to know {name}",
    )
    return name


@contextlib.contextmanager
def running(members: Sequence[Member]) -> Iterator[Sequence[Member]]:
    """Start the members (in order: the first becomes the group's leader); close them all
    after, and fail on any error a client reported."""
    try:
        for m in members:
            m.start()
        yield members
    finally:
        close_all(members)
    assert fatal_errors(members) == []


def fatal_errors(members: Sequence[Member]) -> list[str]:
    """What the clients reported, failed commits aside (a commit racing a rebalance may
    fail; the delivery checks account for what that costs)."""
    return [f"{m.name}: {e}" for m in members for e in m.errors() if not e.startswith("commit")]


def wait_split(c: TestCluster, group: str, members: list[Member]) -> dict[str, frozenset[int]]:
    """Until the group is Stable with exactly ``members``, and their assignments together
    hold every partition once; the assignments."""
    return wait_until(
        lambda: stable_with(c, group, len(members)) and split_assignment(members, PARTITIONS),
        REBALANCE_TIMEOUT_S,
        f"{group} to be Stable with {[m.name for m in members]} sharing the partitions",
    )


def assert_exactly_once(members: list[Member], values: list[bytes]) -> None:
    """Every one of ``values`` was handed to exactly one member, once."""
    seen = Counter(d.value for d in all_deliveries(members))
    assert {v for v, n in seen.items() if n > 1} == set()
    assert set(values) <= set(seen), "records never delivered"


def assert_delivered_once_but_failed_commits(members: list[Member], values: list[bytes]) -> None:
    """No record skipped; a record read twice only where its member's commit failed (the
    client's at-least-once): never a whole range read again from a lost commit."""
    deliveries = all_deliveries(members)
    seen = Counter(d.value for d in deliveries)
    assert set(values) <= set(seen), "records never delivered"
    failed = "\n".join(e for m in members for e in m.errors())
    twice = {(d.partition, d.offset) for d in deliveries if seen[d.value] > 1}
    assert all(f"commit of {p}@{o}:" in failed for p, o in twice), f"read twice: {sorted(twice)}"


# -- a group of one client --------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_a_group_of_three_shares_the_partitions(c: TestCluster, client: str) -> None:
    if client == "kcat" and KCAT is None:
        pytest.skip("kcat is not installed")
    topic = new_topic(c, f"share-{client}")
    group = f"share-{client}"
    members = [
        member_of(client, f"{client}-{i}", group, topic, c.layout.bootstrap_servers)
        for i in range(3)
    ]
    with running(members):
        split = wait_split(c, group, members)
        values = produce_values(c, topic, PARTITIONS, 10, group)
        wait_delivered(members, values)
        described = describe(c, group)
    assert_exactly_once(members, values)
    for d in all_deliveries(members):
        assert d.partition in split[d.member], f"{d} went to a member without its partition"
    assert described.protocol_type == "consumer"
    assert sorted(m.client_id for m in described.members) == sorted(m.name for m in members)


def test_members_leaving_and_joining_resume_from_committed_offsets(c: TestCluster) -> None:
    topic = new_topic(c, "resume")
    group = "resume"
    bootstrap = c.layout.bootstrap_servers
    a, b, leaver, joiner = (
        ConfluentMember(f"resume-{name}", group, topic, bootstrap)
        for name in ("a", "b", "leaver", "joiner")
    )
    members: list[Member] = [a, b, leaver, joiner]
    values: list[bytes] = []
    try:
        for m in (a, b, leaver):
            m.start()
        wait_split(c, group, [a, b, leaver])
        values += produce_values(c, topic, PARTITIONS, 10, "resume-1")
        wait_delivered(members, values)
        wait_committed(c, group, topic, dict.fromkeys(range(PARTITIONS), 10))

        leaver.close()  # commits what it read, then LeaveGroup
        # written while the group rebalances: the survivors must start at the commits
        values += produce_values(c, topic, PARTITIONS, 10, "resume-2")
        wait_split(c, group, [a, b])
        wait_delivered(members, values)

        joiner.start()
        values += produce_values(c, topic, PARTITIONS, 5, "resume-3")  # while it joins
        wait_split(c, group, [a, b, joiner])
        values += produce_values(c, topic, PARTITIONS, 5, "resume-4")  # once it has joined
        wait_delivered(members, values)
        wait_committed(c, group, topic, dict.fromkeys(range(PARTITIONS), 30))
    finally:
        close_all(members)
    assert_delivered_once_but_failed_commits(members, values)
    assert joiner.deliveries(), "the joining member was given nothing to read"
    assert fatal_errors(members) == []


def test_cooperative_sticky_keeps_what_it_can(c: TestCluster) -> None:
    topic = new_topic(c, "cooperative")
    group = "cooperative"
    bootstrap = c.layout.bootstrap_servers
    members: list[Member] = [
        ConfluentMember(f"coop-{i}", group, topic, bootstrap,
                        **{"partition.assignment.strategy": "cooperative-sticky"})
        for i in range(3)
    ]  # fmt: skip
    with running(members[:2]):
        before = wait_split(c, group, members[:2])
        marks = {m.name: len(m.revocations()) for m in members[:2]}
        values = produce_values(c, topic, PARTITIONS, 5, "coop-1")
        with running(members[2:]):
            after = wait_split(c, group, members)
            given_up = {
                m.name: frozenset[int]().union(*m.revocations()[marks[m.name] :])
                for m in members[:2]
            }
            values += produce_values(c, topic, PARTITIONS, 5, "coop-2")
            wait_delivered(members, values)
            described = describe(c, group)
    assert described.protocol_data == "cooperative-sticky"
    for m in members[:2]:
        assert before[m.name] & after[m.name], f"{m.name} kept none of {sorted(before[m.name])}"
        # they gave up only what the newcomer took, never everything as eager members do
        assert given_up[m.name] == before[m.name] - after[m.name]
    assert_delivered_once_but_failed_commits(members, values)


# -- mixed clients, expiry, static members ---------------------------------------------------------


def test_mixed_clients_choose_the_protocol_by_vote(c: TestCluster) -> None:
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    topic = new_topic(c, "vote")
    group = "vote"
    bootstrap = c.layout.bootstrap_servers
    leader = ConfluentMember(
        "vote-librdkafka", group, topic, bootstrap,
        **{"partition.assignment.strategy": "range,roundrobin"},
    )  # fmt: skip
    others = [
        KafkaPythonMember(
            f"vote-kafka-python-{i}",
            group,
            topic,
            bootstrap,
            partition_assignment_strategy=[RoundRobinPartitionAssignor, RangePartitionAssignor],
        )
        for i in range(2)
    ]
    members: list[Member] = [leader, *others]
    with running([leader]):
        wait_split(c, group, [leader])  # the first member to join leads the group
        with running(others):
            wait_split(c, group, members)
            values = produce_values(c, topic, PARTITIONS, 10, group)
            wait_delivered(members, values)
            described = describe(c, group)
    # range has one vote (the leader's), roundrobin two
    assert described.protocol_data == "roundrobin"
    assert_exactly_once(members, values)


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed")
def test_a_member_that_stops_heartbeating_is_removed_after_its_session_timeout(
    c: TestCluster,
) -> None:
    topic = new_topic(c, "expiry")
    group = "expiry"
    bootstrap = c.layout.bootstrap_servers
    session = ("-X", "session.timeout.ms=2000")
    survivor = KcatMember("expiry-survivor", group, topic, bootstrap, *session)
    victim = KcatMember("expiry-victim", group, topic, bootstrap, *session)
    with running([survivor, victim]):
        wait_split(c, group, [survivor, victim])
        (victim_id,) = [m.member_id for m in describe(c, group).members
                        if m.client_id == victim.name]  # fmt: skip
        # no LeaveGroup, and its connections stay open: only the missing heartbeats tell
        victim.freeze()
        try:
            wait_split(c, group, [survivor])
            remaining = describe(c, group).members
        finally:
            victim.kill()
        values = produce_values(c, topic, PARTITIONS, 5, group)
        wait_delivered([survivor], values)
    assert [m.client_id for m in remaining] == [survivor.name]
    assert victim_id not in [m.member_id for m in remaining]
    assert {d.member for d in survivor.deliveries() if d.value in set(values)} == {survivor.name}


def test_static_members_rejoin_without_a_rebalance(c: TestCluster) -> None:
    topic = new_topic(c, "static")
    group = "static"
    bootstrap = c.layout.bootstrap_servers

    def static(name: str) -> ConfluentMember:
        # long enough a session for the restart below to come back within it
        return ConfluentMember(
            f"static-{name}", group, topic, bootstrap,
            **{"group.instance.id": f"instance-{name}", "session.timeout.ms": 30_000},
        )  # fmt: skip

    stays, goes = static("stays"), static("goes")
    back = static("goes")
    members: list[Member] = [stays, goes, back]
    values: list[bytes] = []
    try:
        stays.start()
        goes.start()
        split = wait_split(c, group, [stays, goes])
        generation = stays.generation()
        assignments = stays.assignments()
        values += produce_values(c, topic, PARTITIONS, 5, "static-1")
        wait_delivered(members, values)
        goes.close()  # a static member sends no LeaveGroup: the group keeps its place
        values += produce_values(c, topic, PARTITIONS, 5, "static-2")
        back.start()
        returned = wait_until(
            lambda: back.assignment() or None, REBALANCE_TIMEOUT_S, "the returning member"
        )
        wait_delivered(members, values)
        described = describe(c, group)
    finally:
        close_all(members)
    assert back.generation() == generation == stays.generation()
    assert stays.assignments() == assignments, "the member that stayed saw a rebalance"
    assert returned == split[goes.name]
    assert described.group_state == "Stable"
    assert sorted(m.group_instance_id for m in described.members) == [
        "instance-goes", "instance-stays",
    ]  # fmt: skip
    assert_exactly_once(members, values)
    assert fatal_errors(members) == []


def test_a_second_consumer_with_the_same_instance_id_fences_the_first(c: TestCluster) -> None:
    topic = new_topic(c, "fenced")
    group = "fenced"
    bootstrap = c.layout.bootstrap_servers
    static = {"group.instance.id": "twin", "session.timeout.ms": 30_000}
    first = ConfluentMember("fenced-first", group, topic, bootstrap, **static)
    second = ConfluentMember("fenced-second", group, topic, bootstrap, **static)
    members: list[Member] = [first, second]
    try:
        first.start()
        wait_split(c, group, [first])
        generation = first.generation()
        (first_id,) = [m.member_id for m in describe(c, group).members]
        second.start()
        wait_until(
            lambda: describe(c, group).members[0].client_id == second.name,
            REBALANCE_TIMEOUT_S,
            "the second consumer to take the instance's place",
        )
        # the first's member id is fenced: what its next heartbeat is answered
        fenced = c.request(
            coordinator(c, group),
            ApiKey.HEARTBEAT,
            4,
            HeartbeatRequest(
                group_id=group,
                generation_id=generation,
                member_id=first_id,
                group_instance_id="twin",
            ),
        )
        taken = wait_until(
            lambda: second.assignment() or None, REBALANCE_TIMEOUT_S, "the second's share"
        )
        values = produce_values(c, topic, PARTITIONS, 5, group)
        wait_until(
            lambda: set(values) <= {d.value for d in second.deliveries()},
            REBALANCE_TIMEOUT_S,
            "the second consumer to read what was written after it took over",
        )
        described = describe(c, group)
    finally:
        close_all(members)
    assert fenced.error_code == ErrorCode.FENCED_INSTANCE_ID
    assert [(m.client_id, m.group_instance_id) for m in described.members] == [
        (second.name, "twin")
    ]
    assert second.generation() == generation  # it took the place, without a rebalance
    assert taken == frozenset(range(PARTITIONS))
    assert fatal_errors([second]) == []


def first_join(c: TestCluster, group: str) -> tuple[int, str]:
    """A v5 JoinGroup with no member id, a one-second session: (error code, member id)."""
    body = JoinGroupRequest(
        group_id=group,
        session_timeout_ms=1000,
        rebalance_timeout_ms=10_000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
    )
    answer = c.request(coordinator(c, group), ApiKey.JOIN_GROUP, 5, body)
    return int(answer.error_code), str(answer.member_id)


def test_group_max_size_refuses_a_member_beyond_it_until_places_come_free(
    c: TestCluster,
) -> None:
    group = "crowded"
    wait_until(lambda: coordinator(c, group) >= 0, 30, f"a coordinator for {group}")
    held = [first_join(c, group) for _ in range(MAX_GROUP_SIZE)]
    assert [e for e, _ in held] == [ErrorCode.MEMBER_ID_REQUIRED] * MAX_GROUP_SIZE
    assert len({m for _, m in held}) == MAX_GROUP_SIZE
    assert first_join(c, group)[0] == ErrorCode.GROUP_MAX_SIZE_REACHED
    # none of them rejoins: their places lapse with their one-second sessions
    wait_until(
        lambda: first_join(c, group)[0] == ErrorCode.MEMBER_ID_REQUIRED,
        20,
        "a place in the group to come free",
    )


# -- lag ---------------------------------------------------------------------------------------


def commit_as_assigned(c: TestCluster, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group`` the way an assign()-mode consumer does (generation
    -1, no membership), with confluent-kafka."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": c.layout.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})  # fmt: skip
    try:
        done = consumer.commit(
            offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False
        )
        assert done is not None and all(tp.error is None for tp in done), done
    finally:
        consumer.close()


def test_lag_is_log_end_minus_committed_over_the_wire(c: TestCluster) -> None:
    topic = new_topic(c, "lag")
    group = "lag"
    produce_values(c, topic, PARTITIONS, 10, group)
    commit_as_assigned(c, group, {(topic, p): p for p in range(PARTITIONS)})
    ends = end_offsets(c, topic, PARTITIONS)
    commits = committed(c, group, topic, PARTITIONS)
    assert ends == dict.fromkeys(range(PARTITIONS), 10)
    assert {p: ends[p] - commits[p] for p in range(PARTITIONS)} == {
        p: 10 - p for p in range(PARTITIONS)
    }


def test_consumer_groups_tool_describe_shows_the_true_lag(c: TestCluster) -> None:
    topic = new_topic(c, "lag-tool")
    group = "lag-tool"
    produce_values(c, topic, PARTITIONS, 10, group)
    commit_as_assigned(c, group, {(topic, p): p for p in range(PARTITIONS)})
    argv = [sys.executable, "-m", "tools.main", "consumer-groups", "--bootstrap-server",
            c.layout.bootstrap_servers, "--describe", "--group", group]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, timeout=60, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    lines = [line.split() for line in done.stdout.decode().splitlines() if line.strip()]
    header = next(line for line in lines if "LAG" in line)
    rows = [dict(zip(header, line, strict=False)) for line in lines if line[:1] == [group]]
    got = {int(r["PARTITION"]): (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) for r in rows}
    assert got == {p: (str(p), "10", str(10 - p)) for p in range(PARTITIONS)}


# -- where a group lives ------------------------------------------------------------------------


def java_hash(s: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, int32 wraparound."""
    units = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_partition(group: str) -> int:
    h = java_hash(group)
    return 0 if h == -(1 << 31) else abs(h) % OFFSETS_PARTITIONS


def commits_in(c: TestCluster, partition: int) -> set[tuple[str, str, int, int | None]]:
    """(group, topic, partition, offset) of every commit record in a partition of the
    offsets topic."""
    found: set[tuple[str, str, int, int | None]] = set()
    for key, value in offsets_topic_records(c, partition):
        commit = decode_commit(key, value)
        if commit is not None:
            found.add((commit.group, commit.topic, commit.partition, commit.offset))
    return found


def test_a_group_whose_hash_is_min_value_lives_in_partition_0(c: TestCluster) -> None:
    assert java_hash(MIN_VALUE_GROUP) == -(1 << 31)
    assert abs(java_hash(MIN_VALUE_GROUP)) % OFFSETS_PARTITIONS != 0  # a naive abs would miss
    topic = new_topic(c, "placed", 1)
    produce_values(c, topic, 1, 3, "placed")
    other = "placed-elsewhere"
    assert kafka_partition(other) != 0
    for group, offset in ((MIN_VALUE_GROUP, 2), (other, 1)):
        commit_as_assigned(c, group, {(topic, 0): offset})
        partition = kafka_partition(group)
        expected = leader_of(c, OFFSETS_TOPIC, partition)
        assert coordinator(c, group) == expected
        for via in c.broker_ids:  # FindCoordinator v3 (one key) from every broker
            body = FindCoordinatorRequest(key=group, key_type=0)
            answer = c.request(via, ApiKey.FIND_COORDINATOR, 3, body)
            assert (answer.error_code, answer.node_id) == (ErrorCode.NONE, expected)
            assert answer.port == c.layout.client_ports[expected]
        assert (group, topic, 0, offset) in commits_in(c, partition)
    # both in one batched request (v4)
    body = FindCoordinatorRequest(key_type=0, coordinator_keys=[MIN_VALUE_GROUP, other])
    answer = c.request(0, ApiKey.FIND_COORDINATOR, 4, body)
    assert {(k.key, k.node_id) for k in answer.coordinators} == {
        (g, leader_of(c, OFFSETS_TOPIC, kafka_partition(g))) for g in (MIN_VALUE_GROUP, other)
    }


# -- failures (last: they move leaders) ---------------------------------------------------------


def test_kill_minus_9_of_the_coordinator_moves_the_group_with_its_offsets(c: TestCluster) -> None:
    topic = new_topic(c, "coordinator-kill")
    group = "coordinator-kill"
    bootstrap = c.layout.bootstrap_servers
    members: list[Member] = [ConfluentMember(f"ck-{i}", group, topic, bootstrap) for i in range(2)]
    partition = kafka_partition(group)
    values: list[bytes] = []
    with running(members):
        wait_split(c, group, members)
        values += produce_values(c, topic, PARTITIONS, 10, "kill-1")
        wait_delivered(members, values)
        wait_committed(c, group, topic, dict.fromkeys(range(PARTITIONS), 10))
        victim = coordinator(c, group)
        assert victim == leader_of(c, OFFSETS_TOPIC, partition)

        c.local.kill_broker(victim)

        def moved_away() -> int | None:
            now = coordinator(c, group)
            return None if now == victim else now

        moved = wait_until(
            moved_away,
            c.session_timeout_s + 30,
            "FindCoordinator to name another broker",
        )
        alive = next(i for i in c.broker_ids if i != victim)
        (t,) = c.metadata(alive, [OFFSETS_TOPIC]).topics
        leader = next(p.leader_id for p in t.partitions if p.partition_index == partition)
        assert moved == leader
        # the new coordinator loaded the commits from its replica of the partition
        wait_committed(c, group, topic, dict.fromkeys(range(PARTITIONS), 10))
        values += produce_values(c, topic, PARTITIONS, 10, "kill-2")
        wait_delivered(members, values, timeout=60)
        restart_once_expired(c, victim)
        wait_until(c.local.metadata_complete, 30, "every broker's metadata after the restart")
    assert_delivered_once_but_failed_commits(members, values)


def test_offsets_survive_a_restart_of_the_whole_cluster(c: TestCluster) -> None:
    topic = new_topic(c, "restart")
    group = "restart"
    bootstrap = c.layout.bootstrap_servers
    first = ConfluentMember("restart-before", group, topic, bootstrap)
    with running([first]):
        wait_split(c, group, [first])
        before = produce_values(c, topic, PARTITIONS, 5, "restart-1")
        wait_delivered([first], before)
        wait_committed(c, group, topic, dict.fromkeys(range(PARTITIONS), 5))
    commit_as_assigned(c, "restart-assigned", {(topic, p): p for p in range(PARTITIONS)})

    for i in c.broker_ids:
        assert c.local.stop_broker(i) == 0, f"broker {i} did not stop cleanly"
    for i in c.broker_ids:
        c.local.start_broker(i)
    c.local.wait_registered(c.broker_ids, 60)
    wait_until(lambda: c.local.metadata_complete(), 60, "every broker's metadata after the restart")

    wait_committed(c, group, topic, dict.fromkeys(range(PARTITIONS), 5), timeout=60)
    wait_committed(c, "restart-assigned", topic, {p: p for p in range(PARTITIONS)})
    after = produce_values(c, topic, PARTITIONS, 5, "restart-2")
    second = ConfluentMember("restart-after", group, topic, bootstrap)
    with running([second]):
        wait_delivered([second], after, timeout=60)
    # earliest is the reset policy: a lost commit would have handed the old records again
    assert sorted(d.value for d in second.deliveries()) == sorted(after)
