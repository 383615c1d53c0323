"""Transactional offset commits (TxnOffsetCommit, KIP-98 and KIP-447), as pure rules.

A transactional producer commits its consumer's offsets inside its transaction: the
coordinator appends them to the group's ``__consumer_offsets`` partition as an ordinary
OffsetCommitValue record, but in a *transactional* batch carrying the transaction's
producer id and epoch (base sequence -1: the coordinator's own write, not a client's
sequence). Until the transaction ends those commits are pending, kept per producer in
``GroupMetadata.txn_offsets`` with the log offset of their record:

- the transaction's COMMIT marker written to that partition (WriteTxnMarkers) moves each
  of them into ``offsets`` -- unless the partition already holds a commit from a later
  record (log order decides, as for plain commits);
- its ABORT marker drops them;
- while one is pending, OffsetFetch with ``require_stable`` (v7+) answers that partition
  UNSTABLE_OFFSET_COMMIT, and the consumer retries, so it never starts from an offset
  that may still be aborted.

Loading a partition replays the same rules from the log (:mod:`broker.group.load`):
transactional records wait for their producer's marker; those without one stay pending.

Who may commit (Kafka's rule for TxnOffsetCommit): anyone while the request names no
member (generation -1, empty member id, no instance id: clients before KIP-447); else
the rule of OffsetCommit (a current member of the current generation).
"""

from __future__ import annotations

from collections.abc import Mapping

from broker.group.model import CommittedOffset, GroupMetadata, GroupState
from protocol import ErrorCode
from protocol.values import TopicPartition

#: producer id -> partition -> (log offset of the record, the commit)
PendingTxnOffsets = dict[int, dict[TopicPartition, tuple[int, CommittedOffset]]]


def names_no_member(member_id: str, group_instance_id: str | None, generation_id: int) -> bool:
    return generation_id < 0 and not member_id and group_instance_id is None


def add_pending(
    group: GroupMetadata,
    producer_id: int,
    base_offset: int,
    offsets: Mapping[TopicPartition, CommittedOffset],
) -> None:
    """Record commits written as one transactional batch at ``base_offset`` (records in
    ``offsets``' order)."""
    pending = group.txn_offsets.setdefault(producer_id, {})
    for i, (tp, committed) in enumerate(offsets.items()):
        pending[tp] = (base_offset + i, committed)


def complete(
    group: GroupMetadata,
    producer_id: int,
    commit: bool,
    positions: dict[tuple[str, TopicPartition], int],
) -> int:
    """End ``producer_id``'s transaction for ``group``: on commit its pending offsets
    take effect where no later record already committed (``positions``: the log offset
    of each commit in force, updated); on abort they go. Returns how many took effect."""
    pending = group.txn_offsets.pop(producer_id, None)
    if not pending or not commit:
        return 0
    applied = 0
    for tp, (position, committed) in pending.items():
        slot = (group.group_id, tp)
        if position > positions.get(slot, -1):
            group.offsets[tp] = committed
            positions[slot] = position
            applied += 1
    return applied


def unstable_partitions(group: GroupMetadata | None) -> set[TopicPartition]:
    """The partitions with a transactional commit pending (OffsetFetch require_stable)."""
    if group is None:
        return set()
    return {tp for pending in group.txn_offsets.values() for tp in pending}


def dead_group_error(group: GroupMetadata | None) -> int:
    if group is not None and group.state is GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NONE
