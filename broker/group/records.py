"""The records of ``__consumer_offsets``: their keys and values, as Kafka writes them.

Every record has a key, which starts with an int16 version that also says its kind:

========  ==================  ===========================================================
key v.    key                 value
========  ==================  ===========================================================
0, 1      OffsetCommitKey     OffsetCommitValue: one committed offset of (group, topic,
          (group, topic,      partition); null (a tombstone) once it is deleted or expired
          partition)
2         GroupMetadataKey    GroupMetadataValue: the group's generation, protocol, leader
          (group)             and members with their subscription and assignment; null
                              once the group is deleted (Dead)
========  ==================  ===========================================================

Written as Kafka 3.x writes them: OffsetCommitKey v1, OffsetCommitValue v3 (v1 when the
commit carries an explicit expire timestamp, the only version that has the field),
GroupMetadataKey v2, GroupMetadataValue v3. Read in every version (the schemas of
protocol.data; fields a version lacks take their defaults). A key of another version is
not ours to read: :func:`read_key` answers None and loading skips it, as Kafka does.

A member's ``subscription`` in the log is its metadata for the group's chosen protocol
only (the other protocols it offered do not matter once the vote is over), so a loaded
member offers exactly that one protocol. A loaded group is Empty when it has no members
and Stable otherwise (its members must heartbeat to the new coordinator to stay).

Everything here is pure: bytes in, the model's types out, and back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from broker.group.model import CommittedOffset, GroupMetadata, GroupState, MemberMetadata
from protocol.data import data_version, decode_data, encode_data
from protocol.messages import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)
from protocol.records.batch import Compression
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from protocol.values import TopicPartition

#: the versions written (Kafka 3.x with inter.broker.protocol.version >= 2.3)
OFFSET_KEY_VERSION = 1
OFFSET_VALUE_VERSION = 3
#: the only OffsetCommitValue version with expireTimestamp
OFFSET_VALUE_WITH_EXPIRY_VERSION = 1
GROUP_KEY_VERSION = 2
GROUP_VALUE_VERSION = 3

#: key versions by kind
OFFSET_KEY_VERSIONS = frozenset({0, 1})
GROUP_KEY_VERSIONS = frozenset({2})

#: "no value" in the log's int fields
_NONE = -1


@dataclass(frozen=True, slots=True)
class OffsetKey:
    """The key of a committed offset."""

    group: str
    tp: TopicPartition


@dataclass(frozen=True, slots=True)
class GroupKey:
    """The key of a group's metadata."""

    group: str


RecordKey = OffsetKey | GroupKey


# -- writing ------------------------------------------------------------------------------


def offset_key(group: str, tp: TopicPartition) -> bytes:
    return encode_data(
        "OffsetCommitKey",
        OFFSET_KEY_VERSION,
        OffsetCommitKey(group=group, topic=tp.topic, partition=tp.partition),
    )


def offset_value(offset: CommittedOffset) -> bytes:
    """OffsetCommitValue v3, or v1 when the commit has an explicit expire timestamp."""
    if offset.expire_timestamp is not None:
        return encode_data(
            "OffsetCommitValue",
            OFFSET_VALUE_WITH_EXPIRY_VERSION,
            OffsetCommitValue(
                offset=offset.offset,
                metadata=offset.metadata,
                commit_timestamp=offset.commit_timestamp,
                expire_timestamp=offset.expire_timestamp,
            ),
        )
    return encode_data(
        "OffsetCommitValue",
        OFFSET_VALUE_VERSION,
        OffsetCommitValue(
            offset=offset.offset,
            leader_epoch=offset.leader_epoch,
            metadata=offset.metadata,
            commit_timestamp=offset.commit_timestamp,
        ),
    )


def group_key(group: str) -> bytes:
    return encode_data("GroupMetadataKey", GROUP_KEY_VERSION, GroupMetadataKey(group=group))


def group_value(group: GroupMetadata) -> bytes:
    """GroupMetadataValue v3 of the group's current generation."""
    members = [
        GroupMetadataValue.MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=_chosen_metadata(m, group.protocol_name),
            assignment=m.assignment,
        )
        for m in group.members.values()
    ]
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id,
        current_state_timestamp=(
            _NONE if group.current_state_timestamp is None else group.current_state_timestamp
        ),
        members=members,
    )
    return encode_data("GroupMetadataValue", GROUP_VALUE_VERSION, value)


def _chosen_metadata(member: MemberMetadata, protocol: str | None) -> bytes:
    for name, metadata in member.protocols:
        if name == protocol:
            return metadata
    return b""


def build_records(
    records: Iterable[tuple[bytes, bytes | None]],
    timestamp_ms: int,
    compression: Compression = Compression.NONE,
    producer: tuple[int, int] | None = None,
) -> bytearray:
    """One RecordBatch v2 of (key, value) records (None: a tombstone), stamped with
    ``timestamp_ms`` (CreateTime), as the coordinator appends them; a transactional
    batch of ``producer`` (id, epoch), without sequence, for TxnOffsetCommit."""
    simple = [SimpleRecord(key, value, timestamp=timestamp_ms) for key, value in records]
    if producer is None:
        return build_batch(simple, compression=compression)
    return build_batch(
        simple,
        compression=compression,
        producer_id=producer[0],
        producer_epoch=producer[1],
        is_transactional=True,
    )


# -- reading ------------------------------------------------------------------------------


def read_key(buf: bytes | bytearray | memoryview) -> RecordKey | None:
    """The key of a record, or None for a version that is neither kind. Raises
    ProtocolError (or ValueError) for bytes that do not parse."""
    version = data_version(buf)
    if version in OFFSET_KEY_VERSIONS:
        k = decode_data("OffsetCommitKey", buf)
        return OffsetKey(k.group, TopicPartition(k.topic, k.partition))
    if version in GROUP_KEY_VERSIONS:
        return GroupKey(decode_data("GroupMetadataKey", buf).group)
    return None


def read_offset_value(buf: bytes | bytearray | memoryview) -> CommittedOffset:
    """An OffsetCommitValue of any version (v0: no leader epoch, no expiry; v1: an
    expire timestamp; v2: neither; v3+: the leader epoch)."""
    v = decode_data("OffsetCommitValue", buf)
    expire = v.expire_timestamp
    return CommittedOffset(
        offset=v.offset,
        leader_epoch=v.leader_epoch,
        metadata=v.metadata,
        commit_timestamp=v.commit_timestamp,
        expire_timestamp=None if expire == _NONE else expire,
    )


def read_group_value(group_id: str, buf: bytes | bytearray | memoryview) -> GroupMetadata:
    """A GroupMetadataValue of any version, as the group it describes (without offsets:
    those are records of their own). v0 has no rebalance timeout (the session timeout
    stands in, as Kafka reads it), v0-1 no state timestamp, v0-2 no instance ids."""
    v = decode_data("GroupMetadataValue", buf)
    protocol_type = v.protocol_type or None
    members: dict[str, MemberMetadata] = {}
    static: dict[str, str] = {}
    for m in v.members:
        rebalance = m.rebalance_timeout if m.rebalance_timeout != _NONE else m.session_timeout
        members[m.member_id] = MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=rebalance,
            session_timeout_ms=m.session_timeout,
            protocol_type=protocol_type or "",
            protocols=[(v.protocol or "", bytes(m.subscription))],
            assignment=bytes(m.assignment),
        )
        if m.group_instance_id is not None:
            static[m.group_instance_id] = m.member_id
    timestamp = v.current_state_timestamp
    return GroupMetadata(
        group_id=group_id,
        state=GroupState.STABLE if members else GroupState.EMPTY,
        protocol_type=protocol_type,
        protocol_name=v.protocol,
        generation_id=v.generation,
        leader_id=v.leader,
        members=members,
        static_members=static,
        current_state_timestamp=None if timestamp == _NONE else timestamp,
    )
