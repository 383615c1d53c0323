"""Topics: /brokers/topics/<t> assignments, their creation and their removal (blocking).

A topic znode holds the topic id and each partition's replicas (zk.codec). Its config
lives beside it in /config/topics/<t> and is written first, in the same multi-op, so
that whoever sees the topic can read its config. The partition states below it are
zk.partition_states'.

Removal is the controller's last step of a topic deletion: the whole subtree, the config
and the /admin/delete_topics entry in one fenced multi-op.
"""

from __future__ import annotations

from collections.abc import Mapping

from kazoo.exceptions import NodeExistsError, NoNodeError, NotEmptyError

from zk import codec, paths
from zk.errors import TopicExistsError
from zk.model import TopicAssignment
from zk.session import Watch, ZkSession
from zk.transactions import (
    CreateOp,
    DeleteOp,
    Op,
    SetDataOp,
    commit,
    controller_write,
    first_failure,
)


def create_topic(
    session: ZkSession, assignment: TopicAssignment, config: Mapping[str, str]
) -> None:
    """Write a new topic's config and assignment together (one multi-op). A topic that
    exists already raises TopicExistsError and writes nothing."""
    session.kazoo.ensure_path(paths.CONFIG_TOPICS)
    session.kazoo.ensure_path(paths.BROKER_TOPICS)
    config_path = paths.topic_config(assignment.topic)
    data = codec.encode_entity_config(dict(config))
    write_config: Op = (
        CreateOp(config_path, data)
        if session.kazoo.exists(config_path) is None
        else SetDataOp(config_path, data)
    )
    results = commit(
        session,
        [write_config, CreateOp(paths.topic(assignment.topic), codec.encode_topic(assignment))],
    )
    failure = first_failure(results)
    if isinstance(failure, NodeExistsError):
        raise TopicExistsError(assignment.topic)
    if failure is not None:
        raise failure


def set_topic_assignment(
    session: ZkSession, assignment: TopicAssignment, expected_version: int
) -> int:
    """Rewrite a topic's assignment (CreatePartitions), conditionally on its version;
    returns the new version (BadVersionError when another writer got there first)."""
    stat = session.kazoo.set(
        paths.topic(assignment.topic), codec.encode_topic(assignment), version=expected_version
    )
    return int(stat.version)


def set_topic_assignment_as_controller(
    session: ZkSession, assignment: TopicAssignment, epoch_zk_version: int
) -> None:
    """The controller rewrites a topic's assignment (a reassignment's RS and its
    adding/removing replicas): any znode version, fenced on the controller epoch."""
    controller_write(
        session,
        [SetDataOp(paths.topic(assignment.topic), codec.encode_topic(assignment))],
        epoch_zk_version,
    )


def get_topics(session: ZkSession, watch: Watch | None = None) -> list[str]:
    return session.children(paths.BROKER_TOPICS, watch)


def get_topic(
    session: ZkSession, topic: str, watch: Watch | None = None
) -> tuple[TopicAssignment, int] | None:
    """The topic's assignment and its znode version (for conditional rewrites)."""
    found = session.get(paths.topic(topic), watch)
    if found is None:
        return None
    return codec.decode_topic(topic, found[0]), int(found[1].version)


def delete_topic_znodes(
    session: ZkSession, topic: str, epoch_zk_version: int, attempts: int = 3
) -> None:
    """Remove every znode of a deleted topic in one multi-op fenced on the controller
    epoch: /brokers/topics/<t> with its partition and state znodes (children before
    parents, as ZooKeeper deletes only leaves), /config/topics/<t> and
    /admin/delete_topics/<t>. The tree is listed first; if it changed before the
    multi-op ran (a znode gone, or a new child), it is listed again."""
    for attempt in range(attempts):
        ops: list[Op] = [DeleteOp(p) for p in _subtree_leaves_first(session, paths.topic(topic))]
        for path in (paths.topic_config(topic), paths.delete_topic(topic)):
            if session.kazoo.exists(path) is not None:
                ops.append(DeleteOp(path))
        if not ops:
            return
        failure = first_failure(controller_write(session, ops, epoch_zk_version))
        if failure is None:
            return
        if attempt + 1 == attempts or not isinstance(failure, NoNodeError | NotEmptyError):
            raise failure


def _subtree_leaves_first(session: ZkSession, path: str) -> list[str]:
    """``path`` and every znode under it, each listed after its children."""
    try:
        children = session.kazoo.get_children(path)
    except NoNodeError:
        return []
    out: list[str] = []
    for child in sorted(children):
        out += _subtree_leaves_first(session, f"{path}/{child}")
    out.append(path)
    return out
