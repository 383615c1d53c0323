"""Admin requests under /admin: topic deletions, reassignments, preferred elections (blocking).

Each is a znode an admin (or a broker's admin API) writes and the controller watches:

- /admin/delete_topics/<t>: one entry per topic queued for deletion; the controller
  removes the entry with the topic's znodes (zk.topics.delete_topic_znodes), or alone
  when the topic is unknown or deletion disabled.
- /admin/reassign_partitions: the pre-API reassignment request; its czxid tells one
  request from the next. The controller rewrites it with what is left and deletes it
  when nothing is.
- /admin/preferred_replica_election: partitions to move back to their preferred leader;
  deleted once handled.

The controller's writes are fenced on its epoch; an admin's creates are plain and fail
with NodeExistsError while an earlier request is pending.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kazoo.exceptions import NodeExistsError, NoNodeError

from protocol.values import TopicPartition
from zk import codec, paths
from zk.errors import TopicAlreadyMarkedForDeletionError, TopicNotFoundError
from zk.session import Watch, ZkSession
from zk.transactions import DeleteOp, Op, SetDataOp, fenced

# -- topic deletion -------------------------------------------------------------------------


def get_topic_deletions(session: ZkSession, watch: Watch | None = None) -> list[str]:
    return session.children(paths.DELETE_TOPICS, watch)


def mark_topic_for_deletion(session: ZkSession, topic: str) -> None:
    """Queue ``topic`` for the controller: create /admin/delete_topics/<t> (what
    DeleteTopics writes). TopicNotFoundError when the topic does not exist,
    TopicAlreadyMarkedForDeletionError when it is queued already."""
    if session.kazoo.exists(paths.topic(topic)) is None:
        raise TopicNotFoundError(topic)
    try:
        session.kazoo.create(paths.delete_topic(topic), b"", makepath=True)
    except NodeExistsError:
        raise TopicAlreadyMarkedForDeletionError(topic) from None


def delete_topic_deletions(
    session: ZkSession, topics: Sequence[str], epoch_zk_version: int
) -> None:
    """The controller drops /admin/delete_topics/<t> entries, fenced on its epoch; one
    per multi-op, so an entry already gone fails alone (and is ignored)."""
    if topics:
        fenced(session, {t: [DeleteOp(paths.delete_topic(t))] for t in topics}, epoch_zk_version)


# -- preferred replica election -------------------------------------------------------------


def get_preferred_replica_election(
    session: ZkSession, watch: Watch | None = None
) -> list[TopicPartition] | None:
    """The partitions an operator asked to move back to their preferred leader."""
    found = session.get(paths.PREFERRED_REPLICA_ELECTION, watch)
    return None if found is None else codec.decode_isr_change(found[0])


def delete_preferred_replica_election(session: ZkSession, epoch_zk_version: int) -> None:
    fenced(session, {0: [DeleteOp(paths.PREFERRED_REPLICA_ELECTION)]}, epoch_zk_version)


def request_preferred_replica_election(
    session: ZkSession, partitions: Iterable[TopicPartition]
) -> None:
    """What an admin tool writes; NodeExists while a previous request is pending."""
    session.kazoo.create(
        paths.PREFERRED_REPLICA_ELECTION, codec.encode_partition_list(partitions), makepath=True
    )


# -- partition reassignment -----------------------------------------------------------------


def get_partition_reassignment(
    session: ZkSession, watch: Watch | None = None
) -> tuple[dict[TopicPartition, tuple[int, ...]], int] | None:
    """The targets in /admin/reassign_partitions and the znode's czxid, None when there
    is none; with ``watch``, armed either way (so its creation is noticed). ZkDataError
    when it is not readable."""
    found = session.get(paths.REASSIGN_PARTITIONS, watch)
    if found is None:
        return None
    return codec.decode_reassignment(found[0]), int(found[1].czxid)


def set_partition_reassignment(
    session: ZkSession, targets: Mapping[TopicPartition, Sequence[int]], epoch_zk_version: int
) -> None:
    """The controller rewrites /admin/reassign_partitions with what is left of it
    (deleted when nothing is); fenced on the controller epoch. A znode that went away
    meanwhile is left alone."""
    op: Op = (
        SetDataOp(paths.REASSIGN_PARTITIONS, codec.encode_reassignment(targets))
        if targets
        else DeleteOp(paths.REASSIGN_PARTITIONS)
    )
    failure = fenced(session, {0: [op]}, epoch_zk_version)[0]
    if isinstance(failure, Exception) and not isinstance(failure, NoNodeError):
        raise failure


def request_partition_reassignment(
    session: ZkSession, targets: Mapping[TopicPartition, Sequence[int]]
) -> None:
    """What an admin writes (the pre-API way); NodeExists while one is pending."""
    session.kazoo.create(
        paths.REASSIGN_PARTITIONS, codec.encode_reassignment(targets), makepath=True
    )
