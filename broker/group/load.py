"""Rebuilding the groups of one ``__consumer_offsets`` partition from its log (pure).

A broker that becomes leader of an offsets partition reads the partition's log from its
start to its end and replays it here (Kafka's GroupMetadataManager.doLoadGroupsAndOffsets):

- records are keyed; the last record of a key wins, whatever came before it;
- a null value (a tombstone) removes what its key held: a commit, or a group's metadata;
- a group's metadata and its commits are separate records, so a group tombstone does not
  remove commits (deleting a group writes a tombstone for each of them too), and commits
  without any group metadata -- from consumers that only store offsets (``assign()``
  mode, generation -1) -- make an Empty group of their own;
- records whose key is neither kind, or does not parse, are skipped (counted) rather
  than failing the load: one bad record must not make a whole partition's groups
  unreachable.

Commits of transactions (TxnOffsetCommit: OffsetCommitValue records in transactional
batches) wait for their producer's marker: a COMMIT control batch makes them count as
if written at their own offsets (a later plain commit of the same key still wins), an
ABORT drops them, and those still waiting at the end stay pending in the group
(``GroupMetadata.txn_offsets``, :mod:`broker.group.txn_offsets`).

The log may be compacted (offsets with gaps, empty batches, tombstones already gone) or
not yet (every commit ever made, still in order): replaying in offset order gives the
same answer either way, which is why loading is correct before the cleaner has run.

``PartitionLoader`` is fed whole record batches (the bytes a log read returns), in offset
order, possibly in several chunks, and finishes with the groups. It holds no I/O and no
locks: one loader belongs to one load; the caller may run ``add_batches`` in a worker
thread as long as nothing else touches the loader meanwhile.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from broker.group.model import CommittedOffset, GroupMetadata
from broker.group.records import GroupKey, OffsetKey, read_group_value, read_key, read_offset_value
from protocol.errors import ProtocolError
from protocol.records.batch import InvalidBatch, iter_batches
from protocol.records.builder import read_batch
from protocol.records.control import ControlMarker, ControlType, parse_control_record
from protocol.records.record import Record
from protocol.values import TopicPartition

log = logging.getLogger(__name__)

Buffer = bytes | bytearray | memoryview


@dataclass
class LoadedGroups:
    """What a partition's log holds: its groups (offsets included), the groups whose
    metadata was tombstoned last (and that hold no commit), the log offset of the record
    each commit in force came from, and how many records were skipped."""

    groups: dict[str, GroupMetadata] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)
    positions: dict[tuple[str, TopicPartition], int] = field(default_factory=dict)
    skipped: int = 0


class PartitionLoader:
    """Replays one partition's records; see the module docstring."""

    def __init__(self) -> None:
        self._offsets: dict[tuple[str, TopicPartition], tuple[int, CommittedOffset]] = {}
        self._groups: dict[str, GroupMetadata] = {}
        #: producer id -> (group, partition) -> (offset, commit) of open transactions
        self._txn: dict[int, dict[tuple[str, TopicPartition], tuple[int, CommittedOffset]]] = {}
        self._removed: set[str] = set()
        self.skipped = 0
        #: the offset after the last record replayed (where the next read starts)
        self.next_offset = 0

    def add_batches(self, data: Buffer) -> int:
        """Replay every whole batch of ``data``; returns the offset after the last batch
        (the caller's next read position). A batch that does not parse ends the chunk
        (InvalidBatch is raised: the log is damaged, the load fails)."""
        for pos, header in iter_batches(data):
            if header.last_offset < self.next_offset:
                continue  # a read may start in a batch already replayed
            _, records = read_batch(data, pos)
            if header.is_control:
                self._control(header.producer_id, records)
                self.next_offset = header.next_offset
                continue
            producer = header.producer_id if header.is_transactional else None
            for record in records:
                offset = header.base_offset + record.offset_delta
                if offset >= self.next_offset:
                    self.add_record(offset, record.key, record.value, producer)
            self.next_offset = header.next_offset
        return self.next_offset

    def _control(self, producer_id: int, records: list[Record]) -> None:
        if not records:
            return  # emptied by the cleaner
        try:
            marker = parse_control_record(records[0])
        except InvalidBatch as exc:
            log.warning("skipping an unreadable transaction marker: %s", exc)
            self.skipped += 1
            return
        self.end_transaction(producer_id, marker)

    def end_transaction(self, producer_id: int, marker: ControlMarker) -> None:
        """A transaction marker: the producer's waiting commits count, or go."""
        pending = self._txn.pop(producer_id, {})
        if marker.type != ControlType.COMMIT:
            return
        for slot, (offset, committed) in pending.items():
            current = self._offsets.get(slot)
            if current is None or current[0] < offset:
                self._offsets[slot] = (offset, committed)

    def add_record(
        self, offset: int, key: bytes | None, value: bytes | None, producer: int | None = None
    ) -> None:
        """Replay one record at log ``offset`` (of a transaction of ``producer``)."""
        if key is None:
            self.skipped += 1
            return
        try:
            parsed = read_key(key)
            if isinstance(parsed, OffsetKey) and producer is not None:
                if value is not None:
                    waiting = self._txn.setdefault(producer, {})
                    waiting[parsed.group, parsed.tp] = (offset, read_offset_value(value))
            elif isinstance(parsed, OffsetKey):
                self._add_offset(offset, parsed, value)
            elif isinstance(parsed, GroupKey):
                self._add_group(parsed.group, value)
            else:
                self.skipped += 1
        except (ProtocolError, ValueError, InvalidBatch) as exc:
            log.warning("skipping the unreadable record at offset %d: %s", offset, exc)
            self.skipped += 1

    def _add_offset(self, offset: int, key: OffsetKey, value: bytes | None) -> None:
        slot = (key.group, key.tp)
        if value is None:
            self._offsets.pop(slot, None)
        else:
            self._offsets[slot] = (offset, read_offset_value(value))

    def _add_group(self, group_id: str, value: bytes | None) -> None:
        if value is None:
            self._groups.pop(group_id, None)
            self._removed.add(group_id)
        else:
            self._groups[group_id] = read_group_value(group_id, value)
            self._removed.discard(group_id)

    def result(self) -> LoadedGroups:
        """The groups in force after everything replayed."""
        loaded = LoadedGroups(skipped=self.skipped)
        groups = dict(self._groups)
        for (group_id, tp), (position, committed) in sorted(
            self._offsets.items(), key=lambda item: item[1][0]
        ):
            group = groups.get(group_id)
            if group is None:
                # commits without metadata: a group used only to store offsets
                group = groups[group_id] = GroupMetadata(group_id)
            group.offsets[tp] = committed
            loaded.positions[group_id, tp] = position
        for producer_id, waiting in self._txn.items():
            for (group_id, tp), (position, committed) in waiting.items():
                group = groups.get(group_id)
                if group is None:
                    group = groups[group_id] = GroupMetadata(group_id)
                group.txn_offsets.setdefault(producer_id, {})[tp] = (position, committed)
        loaded.groups = groups
        loaded.removed = {g for g in self._removed if g not in groups}
        return loaded
