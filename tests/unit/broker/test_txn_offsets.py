"""Transactional offset commits: pending until their producer's marker (commit applies
them unless a later record committed, abort drops them), reported unstable meanwhile,
replayed the same way when a partition loads, and who may commit them."""

from __future__ import annotations

from broker.group import txn_offsets
from broker.group.load import PartitionLoader
from broker.group.model import CommittedOffset, GroupMetadata, GroupState, MemberMetadata
from broker.group.offsets import GroupOffsets
from broker.group.records import build_records, offset_key, offset_value
from protocol import ErrorCode
from protocol.records.builder import build_batch
from protocol.records.control import ControlType, control_record
from protocol.values import TopicPartition
from tests.unit.broker.memory_group_store import MemoryGroupStore

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def test_commit_applies_pending_offsets_unless_a_later_record_committed() -> None:
    group = GroupMetadata("g")
    positions: dict[tuple[str, TopicPartition], int] = {("g", T1): 20}
    group.offsets[T1] = CommittedOffset(99)
    txn_offsets.add_pending(group, 7, 10, {T0: CommittedOffset(5), T1: CommittedOffset(6)})
    assert txn_offsets.unstable_partitions(group) == {T0, T1}
    assert txn_offsets.complete(group, 7, True, positions) == 1
    assert group.offsets == {T0: CommittedOffset(5), T1: CommittedOffset(99)}
    assert positions == {("g", T0): 10, ("g", T1): 20}
    assert txn_offsets.unstable_partitions(group) == set()


def test_abort_drops_pending_offsets_and_other_producers_stay_pending() -> None:
    group = GroupMetadata("g")
    positions: dict[tuple[str, TopicPartition], int] = {}
    txn_offsets.add_pending(group, 7, 10, {T0: CommittedOffset(5)})
    txn_offsets.add_pending(group, 8, 11, {T1: CommittedOffset(6)})
    assert txn_offsets.complete(group, 7, False, positions) == 0
    assert group.offsets == {} and positions == {}
    assert txn_offsets.unstable_partitions(group) == {T1}
    assert txn_offsets.complete(group, 99, True, positions) == 0  # nothing of that producer


def _txn_batch(producer_id: int, base: int, records: list[tuple[bytes, bytes | None]]) -> bytes:
    out = build_records(records, 1, producer=(producer_id, 0))
    out[0:8] = base.to_bytes(8, "big")  # the log's offset (outside the CRC)
    return bytes(out)


def _marker(producer_id: int, base: int, kind: ControlType) -> bytes:
    return bytes(
        build_batch(
            [control_record(kind, 0, 1)],
            base_offset=base,
            producer_id=producer_id,
            producer_epoch=0,
            is_transactional=True,
            is_control=True,
        )
    )


def _commit(group: str, tp: TopicPartition, offset: int) -> tuple[bytes, bytes | None]:
    return offset_key(group, tp), offset_value(CommittedOffset(offset, commit_timestamp=1))


def test_a_load_replays_transactional_commits_by_their_markers() -> None:
    log = (
        _txn_batch(7, 0, [_commit("g", T0, 5)])  # committed at 2
        + _txn_batch(8, 1, [_commit("g", T1, 6)])  # aborted at 3
        + _marker(7, 2, ControlType.COMMIT)
        + _marker(8, 3, ControlType.ABORT)
        + _txn_batch(9, 4, [_commit("h", T0, 7)])  # still open
    )
    loader = PartitionLoader()
    assert loader.add_batches(log) == 5
    loaded = loader.result()
    assert loaded.groups["g"].offsets == {T0: CommittedOffset(5, commit_timestamp=1)}
    assert loaded.positions == {("g", T0): 0}
    assert loaded.groups["g"].txn_offsets == {}
    h = loaded.groups["h"]
    assert h.offsets == {}
    assert h.txn_offsets == {9: {T0: (4, CommittedOffset(7, commit_timestamp=1))}}


def test_a_later_plain_commit_wins_over_an_earlier_transactional_one_on_load() -> None:
    later = build_records([_commit("g", T0, 8)], 1)
    later[0:8] = (1).to_bytes(8, "big")
    log = _txn_batch(7, 0, [_commit("g", T0, 5)]) + bytes(later) + _marker(7, 2, ControlType.COMMIT)
    loader = PartitionLoader()
    loader.add_batches(log)
    assert loader.result().groups["g"].offsets[T0].offset == 8


class _Recorder:
    def restart_session(self, group: GroupMetadata, member: MemberMetadata) -> None:
        pass

    def committed(self, n: int) -> None:
        pass


async def test_txn_commits_are_pending_and_unstable_until_completed() -> None:
    store, recorder = MemoryGroupStore(), _Recorder()
    offsets = GroupOffsets(store, 10, recorder.restart_session, recorder.committed)
    commits = {T0: CommittedOffset(3), T1: CommittedOffset(4, metadata="x" * 11)}
    result = await offsets.commit_transactional("g", "", None, -1, (7, 0), commits)
    assert result == {T0: ErrorCode.NONE, T1: ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert offsets.fetch("g", [T0]) == {T0: None}  # not committed yet
    assert offsets.unstable("g") == {T0}
    group = store.get_group("g")
    assert group is not None
    txn_offsets.complete(group, 7, True, {})
    assert offsets.fetch("g", [T0]) == {T0: CommittedOffset(3)}
    assert offsets.unstable("g") == set()


async def test_who_may_commit_transactionally() -> None:
    store, recorder = MemoryGroupStore(), _Recorder()
    offsets = GroupOffsets(store, 10, recorder.restart_session, recorder.committed)
    group = store.add_group(GroupMetadata("g"))
    group.members["m"] = MemberMetadata("m", None, "c", "/h", 30_000, 10_000, "consumer", [])
    group.generation_id = 2
    group.state = GroupState.STABLE
    one = {T0: CommittedOffset(1)}
    # naming no member (clients before KIP-447): allowed while the group lives
    assert await offsets.commit_transactional("g", "", None, -1, (7, 0), one) == {T0: 0}
    # a member of another generation, or an unknown member, is refused as OffsetCommit is
    stale = await offsets.commit_transactional("g", "m", None, 1, (7, 0), one)
    assert stale == {T0: ErrorCode.ILLEGAL_GENERATION}
    unknown = await offsets.commit_transactional("g", "x", None, 2, (7, 0), one)
    assert unknown == {T0: ErrorCode.UNKNOWN_MEMBER_ID}
    assert await offsets.commit_transactional("g", "m", None, 2, (7, 0), one) == {T0: 0}
    group.state = GroupState.DEAD
    dead = await offsets.commit_transactional("g", "", None, -1, (7, 0), one)
    assert dead == {T0: ErrorCode.COORDINATOR_NOT_AVAILABLE}
