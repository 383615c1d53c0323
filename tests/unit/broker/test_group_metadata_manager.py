"""GroupMetadataManager on a real ReplicaManager and real logs: partitions load when led
and unload when not, commits and group metadata written with acks=all come back on the
next load, tombstones remove, expiry and deleted topics write tombstones, append errors
are mapped as Kafka maps them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from broker.admin.topics import OFFSETS_TOPIC
from broker.apis import update_metadata
from broker.apis.write_txn_markers import marker_batch
from broker.group.manager import (
    GroupMetadataManager,
    OffsetsConfig,
    group_store_error,
    offset_commit_error,
)
from broker.group.model import CommittedOffset, GroupMetadata, GroupState, MemberMetadata
from broker.group.partitioner import partition_for
from broker.startup import on_loop
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import UpdateMetadataRequest
from protocol.records.batch import Compression
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from protocol.records.validation import validate_records
from protocol.values import TopicPartition
from tests.unit.broker.broker_helpers import (
    HandlerRequest,
    LocalReplicas,
    local_replicas,
    metadata_topic,
    partition_state,
)
from timer import DelayedOperation, DelayedOperationPurgatory

PARTITIONS = 3
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def group_in(partition: int, prefix: str = "group") -> str:
    """A group id that lives in ``partition`` of a 3-partition offsets topic."""
    return next(
        g for i in range(1000) if partition_for(g := f"{prefix}-{i}", PARTITIONS) == partition
    )


G0 = group_in(0)
G0B = group_in(0, "other")
G1 = group_in(1)


def offsets_tp(partition: int) -> TopicPartition:
    return TopicPartition(OFFSETS_TOPIC, partition)


@dataclass
class Listener:
    loaded: list[str] = field(default_factory=list)
    unloaded: list[str] = field(default_factory=list)

    def on_groups_loaded(self, groups: Sequence[GroupMetadata]) -> None:
        self.loaded.extend(g.group_id for g in groups)

    def on_groups_unloaded(self, groups: Sequence[GroupMetadata]) -> None:
        self.unloaded.extend(g.group_id for g in groups)


@dataclass
class Setup:
    replicas: LocalReplicas
    store: GroupMetadataManager
    listener: Listener
    min_isr: dict[str, int]

    async def lead(self, *partitions: int, epoch: int = 0) -> None:
        states = [partition_state(offsets_tp(p), epoch=epoch) for p in partitions]
        await self.replicas.rm.become_leader_or_follower(1, 1, states, {})
        for p in partitions:
            await self.store.wait_loaded(p)

    async def follow(self, *partitions: int, epoch: int) -> None:
        states = [
            partition_state(offsets_tp(p), leader=1, epoch=epoch, isr=(0, 1), replicas=(0, 1))
            for p in partitions
        ]
        await self.replicas.rm.become_leader_or_follower(1, 1, states, {})


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    min_isr: dict[str, int] = {}
    replicas = local_replicas(tmp_path, min_insync_replicas=lambda t: min_isr.get(t, 1))
    store = GroupMetadataManager(
        replicas.rm,
        replicas.clock,
        # a small read size: loads take several chunks
        OffsetsConfig(num_partitions=PARTITIONS, load_buffer_size=300, retention_ms=60_000),
    )
    replicas.rm.on_leadership_change = store.on_leadership_change
    listener = Listener()
    store.listener = listener
    yield Setup(replicas, store, listener, min_isr)
    replicas.log_manager.shutdown()


def commit(offset: int, ts: int = 0, metadata: str = "") -> CommittedOffset:
    return CommittedOffset(offset=offset, metadata=metadata, commit_timestamp=ts)


def stable_group(group_id: str) -> GroupMetadata:
    member = MemberMetadata(
        member_id="m-1",
        group_instance_id="i-1",
        client_id="c",
        client_host="/127.0.0.1",
        rebalance_timeout_ms=5000,
        session_timeout_ms=6000,
        protocol_type="consumer",
        protocols=[("range", b"subscription")],
        assignment=b"assignment",
    )
    return GroupMetadata(
        group_id,
        state=GroupState.STABLE,
        protocol_type="consumer",
        protocol_name="range",
        generation_id=3,
        leader_id="m-1",
        members={"m-1": member},
        static_members={"i-1": "m-1"},
        current_state_timestamp=77,
    )


def offsets_of(group: GroupMetadata | None) -> dict[TopicPartition, int]:
    assert group is not None
    return {tp: c.offset for tp, c in group.offsets.items()}


async def test_a_partition_is_loading_then_owned_and_its_groups_answer_none(
    setup: Setup,
) -> None:
    store = setup.store
    assert store.coordinator_error(G0) == ErrorCode.NOT_COORDINATOR
    state = partition_state(offsets_tp(0), epoch=0)
    await setup.replicas.rm.become_leader_or_follower(1, 1, [state], {})
    assert store.coordinator_error(G0) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    await store.wait_loaded(0)
    assert store.coordinator_error(G0) == ErrorCode.NONE
    assert store.coordinator_error(G1) == ErrorCode.NOT_COORDINATOR
    assert store.owned_partitions == {0}


async def test_commits_and_group_metadata_come_back_after_the_partition_moves_away_and_back(
    setup: Setup,
) -> None:
    store = setup.store
    await setup.lead(0)
    group = store.add_group(stable_group(G0))
    assert await store.store_group(group) == ErrorCode.NONE
    errors = await store.store_offsets(group, {T0: commit(5, metadata="m"), T1: commit(9)})
    assert errors == {T0: ErrorCode.NONE, T1: ErrorCode.NONE}
    assert offsets_of(group) == {T0: 5, T1: 9} and group.pending_offsets == {}
    assert await store.store_offsets(group, {T0: commit(6)}) == {T0: ErrorCode.NONE}

    await setup.follow(0, epoch=1)
    assert store.get_group(G0) is None
    assert store.coordinator_error(G0) == ErrorCode.NOT_COORDINATOR
    assert setup.listener.unloaded == [G0]

    await setup.lead(0, epoch=2)
    loaded = store.get_group(G0)
    assert loaded is not None and setup.listener.loaded == [G0]
    assert offsets_of(loaded) == {T0: 6, T1: 9}
    assert loaded.offsets[T0].metadata == "" and loaded.offsets[T1].offset == 9
    assert (loaded.state, loaded.generation_id, loaded.leader_id) == (GroupState.STABLE, 3, "m-1")
    assert loaded.members["m-1"].assignment == b"assignment"
    assert loaded.static_members == {"i-1": "m-1"}


async def test_many_commits_load_across_several_reads(setup: Setup) -> None:
    store = setup.store
    await setup.lead(0)
    group = store.add_group(GroupMetadata(G0))
    for i in range(40):
        await store.store_offsets(group, {TopicPartition("t", i % 7): commit(i)})
    expected = offsets_of(group)
    await setup.follow(0, epoch=1)
    await setup.lead(0, epoch=2)
    assert offsets_of(store.get_group(G0)) == expected


async def test_deleted_offsets_and_groups_stay_deleted_after_a_reload(setup: Setup) -> None:
    store = setup.store
    await setup.lead(0)
    kept = store.add_group(GroupMetadata(G0))
    gone = store.add_group(stable_group(G0B))
    await store.store_group(gone)
    await store.store_offsets(kept, {T0: commit(1), T1: commit(2)})
    await store.store_offsets(gone, {T0: commit(3)})
    assert await store.delete_offsets(kept, [T0]) == ErrorCode.NONE
    assert offsets_of(kept) == {T1: 2}
    assert await store.delete_group(gone) == ErrorCode.NONE
    assert store.get_group(G0B) is None

    await setup.follow(0, epoch=1)
    await setup.lead(0, epoch=2)
    assert offsets_of(store.get_group(G0)) == {T1: 2}
    assert store.get_group(G0B) is None


async def test_a_resignation_older_than_the_leadership_is_ignored(setup: Setup) -> None:
    await setup.lead(0, epoch=5)
    setup.store.on_resign(0, 4)
    assert setup.store.coordinator_error(G0) == ErrorCode.NONE
    setup.store.on_resign(0, 6)
    assert setup.store.coordinator_error(G0) == ErrorCode.NOT_COORDINATOR


async def test_a_deleted_partition_unloads_its_groups(setup: Setup) -> None:
    store = setup.store
    await setup.lead(0)
    store.add_group(GroupMetadata(G0))
    await setup.replicas.rm.stop_replicas(1, [(OFFSETS_TOPIC, 0, True)], {}, 1)
    assert store.get_group(G0) is None and setup.listener.unloaded == [G0]


async def test_resigning_while_loading_stops_the_load(setup: Setup) -> None:
    store = setup.store
    await setup.lead(0)
    await store.store_offsets(store.add_group(GroupMetadata(G0)), {T0: commit(1)})
    await setup.follow(0, epoch=1)
    state = partition_state(offsets_tp(0), epoch=2)
    await setup.replicas.rm.become_leader_or_follower(1, 1, [state], {})
    assert store.loading_partitions == {0}
    store.on_resign(0, 3)
    await store.wait_loaded(0)
    assert store.get_group(G0) is None and store.owned_partitions == frozenset()


async def test_metadata_over_the_limit_is_refused_alone(setup: Setup) -> None:
    store = setup.store
    await setup.lead(0)
    group = store.add_group(GroupMetadata(G0))
    errors = await store.store_offsets(group, {T0: commit(1, metadata="x" * 4097), T1: commit(2)})
    assert errors == {T0: ErrorCode.OFFSET_METADATA_TOO_LARGE, T1: ErrorCode.NONE}
    assert offsets_of(group) == {T1: 2}


async def test_writes_for_a_group_led_elsewhere_are_not_coordinator(setup: Setup) -> None:
    store = setup.store
    await setup.lead(0)
    group = GroupMetadata(G1)
    assert await store.store_offsets(group, {T0: commit(1)}) == {T0: ErrorCode.NOT_COORDINATOR}
    assert await store.store_group(group) == ErrorCode.NOT_COORDINATOR
    assert group.offsets == {} and group.pending_offsets == {}


async def test_too_few_replicas_for_acks_all_is_coordinator_not_available(setup: Setup) -> None:
    store = setup.store
    await setup.lead(0)
    setup.min_isr[OFFSETS_TOPIC] = 2  # the ISR is this broker alone
    group = store.add_group(GroupMetadata(G0))
    errors = await store.store_offsets(group, {T0: commit(1)})
    assert errors == {T0: ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert group.offsets == {} and group.pending_offsets == {}
    assert await store.store_group(group) == ErrorCode.COORDINATOR_NOT_AVAILABLE


@pytest.mark.parametrize(
    ("append", "offsets", "group"),
    [
        (ErrorCode.NONE, ErrorCode.NONE, ErrorCode.NONE),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.COORDINATOR_NOT_AVAILABLE,
         ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
         ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.COORDINATOR_NOT_AVAILABLE,
         ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
         ErrorCode.UNKNOWN_SERVER_ERROR),
        (ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
         ErrorCode.UNKNOWN_SERVER_ERROR),
        (ErrorCode.INVALID_FETCH_SIZE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
         ErrorCode.UNKNOWN_SERVER_ERROR),
        (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REQUEST_TIMED_OUT,
         ErrorCode.REBALANCE_IN_PROGRESS),
        (ErrorCode.CORRUPT_MESSAGE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNKNOWN_SERVER_ERROR),
    ],
)  # fmt: skip
def test_append_errors_are_mapped_as_kafka_maps_them(append: int, offsets: int, group: int) -> None:
    assert offset_commit_error(append) == offsets
    assert group_store_error(append) == group


async def test_expiry_tombstones_commits_of_empty_groups_and_removes_them(setup: Setup) -> None:
    store, clock = setup.store, setup.replicas.clock
    await setup.lead(0)
    now = clock.time_ms()
    empty = GroupMetadata(G0, protocol_type="consumer", current_state_timestamp=now)
    store.add_group(empty)
    stable = store.add_group(stable_group(G0B))
    await store.store_offsets(empty, {T0: commit(1, ts=now)})
    await store.store_offsets(stable, {T0: commit(1, ts=now)})
    clock.advance(59_999)
    assert await store.expire_offsets() == 0
    clock.advance(1)
    assert await store.expire_offsets() == 1
    assert store.get_group(G0) is None and empty.state is GroupState.DEAD
    assert setup.listener.unloaded == [G0]
    assert store.get_group(G0B) is stable and offsets_of(stable) == {T0: 1}
    assert store.offsets_expired == 1

    await setup.follow(0, epoch=1)
    await setup.lead(0, epoch=2)
    assert store.get_group(G0) is None
    assert offsets_of(store.get_group(G0B)) == {T0: 1}


async def test_commits_of_deleted_topics_are_tombstoned(setup: Setup) -> None:
    store = setup.store
    await setup.lead(0)
    group = store.add_group(stable_group(G0))
    await store.store_offsets(group, {T0: commit(1), TopicPartition("u", 0): commit(2)})
    assert await store.remove_offsets({T0, T1}) == 1
    assert offsets_of(group) == {TopicPartition("u", 0): 2}
    await setup.follow(0, epoch=1)
    await setup.lead(0, epoch=2)
    assert offsets_of(store.get_group(G0)) == {TopicPartition("u", 0): 2}


def deleting(topic: str, partitions: int, leader: int) -> HandlerRequest:
    """An UpdateMetadata request for ``topic`` (leader -2: the topic is being deleted)."""
    U = UpdateMetadataRequest
    body = U(
        controller_id=0,
        controller_epoch=1,
        broker_epoch=-1,
        topic_states=[metadata_topic(topic, partitions, leader=leader)],
        live_brokers=[U.UpdateMetadataBroker(id=0, endpoints=[])],
    )
    return HandlerRequest(ApiKey.UPDATE_METADATA, 7, body)


async def test_update_metadata_deleting_a_topic_drops_its_commits(setup: Setup) -> None:
    store = setup.store
    await setup.lead(0)
    topics: DelayedOperationPurgatory[DelayedOperation] = DelayedOperationPurgatory(
        "topic", clock=setup.replicas.clock, reaper_enabled=False
    )
    ctx = setup.replicas.services(group_store=store, topic_purgatory=topics).replicas
    group = store.add_group(GroupMetadata(G0))
    await store.store_offsets(
        group, {T0: commit(1), T1: commit(2), TopicPartition("u", 0): commit(3)}
    )
    await update_metadata.handle(ctx, deleting("t", 2, 0))
    await store.drain()
    assert offsets_of(group) == {T0: 1, T1: 2, TopicPartition("u", 0): 3}
    await update_metadata.handle(ctx, deleting("t", 2, -2))
    await store.drain()
    assert offsets_of(group) == {TopicPartition("u", 0): 3}
    assert store.offsets_removed == 2


async def test_lag_counts_the_partitions_held_here(setup: Setup) -> None:
    store, replicas = setup.store, setup.replicas
    await setup.lead(0)
    replicas.become({}, partition_state(T0))
    records = [SimpleRecord(b"k", b"v", timestamp=1) for _ in range(5)]
    replicas.append(T0, bytes(build_batch(records)))
    group = store.add_group(GroupMetadata(G0))
    await store.store_offsets(group, {T0: commit(2), TopicPartition("elsewhere", 0): commit(1)})
    assert store.lags() == {(G0, "t"): 3}
    assert store.committed_offset_count() == 2


def test_partition_count_is_the_existing_topics_before_the_setting(tmp_path: Path) -> None:
    replicas = local_replicas(tmp_path)
    count: list[int | None] = [None]
    store = GroupMetadataManager(
        replicas.rm,
        replicas.clock,
        OffsetsConfig(num_partitions=50),
        topic_partition_count=lambda: count[0],
    )
    assert store.partition_count() == 50
    count[0] = 7
    assert store.partition_count() == 7
    assert store.partition_for("my-group") == partition_for("my-group", 7)
    replicas.log_manager.shutdown()


async def test_a_partition_compacted_by_the_log_cleaner_loads_the_same_groups(
    tmp_path: Path,
) -> None:
    replicas = local_replicas(tmp_path)
    lm = replicas.log_manager
    # the offsets topic as created: compacted; small segments so that most can be cleaned
    lm.topic_configs.set(OFFSETS_TOPIC, {"cleanup.policy": "compact", "segment.bytes": "400"})
    store = GroupMetadataManager(
        replicas.rm, replicas.clock, OffsetsConfig(num_partitions=PARTITIONS)
    )
    replicas.rm.on_leadership_change = store.on_leadership_change
    setup = Setup(replicas, store, Listener(), {})
    await setup.lead(0)
    kept = store.add_group(stable_group(G0))
    gone = store.add_group(stable_group(G0B))
    await store.store_group(kept)
    await store.store_group(gone)
    for i in range(30):
        await store.store_offsets(kept, {TopicPartition("t", i % 3): commit(i)})
        await store.store_offsets(gone, {T0: commit(i)})
    await store.delete_offsets(kept, [TopicPartition("t", 2)])
    await store.delete_group(gone)
    expected = offsets_of(kept)
    lg = replicas.rm.partition_for(offsets_tp(0))
    assert lg is not None and lg.log is not None
    lg.log.roll()
    before = sum(1 for _ in lg.log.iter_batch_headers())

    lm.cleaner.on_owner = on_loop(asyncio.get_running_loop())
    await asyncio.to_thread(lm.cleaner.run_until_idle)
    assert lm.cleaner.metrics.passes >= 1
    assert sum(1 for _ in lg.log.iter_batch_headers()) < before

    await setup.follow(0, epoch=1)
    await setup.lead(0, epoch=2)
    loaded = store.get_group(G0)
    assert offsets_of(loaded) == expected
    assert loaded is not None and loaded.generation_id == 3 and "m-1" in loaded.members
    assert store.get_group(G0B) is None
    lm.shutdown()


async def test_records_are_compressed_with_the_offsets_topic_codec(tmp_path: Path) -> None:
    replicas = local_replicas(tmp_path)
    config = OffsetsConfig(num_partitions=PARTITIONS, compression=Compression.GZIP)
    store = GroupMetadataManager(replicas.rm, replicas.clock, config)
    replicas.rm.on_leadership_change = store.on_leadership_change
    await Setup(replicas, store, Listener(), {}).lead(0)
    group = store.add_group(GroupMetadata(G0))
    assert await store.store_offsets(group, {T0: commit(4)}) == {T0: ErrorCode.NONE}
    partition = replicas.rm.partition_for(offsets_tp(0))
    assert partition is not None and partition.log is not None
    headers = [h for _, _, h in partition.log.iter_batch_headers()]
    assert [h.compression for h in headers] == [Compression.GZIP]
    replicas.log_manager.shutdown()


async def test_a_deleted_offsets_topic_s_epochs_do_not_fence_its_successor(setup: Setup) -> None:
    await setup.lead(0, epoch=5)
    setup.store.on_resign(0, -2)  # StopReplica of a topic being deleted
    assert setup.store.owned_partitions == frozenset()
    setup.store.on_become_leader(0, 0)  # the re-created topic starts at epoch 0
    assert setup.store.loading_partitions == {0}
    await setup.store.wait_loaded(0)


async def test_transactional_commits_wait_for_their_marker_across_reloads(setup: Setup) -> None:
    store = setup.store
    await setup.lead(0)
    group = store.add_group(GroupMetadata(G0))
    assert await store.store_txn_offsets(group, (7, 0), {T0: commit(5)}) == {T0: ErrorCode.NONE}
    assert offsets_of(group) == {} and T0 in group.txn_offsets[7]
    # pending across a reload (the load replays the transactional batch, no marker yet)
    await setup.follow(0, epoch=1)
    await setup.lead(0, epoch=2)
    loaded = store.get_group(G0)
    assert loaded is not None and offsets_of(loaded) == {} and 7 in loaded.txn_offsets
    # the marker, as WriteTxnMarkers writes it: the commit takes effect, and stays so
    done: list[object] = []
    setup.replicas.rm.append_records(
        {offsets_tp(0): validate_records(marker_batch(7, 0, True, 0, 1), from_client=False)},
        required_acks=1,
        timeout_ms=0,
        on_done=done.append,
        internal_topics_allowed=True,
        from_coordinator=True,
    )
    assert done
    store.complete_txn_offsets(0, 7, True)
    assert offsets_of(loaded) == {T0: 5} and loaded.txn_offsets == {}
    await setup.follow(0, epoch=3)
    await setup.lead(0, epoch=4)
    assert offsets_of(store.get_group(G0)) == {T0: 5}


async def test_a_marker_written_while_the_partition_loads_applies_after_the_load(
    setup: Setup,
) -> None:
    store = setup.store
    await setup.lead(0)
    group = store.add_group(GroupMetadata(G0))
    await store.store_txn_offsets(group, (7, 0), {T0: commit(5)})
    await setup.follow(0, epoch=1)
    states = [partition_state(offsets_tp(0), epoch=2)]
    await setup.replicas.rm.become_leader_or_follower(1, 1, states, {})
    assert 0 in store.loading_partitions
    store.complete_txn_offsets(0, 7, False)  # the load may have read the log before it
    await store.wait_loaded(0)
    loaded = store.get_group(G0)
    assert loaded is not None and loaded.txn_offsets == {} and offsets_of(loaded) == {}
