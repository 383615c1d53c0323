"""The records of __consumer_offsets: written in the versions Kafka 3.x writes, read in
every version (the old ones built here byte by byte from Kafka's schemas)."""

from __future__ import annotations

import struct

import pytest

from broker.group.model import CommittedOffset, GroupMetadata, GroupState, MemberMetadata
from broker.group.records import (
    GroupKey,
    OffsetKey,
    build_records,
    group_key,
    group_value,
    offset_key,
    offset_value,
    read_group_value,
    read_key,
    read_offset_value,
)
from protocol.data import data_version
from protocol.errors import ProtocolError
from protocol.records.builder import read_batch
from protocol.values import TopicPartition

TP = TopicPartition("orders", 3)


def s16(text: str) -> bytes:
    """An int16-length string."""
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def null16() -> bytes:
    return struct.pack(">h", -1)


def b32(raw: bytes) -> bytes:
    """An int32-length byte string."""
    return struct.pack(">i", len(raw)) + raw


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


# -- keys -----------------------------------------------------------------------------------


def test_offset_key_is_written_as_v1_and_read_back() -> None:
    key = offset_key("g", TP)
    assert key == i16(1) + s16("g") + s16("orders") + i32(3)
    assert read_key(key) == OffsetKey("g", TP)


def test_offset_key_v0_is_read() -> None:
    assert read_key(i16(0) + s16("g") + s16("orders") + i32(3)) == OffsetKey("g", TP)


def test_group_key_is_v2() -> None:
    key = group_key("g")
    assert key == i16(2) + s16("g")
    assert read_key(key) == GroupKey("g")


def test_a_key_of_another_version_is_not_ours() -> None:
    # transaction log keys and future kinds: skipped, not an error
    assert read_key(i16(3) + s16("x")) is None


def test_a_key_that_does_not_parse_raises() -> None:
    with pytest.raises((ProtocolError, ValueError)):
        read_key(i16(1) + s16("g"))  # topic and partition missing


# -- offset values ----------------------------------------------------------------------------

COMMIT = CommittedOffset(
    offset=42, leader_epoch=7, metadata="meta", commit_timestamp=1_700_000_000_000
)


def test_offset_value_is_written_as_v3() -> None:
    value = offset_value(COMMIT)
    assert value == i16(3) + i64(42) + i32(7) + s16("meta") + i64(1_700_000_000_000)
    assert read_offset_value(value) == COMMIT


def test_an_explicit_expire_timestamp_is_written_as_v1_the_only_version_with_it() -> None:
    commit = CommittedOffset(offset=5, metadata="", commit_timestamp=10, expire_timestamp=99)
    value = offset_value(commit)
    assert data_version(value) == 1
    assert value == i16(1) + i64(5) + s16("") + i64(10) + i64(99)
    assert read_offset_value(value) == commit


def test_offset_value_v0_has_no_epoch_and_no_expiry() -> None:
    value = i16(0) + i64(9) + s16("m") + i64(100)
    assert read_offset_value(value) == CommittedOffset(
        offset=9, leader_epoch=-1, metadata="m", commit_timestamp=100, expire_timestamp=None
    )


def test_offset_value_v2_has_neither() -> None:
    value = i16(2) + i64(9) + s16("") + i64(100)
    assert read_offset_value(value) == CommittedOffset(9, -1, "", 100, None)


def test_offset_value_v4_is_flexible() -> None:
    # v4: compact strings (length + 1 as an unsigned varint), then empty tagged fields
    value = i16(4) + i64(9) + i32(2) + bytes([1 + 1]) + b"m" + i64(100) + bytes([0])
    assert read_offset_value(value) == CommittedOffset(9, 2, "m", 100, None)


# -- group values -----------------------------------------------------------------------------


def stable_group() -> GroupMetadata:
    members = {
        "m1": MemberMetadata(
            member_id="m1",
            group_instance_id="instance-1",
            client_id="c1",
            client_host="/127.0.0.1",
            rebalance_timeout_ms=30_000,
            session_timeout_ms=10_000,
            protocol_type="consumer",
            protocols=[("range", b"sub-range"), ("roundrobin", b"sub-rr")],
            assignment=b"assign-1",
        ),
        "m2": MemberMetadata(
            member_id="m2",
            group_instance_id=None,
            client_id="c2",
            client_host="/127.0.0.2",
            rebalance_timeout_ms=40_000,
            session_timeout_ms=12_000,
            protocol_type="consumer",
            protocols=[("roundrobin", b"sub-rr-2")],
            assignment=b"assign-2",
        ),
    }
    return GroupMetadata(
        group_id="g",
        state=GroupState.STABLE,
        protocol_type="consumer",
        protocol_name="roundrobin",
        generation_id=4,
        leader_id="m1",
        members=members,
        static_members={"instance-1": "m1"},
        current_state_timestamp=1234,
    )


def test_group_value_is_v3_with_each_members_chosen_protocol_metadata() -> None:
    value = group_value(stable_group())
    assert data_version(value) == 3
    loaded = read_group_value("g", value)
    assert loaded.state is GroupState.STABLE
    assert (loaded.protocol_type, loaded.protocol_name) == ("consumer", "roundrobin")
    assert (loaded.generation_id, loaded.leader_id) == (4, "m1")
    assert loaded.current_state_timestamp == 1234
    assert loaded.static_members == {"instance-1": "m1"}
    m1, m2 = loaded.members["m1"], loaded.members["m2"]
    # only the chosen protocol's metadata is stored
    assert m1.protocols == [("roundrobin", b"sub-rr")]
    assert m2.protocols == [("roundrobin", b"sub-rr-2")]
    assert (m1.assignment, m2.assignment) == (b"assign-1", b"assign-2")
    assert (m1.client_id, m1.client_host) == ("c1", "/127.0.0.1")
    assert m1.group_instance_id == "instance-1"
    assert (m1.rebalance_timeout_ms, m1.session_timeout_ms) == (30_000, 10_000)
    assert m1.protocol_type == "consumer"


def test_an_empty_group_round_trips_as_empty() -> None:
    group = GroupMetadata("g", protocol_type="consumer", generation_id=5)
    loaded = read_group_value("g", group_value(group))
    assert loaded.state is GroupState.EMPTY
    assert loaded.protocol_type == "consumer"
    assert loaded.protocol_name is None and loaded.leader_id is None
    assert loaded.generation_id == 5 and loaded.members == {}
    assert loaded.current_state_timestamp is None


def test_a_group_without_protocol_type_reads_back_without_one() -> None:
    loaded = read_group_value("g", group_value(GroupMetadata("g")))
    assert loaded.protocol_type is None


def member_v0(member_id: str) -> bytes:
    return s16(member_id) + s16("client") + s16("/10.0.0.1") + i32(6000) + b32(b"sub") + b32(b"asg")


def test_group_value_v0_uses_the_session_timeout_as_rebalance_timeout() -> None:
    value = i16(0) + s16("consumer") + i32(2) + s16("range") + s16("m") + i32(1) + member_v0("m")
    loaded = read_group_value("g", value)
    member = loaded.members["m"]
    assert (member.rebalance_timeout_ms, member.session_timeout_ms) == (6000, 6000)
    assert member.group_instance_id is None and member.protocols == [("range", b"sub")]
    assert loaded.current_state_timestamp is None and loaded.state is GroupState.STABLE


def test_group_value_v1_has_the_rebalance_timeout() -> None:
    member = s16("m") + s16("client") + s16("/h") + i32(9000) + i32(6000) + b32(b"s") + b32(b"a")
    value = i16(1) + s16("consumer") + i32(2) + s16("range") + s16("m") + i32(1) + member
    assert read_group_value("g", value).members["m"].rebalance_timeout_ms == 9000


def test_group_value_v2_has_the_state_timestamp_and_no_instance_ids() -> None:
    member = s16("m") + s16("client") + s16("/h") + i32(9000) + i32(6000) + b32(b"s") + b32(b"a")
    value = i16(2) + s16("consumer") + i32(2) + s16("range") + s16("m") + i64(777) + i32(1) + member
    loaded = read_group_value("g", value)
    assert loaded.current_state_timestamp == 777
    assert loaded.members["m"].group_instance_id is None


def test_group_value_with_null_protocol_and_leader() -> None:
    value = i16(2) + s16("consumer") + i32(0) + null16() + null16() + i64(-1) + i32(0)
    loaded = read_group_value("g", value)
    assert (loaded.protocol_name, loaded.leader_id, loaded.members) == (None, None, {})


# -- batches ----------------------------------------------------------------------------------


def test_records_are_written_as_one_batch_with_tombstones() -> None:
    batch = build_records(
        [(offset_key("g", TP), offset_value(COMMIT)), (group_key("g"), None)], 555
    )
    header, records = read_batch(batch)
    assert header.records_count == 2 and header.max_timestamp == 555
    assert read_key(records[0].key or b"") == OffsetKey("g", TP)
    assert records[1].value is None
