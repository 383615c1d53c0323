"""The seam between the group protocol and ``__consumer_offsets``: ``GroupStore``.

The coordinator half decides (who is in a group, which commits are allowed); the store
half persists and locates (which partition a group lives in, whether this broker leads
it, appending records with acks=all, rebuilding groups from the log). The coordinator
only ever talks to the store through this Protocol, so its unit tests use an in-memory
store and the store's tests need no group protocol.

Error codes are the ones the coordinator returns to clients as they are: the store maps
append errors the way Kafka does (NOT_ENOUGH_REPLICAS* and UNKNOWN_TOPIC_OR_PARTITION ->
COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR ->
NOT_COORDINATOR; MESSAGE_TOO_LARGE / RECORD_LIST_TOO_LARGE / INVALID_FETCH_SIZE ->
INVALID_COMMIT_OFFSET_SIZE for offsets, UNKNOWN_SERVER_ERROR for group metadata).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from broker.group.model import CommittedOffset, GroupMetadata
from protocol.values import TopicPartition


class GroupStore(Protocol):
    def partition_for(self, group_id: str) -> int:
        """The __consumer_offsets partition ``group_id`` lives in."""
        ...

    def coordinator_error(self, group_id: str) -> int:
        """NONE when this broker is the group's coordinator and its partition is loaded;
        COORDINATOR_LOAD_IN_PROGRESS while loading; NOT_COORDINATOR otherwise."""
        ...

    def get_group(self, group_id: str) -> GroupMetadata | None:
        """The loaded group, or None (unknown here)."""
        ...

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        """Register a new group (returns the one already there if a racing call added
        it first)."""
        ...

    @property
    def loading_partitions(self) -> frozenset[int]:
        """The offsets partitions whose groups are being loaded (ListGroups answers
        COORDINATOR_LOAD_IN_PROGRESS while there are any: its list would be partial)."""
        ...

    def groups(self) -> Iterable[GroupMetadata]:
        """Every group of every partition this broker has loaded."""
        ...

    async def store_group(self, group: GroupMetadata) -> int:
        """Write the group's GroupMetadataValue (members and assignments of its current
        generation; or a tombstone when the group is Dead) with acks=all; the error code
        once acknowledged."""
        ...

    async def store_offsets(
        self, group: GroupMetadata, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> dict[TopicPartition, int]:
        """Write the commits with acks=all. ``group.pending_offsets`` holds them while the
        append waits; on success they move into ``group.offsets``. Per partition error."""
        ...

    async def store_txn_offsets(
        self,
        group: GroupMetadata,
        producer: tuple[int, int],
        offsets: Mapping[TopicPartition, CommittedOffset],
    ) -> dict[TopicPartition, int]:
        """Write the commits of a transaction (``producer``: id, epoch) with acks=all,
        as one transactional batch; they wait in ``group.txn_offsets`` for the
        transaction's marker. Per partition error."""
        ...

    async def delete_offsets(
        self, group: GroupMetadata, partitions: Iterable[TopicPartition]
    ) -> int:
        """Tombstone the commits of ``partitions`` and drop them from ``group.offsets``."""
        ...

    async def delete_group(self, group: GroupMetadata) -> int:
        """Tombstone the group's metadata and all its commits, and forget it here."""
        ...
