"""The group handlers over a coordinator on an in-memory store: what each API version
carries (MEMBER_ID_REQUIRED from JoinGroup v4, KIP-814's skip_assignment in v9, reasons
in JoinGroup v8 and LeaveGroup v5, OffsetCommit/OffsetFetch v0 in ZooKeeper, LeaveGroup's
single member before v3 and batch after, OffsetCommit's commit timestamp in v1 and
retention time up to v4, OffsetFetch's per-partition errors in v1 and groups in v8), the
coordinator check every handler makes first, and answers that encode at the request's
version."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

import pytest

import protocol
from broker.apis import (
    delete_groups,
    describe_groups,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from broker.auth.access import AccessControl
from broker.group.coordinator import GroupConfig, GroupCoordinator
from broker.group.delayed import DelayedHeartbeat
from broker.group.model import CommittedOffset
from broker.metadata_cache import MetadataCache
from protocol import ApiKey, ErrorCode, Response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
    UpdateMetadataRequest,
)
from protocol.values import AUTHORIZED_OPERATIONS_OMITTED, TopicPartition
from tests.unit.broker.access_doubles import allowing
from tests.unit.broker.broker_helpers import HandlerRequest as Req
from tests.unit.broker.broker_helpers import metadata_topic
from tests.unit.broker.handler_services import handler_services
from tests.unit.broker.memory_group_store import MemoryGroupStore
from timer import DelayedOperation, DelayedOperationPurgatory
from timer.clock import MockClock

pytestmark = pytest.mark.timeout(10)

U = UpdateMetadataRequest
OC = OffsetCommitRequest
OF = OffsetFetchRequest


class World:
    def __init__(self, access: AccessControl | None = None) -> None:
        self.clock = MockClock()
        self.store = MemoryGroupStore()
        self.joins: DelayedOperationPurgatory[DelayedOperation] = DelayedOperationPurgatory(
            "Rebalance", clock=self.clock, reaper_enabled=False
        )
        heartbeats: DelayedOperationPurgatory[DelayedHeartbeat] = DelayedOperationPurgatory(
            "Heartbeat", clock=self.clock, reaper_enabled=False
        )
        cache = MetadataCache(0)
        cache.update_metadata(
            U(
                controller_id=0,
                controller_epoch=1,
                topic_states=[metadata_topic("t", 2, topic_id=uuid.uuid4())],
                live_brokers=[U.UpdateMetadataBroker(id=0, endpoints=[])],
            )
        )
        self.ctx = handler_services(
            cluster_id="cid",
            clock=self.clock,
            metadata_cache=cache,
            coordinator=GroupCoordinator(
                self.store,
                GroupConfig(initial_rebalance_delay_ms=0),
                self.clock,
                self.joins,
                heartbeats,
            ),
            access=access,
        ).groups

    async def call(self, module: Any, api_key: int, version: int, body: Any) -> Any:
        result = await module.handle(self.ctx, Req(api_key, version, body))
        if isinstance(result, asyncio.Future):
            for _ in range(5):
                if result.done():
                    break
                await asyncio.sleep(0)
                self.joins.advance_clock()  # a due delayed join (no delay here) runs
            result = await result
        assert isinstance(result, Response)
        protocol.encode_response(result)  # it fits its version
        return result.body


@pytest.fixture
def w() -> World:
    return World()


def join_body(member_id: str = "", **kw: Any) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id="g",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=20_000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"m")],
        **kw,
    )


async def join_and_sync(w: World, version: int = 7) -> tuple[str, int]:
    """One member joined (v4+: after MEMBER_ID_REQUIRED) and synced: (member id, gen)."""
    first = await w.call(join_group, ApiKey.JOIN_GROUP, version, join_body())
    member_id = first.member_id
    if version >= 4:
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        first = await w.call(join_group, ApiKey.JOIN_GROUP, version, join_body(member_id))
    assert first.error_code == ErrorCode.NONE
    assert first.leader == member_id and [m.member_id for m in first.members] == [member_id]
    sync = await w.call(
        sync_group,
        ApiKey.SYNC_GROUP,
        5,
        SyncGroupRequest(
            group_id="g",
            generation_id=first.generation_id,
            member_id=member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=member_id, assignment=b"a")
            ],
        ),
    )
    assert (sync.error_code, sync.assignment, sync.protocol_name) == (ErrorCode.NONE, b"a", "range")
    return member_id, first.generation_id


@pytest.mark.parametrize("version", [0, 3, 4, 6, 7, 8, 9])
async def test_join_group_at_each_version(w: World, version: int) -> None:
    member_id, generation = await join_and_sync(w, version)
    assert member_id.startswith("test-client-")
    assert generation == 1


async def test_an_error_answer_before_v7_has_an_empty_protocol_name(w: World) -> None:
    body = await w.call(join_group, ApiKey.JOIN_GROUP, 6, join_body("stranger"))
    assert (body.error_code, body.protocol_name) == (ErrorCode.UNKNOWN_MEMBER_ID, "")


async def test_every_handler_asks_the_store_whether_this_broker_coordinates(w: World) -> None:
    w.store.coordinator_errors["g"] = ErrorCode.NOT_COORDINATOR
    joined = await w.call(join_group, ApiKey.JOIN_GROUP, 7, join_body())
    beat = await w.call(
        heartbeat,
        ApiKey.HEARTBEAT,
        4,
        HeartbeatRequest(group_id="g", generation_id=1, member_id="m"),
    )
    fetched = await w.call(offset_fetch, ApiKey.OFFSET_FETCH, 7, OF(group_id="g", topics=None))
    assert joined.error_code == beat.error_code == fetched.error_code == ErrorCode.NOT_COORDINATOR
    assert w.store.get_group("g") is None


async def test_leave_group_one_member_before_v3_and_a_batch_after(w: World) -> None:
    member_id, _ = await join_and_sync(w)
    old = await w.call(
        leave_group, ApiKey.LEAVE_GROUP, 1, LeaveGroupRequest(group_id="g", member_id="nobody")
    )
    assert old.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    batch = await w.call(
        leave_group,
        ApiKey.LEAVE_GROUP,
        4,
        LeaveGroupRequest(
            group_id="g",
            members=[
                LeaveGroupRequest.MemberIdentity(member_id=member_id),
                LeaveGroupRequest.MemberIdentity(member_id="nobody"),
            ],
        ),
    )
    assert batch.error_code == ErrorCode.NONE
    assert [(m.member_id, m.error_code) for m in batch.members] == [
        (member_id, ErrorCode.NONE),
        ("nobody", ErrorCode.UNKNOWN_MEMBER_ID),
    ]


async def static_leader(w: World, version: int) -> tuple[str, int]:
    """A static member (instance "i") that joined, leads and synced: (member id, gen)."""
    joined = await w.call(
        join_group, ApiKey.JOIN_GROUP, version, join_body(group_instance_id="i", reason="start")
    )
    assert joined.error_code == ErrorCode.NONE and joined.leader == joined.member_id
    sync = await w.call(
        sync_group,
        ApiKey.SYNC_GROUP,
        5,
        SyncGroupRequest(
            group_id="g",
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            group_instance_id="i",
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(
                    member_id=joined.member_id, assignment=b"a"
                )
            ],
        ),
    )
    assert sync.error_code == ErrorCode.NONE
    return joined.member_id, joined.generation_id


async def test_a_restarted_static_leader_skips_the_assignment_from_v9(w: World) -> None:
    old_id, generation = await static_leader(w, 9)
    again = await w.call(join_group, ApiKey.JOIN_GROUP, 9, join_body(group_instance_id="i"))
    assert again.error_code == ErrorCode.NONE and again.member_id != old_id
    assert again.generation_id == generation  # no rebalance
    # it leads, sees the members, and is told to keep the group's assignment
    assert (again.leader, again.skip_assignment) == (again.member_id, True)
    assert [(m.member_id, m.group_instance_id) for m in again.members] == [(again.member_id, "i")]


async def test_a_restarted_static_leader_before_v9_is_told_the_old_leader(w: World) -> None:
    old_id, generation = await static_leader(w, 8)
    again = await w.call(join_group, ApiKey.JOIN_GROUP, 8, join_body(group_instance_id="i"))
    assert again.error_code == ErrorCode.NONE and again.generation_id == generation
    # not itself: so it does not run an assignment the Stable group would not take
    assert (again.leader, again.members, again.skip_assignment) == (old_id, [], False)


async def test_leave_group_v5_carries_reasons(w: World) -> None:
    member_id, _ = await join_and_sync(w)
    Member = LeaveGroupRequest.MemberIdentity
    answer = await w.call(
        leave_group,
        ApiKey.LEAVE_GROUP,
        5,
        LeaveGroupRequest(
            group_id="g",
            members=[Member(member_id=member_id, reason="shutting down"), Member(member_id="x")],
        ),
    )
    assert [(m.member_id, m.error_code) for m in answer.members] == [
        (member_id, ErrorCode.NONE),
        ("x", ErrorCode.UNKNOWN_MEMBER_ID),
    ]


class ZkOffsets:
    """The ZooKeeper facade's two calls for v0 offsets, over a dict."""

    def __init__(self) -> None:
        self.stored: dict[tuple[str, TopicPartition], int] = {}

    async def set_consumer_offsets(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        self.stored.update({(group, tp): o for tp, o in offsets.items()})

    async def get_consumer_offsets(
        self, group: str, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        return {tp: self.stored.get((group, tp)) for tp in partitions}


async def test_offset_commit_and_fetch_v0_use_zookeeper_not_the_group(w: World) -> None:
    zk = ZkOffsets()
    w.ctx = dataclasses.replace(w.ctx, zk=zk)  # type: ignore[arg-type]
    w.store.coordinator_errors["g"] = ErrorCode.NOT_COORDINATOR  # v0 never asks
    body = commit_body(-1, "", ("t", 0, 5), ("nope", 0, 1))
    answer = await w.call(offset_commit, ApiKey.OFFSET_COMMIT, 0, body)
    errors = {
        (t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions
    }
    assert errors == {("t", 0): ErrorCode.NONE, ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert zk.stored == {("g", TopicPartition("t", 0)): 5}
    assert w.store.get_group("g") is None  # nothing went to __consumer_offsets
    too_large = commit_body(-1, "", ("t", 1, 9))
    too_large.topics[0].partitions[0].committed_metadata = "x" * 5000
    refused = await w.call(offset_commit, ApiKey.OFFSET_COMMIT, 0, too_large)
    assert refused.topics[0].partitions[0].error_code == ErrorCode.OFFSET_METADATA_TOO_LARGE
    fetch = OF(
        group_id="g", topics=[OF.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])]
    )
    fetched = await w.call(offset_fetch, ApiKey.OFFSET_FETCH, 0, fetch)
    assert [
        (p.committed_offset, p.metadata, p.error_code) for p in fetched.topics[0].partitions
    ] == [
        (5, "", ErrorCode.NONE),
        (-1, "", ErrorCode.NONE),
    ]


def zk_world(access: AccessControl) -> tuple[World, ZkOffsets]:
    """A world with ``access`` in force and its v0 offsets in a ZooKeeper double."""
    w = World(access)
    zk = ZkOffsets()
    w.ctx = dataclasses.replace(w.ctx, zk=zk)  # type: ignore[arg-type]
    return w, zk


def errors_of(answer: Any) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}


async def test_offset_commit_and_fetch_v0_are_authorized_as_the_other_versions() -> None:
    """v0 skips the coordinator, not the ACLs: READ (commit) or DESCRIBE (fetch) on the
    group, then on each topic, before ZooKeeper is read or written."""
    w, zk = zk_world(
        allowing(
            (ResourceType.GROUP, "g", AclOperation.READ),
            (ResourceType.TOPIC, "t", AclOperation.READ),
        )
    )
    zk.stored[("h", TopicPartition("t", 0))] = 3  # another group's, left by an old client
    committed = await w.call(
        offset_commit, ApiKey.OFFSET_COMMIT, 0, commit_body(-1, "", ("t", 0, 5), ("nope", 0, 1))
    )
    assert errors_of(committed) == {
        ("t", 0): ErrorCode.NONE,
        ("nope", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED,  # checked before it is looked up
    }
    other_group = commit_body(-1, "", ("t", 0, 9))
    other_group.group_id = "h"
    refused = await w.call(offset_commit, ApiKey.OFFSET_COMMIT, 0, other_group)
    assert errors_of(refused) == {("t", 0): ErrorCode.GROUP_AUTHORIZATION_FAILED}
    assert zk.stored == {("g", TopicPartition("t", 0)): 5, ("h", TopicPartition("t", 0)): 3}

    def fetch(group: str) -> OffsetFetchRequest:
        return OF(
            group_id=group,
            topics=[
                OF.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1]),
                OF.OffsetFetchRequestTopic(name="nope", partition_indexes=[0]),
            ],
        )

    fetched = await w.call(offset_fetch, ApiKey.OFFSET_FETCH, 0, fetch("g"))
    assert errors_of(fetched) == {
        ("t", 0): ErrorCode.NONE,
        ("t", 1): ErrorCode.NONE,
        ("nope", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    }
    assert [p.committed_offset for t in fetched.topics for p in t.partitions] == [5, -1, -1]
    hidden = await w.call(offset_fetch, ApiKey.OFFSET_FETCH, 0, fetch("h"))
    assert errors_of(hidden) == dict.fromkeys(
        [("t", 0), ("t", 1), ("nope", 0)], ErrorCode.GROUP_AUTHORIZATION_FAILED
    )
    assert {p.committed_offset for t in hidden.topics for p in t.partitions} == {-1}


async def test_offset_fetch_v0_needs_describe_on_each_topic() -> None:
    w, zk = zk_world(
        allowing(
            (ResourceType.GROUP, "g", AclOperation.DESCRIBE),
            (ResourceType.TOPIC, "open", AclOperation.DESCRIBE),
        )
    )
    zk.stored[("g", TopicPartition("t", 0))] = 5
    fetch = OF(group_id="g", topics=[OF.OffsetFetchRequestTopic(name="t", partition_indexes=[0])])
    fetched = await w.call(offset_fetch, ApiKey.OFFSET_FETCH, 0, fetch)
    ((partition,),) = [t.partitions for t in fetched.topics]
    assert (partition.committed_offset, partition.error_code) == (
        -1,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    )


async def test_offset_commit_v1_keeps_the_clients_commit_timestamp(w: World) -> None:
    body = commit_body(-1, "", ("t", 0, 5), ("t", 1, 6))
    body.topics[0].partitions[0].commit_timestamp = 1234
    await w.call(offset_commit, ApiKey.OFFSET_COMMIT, 1, body)
    group = w.store.get_group("g")
    assert group is not None
    assert group.offsets[TopicPartition("t", 0)].commit_timestamp == 1234
    assert group.offsets[TopicPartition("t", 1)].commit_timestamp == w.clock.time_ms()


def commit_body(
    generation: int, member_id: str, *partitions: tuple[str, int, int], **kw: Any
) -> Any:
    by_topic: dict[str, list[Any]] = {}
    for topic, partition, offset in partitions:
        by_topic.setdefault(topic, []).append(
            OC.OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata="md"
            )
        )
    return OC(
        group_id="g",
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        topics=[OC.OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        **kw,
    )


async def test_offset_commit_v2_keeps_a_retention_time_and_refuses_unknown_topics(
    w: World,
) -> None:
    body = commit_body(-1, "", ("t", 0, 5), ("nope", 0, 1), retention_time_ms=60_000)
    answer = await w.call(offset_commit, ApiKey.OFFSET_COMMIT, 2, body)
    errors = {
        (t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions
    }
    assert errors == {("t", 0): ErrorCode.NONE, ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    group = w.store.get_group("g")
    assert group is not None
    now = w.clock.time_ms()
    assert group.offsets[TopicPartition("t", 0)] == CommittedOffset(
        5, -1, "md", commit_timestamp=now, expire_timestamp=now + 60_000
    )


async def test_offset_commit_from_a_member_and_its_generation(w: World) -> None:
    member_id, generation = await join_and_sync(w)
    stale = await w.call(
        offset_commit, ApiKey.OFFSET_COMMIT, 8, commit_body(generation + 1, member_id, ("t", 1, 3))
    )
    assert stale.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION
    ok = await w.call(
        offset_commit, ApiKey.OFFSET_COMMIT, 8, commit_body(generation, member_id, ("t", 1, 3))
    )
    assert ok.topics[0].partitions[0].error_code == ErrorCode.NONE
    group = w.store.get_group("g")
    assert group is not None and group.offsets[TopicPartition("t", 1)].expire_timestamp is None


async def test_offset_fetch_v1_puts_a_group_error_on_each_partition(w: World) -> None:
    w.store.coordinator_errors["g"] = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    body = await w.call(
        offset_fetch,
        ApiKey.OFFSET_FETCH,
        1,
        OF(group_id="g", topics=[OF.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])]),
    )
    assert [p.error_code for p in body.topics[0].partitions] == [
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    ] * 2


async def test_offset_fetch_v8_answers_each_group_and_null_topics_mean_all(w: World) -> None:
    await w.call(offset_commit, ApiKey.OFFSET_COMMIT, 8, commit_body(-1, "", ("t", 0, 7)))
    w.store.coordinator_errors["elsewhere"] = ErrorCode.NOT_COORDINATOR
    body = await w.call(
        offset_fetch,
        ApiKey.OFFSET_FETCH,
        8,
        OF(
            groups=[
                OF.OffsetFetchRequestGroup(group_id="g", topics=None),
                OF.OffsetFetchRequestGroup(
                    group_id="unknown",
                    topics=[OF.OffsetFetchRequestTopics(name="t", partition_indexes=[1])],
                ),
                OF.OffsetFetchRequestGroup(group_id="elsewhere", topics=None),
            ]
        ),
    )
    answers = {g.group_id: g for g in body.groups}
    assert [
        (p.partition_index, p.committed_offset, p.metadata)
        for p in answers["g"].topics[0].partitions
    ] == [(0, 7, "md")]
    assert answers["unknown"].topics[0].partitions[0].committed_offset == -1
    assert answers["elsewhere"].error_code == ErrorCode.NOT_COORDINATOR


async def test_list_describe_and_delete(w: World) -> None:
    member_id, _ = await join_and_sync(w)
    listed = await w.call(
        list_groups, ApiKey.LIST_GROUPS, 4, ListGroupsRequest(states_filter=["Stable"])
    )
    assert [(g.group_id, g.group_state) for g in listed.groups] == [("g", "Stable")]
    described = await w.call(
        describe_groups,
        ApiKey.DESCRIBE_GROUPS,
        5,
        DescribeGroupsRequest(groups=["g", "unknown"], include_authorized_operations=False),
    )
    g, unknown = described.groups
    assert (g.group_state, g.protocol_data, g.authorized_operations) == (
        "Stable",
        "range",
        AUTHORIZED_OPERATIONS_OMITTED,
    )
    assert [(m.member_id, m.member_metadata, m.member_assignment) for m in g.members] == [
        (member_id, b"m", b"a")
    ]
    assert (unknown.error_code, unknown.group_state) == (ErrorCode.NONE, "Dead")
    refused = await w.call(
        delete_groups, ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["g", "unknown"])
    )
    assert [(r.group_id, r.error_code) for r in refused.results] == [
        ("g", ErrorCode.NON_EMPTY_GROUP),
        ("unknown", ErrorCode.GROUP_ID_NOT_FOUND),
    ]


@pytest.mark.parametrize("version", [0, 3])
async def test_old_versions_of_list_and_describe(w: World, version: int) -> None:
    await join_and_sync(w)
    listed = await w.call(list_groups, ApiKey.LIST_GROUPS, version, ListGroupsRequest())
    assert [(g.group_id, g.protocol_type) for g in listed.groups] == [("g", "consumer")]
    described = await w.call(
        describe_groups, ApiKey.DESCRIBE_GROUPS, version, DescribeGroupsRequest(groups=["g"])
    )
    assert described.groups[0].group_state == "Stable"


async def test_list_groups_waits_for_loading_partitions(w: World) -> None:
    await join_and_sync(w)
    w.store.loading = frozenset({3})
    body = await w.call(list_groups, ApiKey.LIST_GROUPS, 4, ListGroupsRequest())
    assert (body.error_code, body.groups) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [])


async def test_offset_delete_of_an_unknown_group(w: World) -> None:
    body = await w.call(
        offset_delete,
        ApiKey.OFFSET_DELETE,
        0,
        OffsetDeleteRequest(
            group_id="unknown",
            topics=[
                OffsetDeleteRequest.OffsetDeleteRequestTopic(
                    name="t",
                    partitions=[
                        OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)
                    ],
                )
            ],
        ),
    )
    assert (body.error_code, body.topics) == (ErrorCode.GROUP_ID_NOT_FOUND, [])


def offset_delete_body(group_id: str, *partitions: tuple[str, int]) -> OffsetDeleteRequest:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return OffsetDeleteRequest(
        group_id=group_id,
        topics=[
            OffsetDeleteRequest.OffsetDeleteRequestTopic(
                name=name,
                partitions=[
                    OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=p) for p in ps
                ],
            )
            for name, ps in by_topic.items()
        ],
    )


async def test_offset_delete_of_partitions_the_broker_does_not_know(w: World) -> None:
    await w.call(offset_commit, ApiKey.OFFSET_COMMIT, 8, commit_body(-1, "", ("t", 0, 7)))
    body = await w.call(
        offset_delete,
        ApiKey.OFFSET_DELETE,
        0,
        offset_delete_body("g", ("t", 0), ("t", 5), ("gone", 0)),
    )
    errors = {(t.name, p.partition_index): p.error_code for t in body.topics for p in t.partitions}
    assert (body.error_code, errors) == (
        ErrorCode.NONE,
        {
            ("t", 0): ErrorCode.NONE,
            ("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        },
    )
    group = w.store.get_group("g")
    assert group is not None and group.offsets == {}


async def test_offset_delete_names_the_group_error_before_unknown_topics(w: World) -> None:
    body = await w.call(
        offset_delete, ApiKey.OFFSET_DELETE, 0, offset_delete_body("unknown", ("gone", 0))
    )
    assert (body.error_code, body.topics) == (ErrorCode.GROUP_ID_NOT_FOUND, [])
