"""Replaying an offsets partition's log: last record of a key wins, tombstones remove,
commits without group metadata make an Empty group, unreadable records are skipped, and
a compacted log (offset gaps, empty batches) loads the same as the log it came from."""

from __future__ import annotations

from broker.group.load import PartitionLoader
from broker.group.model import CommittedOffset, GroupMetadata, GroupState, MemberMetadata
from broker.group.records import group_key, group_value, offset_key, offset_value
from protocol.records.builder import BatchBuilder, build_batch
from protocol.records.record import SimpleRecord
from protocol.values import TopicPartition

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)

Rec = tuple[bytes | None, bytes | None]


def commit(offset: int, ts: int = 100) -> bytes:
    return offset_value(CommittedOffset(offset=offset, commit_timestamp=ts))


def stable(group_id: str, generation: int) -> bytes:
    member = MemberMetadata(
        member_id="m",
        group_instance_id=None,
        client_id="c",
        client_host="/h",
        rebalance_timeout_ms=1000,
        session_timeout_ms=1000,
        protocol_type="consumer",
        protocols=[("range", b"sub")],
        assignment=b"asg",
    )
    return group_value(
        GroupMetadata(
            group_id,
            state=GroupState.STABLE,
            protocol_type="consumer",
            protocol_name="range",
            generation_id=generation,
            leader_id="m",
            members={"m": member},
        )
    )


def batches(*groups: list[Rec], start: int = 0) -> bytes:
    """One batch per list of records, at consecutive offsets from ``start``."""
    out = bytearray()
    offset = start
    for records in groups:
        out += build_batch(
            [SimpleRecord(k, v, timestamp=1) for k, v in records], base_offset=offset
        )
        offset += len(records)
    return bytes(out)


def load(data: bytes) -> PartitionLoader:
    loader = PartitionLoader()
    loader.add_batches(data)
    return loader


def test_the_last_commit_of_a_key_wins() -> None:
    data = batches(
        [(offset_key("g", T0), commit(1)), (offset_key("g", T1), commit(5))],
        [(offset_key("g", T0), commit(2))],
    )
    loader = load(data)
    assert loader.next_offset == 3
    loaded = loader.result()
    group = loaded.groups["g"]
    assert {tp: c.offset for tp, c in group.offsets.items()} == {T0: 2, T1: 5}
    assert loaded.positions == {("g", T0): 2, ("g", T1): 1}


def test_commits_without_group_metadata_make_an_empty_group() -> None:
    loaded = load(batches([(offset_key("simple", T0), commit(7))])).result()
    group = loaded.groups["simple"]
    assert group.state is GroupState.EMPTY and group.protocol_type is None
    assert group.offsets[T0].offset == 7


def test_an_offset_tombstone_removes_the_commit() -> None:
    data = batches(
        [(offset_key("g", T0), commit(1)), (offset_key("g", T1), commit(1))],
        [(offset_key("g", T0), None)],
        [(group_key("g"), stable("g", 3))],
    )
    group = load(data).result().groups["g"]
    assert set(group.offsets) == {T1}
    assert group.generation_id == 3 and group.state is GroupState.STABLE


def test_a_group_tombstone_removes_the_group_and_its_tombstoned_commits() -> None:
    # deleting a group writes a tombstone for each commit and for the metadata
    data = batches(
        [(group_key("g"), stable("g", 1)), (offset_key("g", T0), commit(1))],
        [(offset_key("g", T0), None), (group_key("g"), None)],
    )
    loaded = load(data).result()
    assert "g" not in loaded.groups
    assert loaded.removed == {"g"}


def test_a_group_recreated_after_its_tombstone_is_loaded() -> None:
    data = batches(
        [(group_key("g"), stable("g", 1))],
        [(group_key("g"), None)],
        [(group_key("g"), stable("g", 1))],
    )
    loaded = load(data).result()
    assert loaded.groups["g"].generation_id == 1 and loaded.removed == set()


def test_offsets_only_use_after_a_group_was_deleted_keeps_a_group() -> None:
    data = batches(
        [(group_key("g"), stable("g", 1))],
        [(group_key("g"), None)],
        [(offset_key("g", T0), commit(9))],
    )
    loaded = load(data).result()
    assert loaded.groups["g"].state is GroupState.EMPTY
    assert loaded.groups["g"].offsets[T0].offset == 9
    assert loaded.removed == set()


def test_the_last_group_metadata_wins() -> None:
    data = batches([(group_key("g"), stable("g", 1))], [(group_key("g"), stable("g", 2))])
    assert load(data).result().groups["g"].generation_id == 2


def test_unreadable_and_foreign_records_are_skipped() -> None:
    data = batches(
        [
            (None, b"no key"),
            (b"\x00\x01garbage", commit(1)),
            (b"\x00\x05" + b"\x00\x01x", b"a future kind"),
            (offset_key("g", T0), commit(3)),
        ]
    )
    loaded = load(data).result()
    assert loaded.skipped == 3
    assert loaded.groups["g"].offsets[T0].offset == 3


def test_a_compacted_log_loads_like_the_original() -> None:
    original = batches(
        [(offset_key("g", T0), commit(1))],
        [(offset_key("g", T1), commit(1))],
        [(offset_key("g", T0), commit(2))],
        [(group_key("h"), stable("h", 1))],
    )
    # what compaction leaves: offset 0 gone (superseded), offsets kept, an empty batch
    empty = BatchBuilder(base_offset=0).build()
    compacted = bytes(empty) + batches(
        [(offset_key("g", T1), commit(1))],
        [(offset_key("g", T0), commit(2))],
        [(group_key("h"), stable("h", 1))],
        start=1,
    )
    a, b = load(original).result(), load(compacted).result()
    assert a.groups.keys() == b.groups.keys() == {"g", "h"}
    assert a.groups["g"].offsets == b.groups["g"].offsets
    assert a.positions == b.positions


def test_chunks_may_overlap_a_batch_already_replayed() -> None:
    first = batches([(offset_key("g", T0), commit(1)), (offset_key("g", T1), commit(1))])
    second = batches([(offset_key("g", T0), commit(2))], start=2)
    loader = PartitionLoader()
    loader.add_batches(first)
    # a read from offset 2 may return the batch holding 0-1 again (it starts before)
    assert loader.add_batches(first + second) == 3
    assert loader.result().groups["g"].offsets[T0].offset == 2


def test_a_batch_cut_short_ends_the_chunk() -> None:
    whole = batches([(offset_key("g", T0), commit(1))])
    cut = batches([(offset_key("g", T0), commit(2))], start=1)[:-5]
    loader = PartitionLoader()
    assert loader.add_batches(whole + cut) == 1
