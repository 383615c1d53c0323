"""Committed offsets in ``__consumer_offsets``, decoded (pure).

Each record's key starts with an int16 version: 0 and 1 are OffsetCommitKey (group,
topic, partition), 2 is GroupMetadataKey (a group's membership, not an offset). An
OffsetCommitKey's value is an OffsetCommitValue (offset, commit timestamp, ...), or null
when the commit was deleted (a tombstone). The log is read in offset order and the last
record of a key wins, as the group coordinator's own load does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from protocol.data import data_version, decode_data
from protocol.errors import ProtocolError

#: OffsetCommitKey versions; 2 is GroupMetadataKey
OFFSET_COMMIT_KEY_VERSIONS = (0, 1)


class Commit(NamedTuple):
    group: str
    topic: str
    partition: int
    #: None for a tombstone: the commit was removed
    offset: int | None
    commit_timestamp: int | None


def decode_commit(key: bytes | None, value: bytes | None) -> Commit | None:
    """The commit a record of __consumer_offsets holds, or None for any other record
    (group metadata, or bytes that do not parse)."""
    try:
        if key is None or data_version(key) not in OFFSET_COMMIT_KEY_VERSIONS:
            return None
        k = decode_data("OffsetCommitKey", key)
        if value is None:
            return Commit(k.group, k.topic, k.partition, None, None)
        v = decode_data("OffsetCommitValue", value)
    except (ProtocolError, ValueError):
        return None
    return Commit(k.group, k.topic, k.partition, v.offset, v.commit_timestamp)


def latest_commits(records: Iterable[tuple[bytes | None, bytes | None]]) -> list[Commit]:
    """The commits in force after ``records`` (in offset order): the last per (group,
    topic, partition), tombstoned ones dropped."""
    last: dict[tuple[str, str, int], Commit] = {}
    for key, value in records:
        commit = decode_commit(key, value)
        if commit is not None:
            last[commit.group, commit.topic, commit.partition] = commit
    return sorted(c for c in last.values() if c.offset is not None)
