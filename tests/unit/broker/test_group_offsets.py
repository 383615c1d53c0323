"""GroupOffsets on its own, over an in-memory store: a member's commit is a sign of life
(its session timer restarts) and a refused one is not; a Dead group takes no commits;
the committed counter counts only stored offsets."""

from __future__ import annotations

from broker.group.model import CommittedOffset, GroupMetadata, GroupState, MemberMetadata
from broker.group.offsets import GroupOffsets
from protocol import ErrorCode
from protocol.values import TopicPartition
from tests.unit.broker.memory_group_store import MemoryGroupStore

TP0 = TopicPartition("t", 0)


class _Recorder:
    def __init__(self) -> None:
        self.sessions: list[str] = []
        self.committed: list[int] = []

    def restart_session(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self.sessions.append(member.member_id)


def _stable_group(store: MemoryGroupStore) -> GroupMetadata:
    group = store.add_group(GroupMetadata("g"))
    group.members["m"] = MemberMetadata("m", None, "c", "/h", 30_000, 10_000, "consumer", [])
    group.leader_id = "m"
    group.generation_id = 1
    group.protocol_type = "consumer"
    group.state = GroupState.STABLE
    return group


def _offsets(store: MemoryGroupStore, recorder: _Recorder) -> GroupOffsets:
    return GroupOffsets(store, 10, recorder.restart_session, recorder.committed.append)


async def test_a_members_commit_restarts_its_session_and_counts_what_was_stored() -> None:
    store, recorder = MemoryGroupStore(), _Recorder()
    _stable_group(store)
    offsets = _offsets(store, recorder)
    tp1 = TopicPartition("t", 1)
    commits = {TP0: CommittedOffset(3), tp1: CommittedOffset(4, metadata="x" * 11)}
    result = await offsets.commit("g", "m", None, 1, commits)
    assert result == {TP0: ErrorCode.NONE, tp1: ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert recorder.sessions == ["m"]
    assert recorder.committed == [1]
    assert offsets.fetch("g", [TP0, tp1]) == {TP0: CommittedOffset(3), tp1: None}


async def test_a_refused_commit_is_no_sign_of_life() -> None:
    store, recorder = MemoryGroupStore(), _Recorder()
    _stable_group(store)
    offsets = _offsets(store, recorder)
    result = await offsets.commit("g", "m", None, 2, {TP0: CommittedOffset(3)})
    assert result == {TP0: ErrorCode.ILLEGAL_GENERATION}
    assert recorder.sessions == [] and recorder.committed == []


async def test_a_dead_group_takes_no_commits_and_has_no_offsets_to_delete() -> None:
    store, recorder = MemoryGroupStore(), _Recorder()
    group = _stable_group(store)
    group.state = GroupState.DEAD
    offsets = _offsets(store, recorder)
    result = await offsets.commit("g", "m", None, 1, {TP0: CommittedOffset(3)})
    assert result == {TP0: ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert await offsets.delete("g", [TP0]) == (ErrorCode.GROUP_ID_NOT_FOUND, {})
