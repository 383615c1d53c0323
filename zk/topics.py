"""Topics: /brokers/topics/<t> assignments, their creation and their removal (blocking).

A topic znode holds the topic id and each partition's replicas (zk.codec). Its config
lives beside it in /config/topics/<t> and is written first, in the same multi-op, so
that whoever sees the topic can read its config. The partition states below it are
zk.partition_states'.

Removal is the controller's last step of a topic deletion: the whole subtree, the config
and the /admin/delete_topics entry in one fenced multi-op.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
    commit_async,
    controller_write,
    first_failure,
)


def create_topic(
    session: ZkSession, assignment: TopicAssignment, config: Mapping[str, str]
) -> None:
    """Write a new topic's config and assignment together (one multi-op). A topic that
    exists already raises TopicExistsError and writes nothing."""
    failure = create_topics(session, [(assignment, config)])[assignment.topic]
    if failure is not None:
        raise failure


def create_topics(
    session: ZkSession, new: Sequence[tuple[TopicAssignment, Mapping[str, str]]]
) -> dict[str, Exception | None]:
    """:func:`create_topic` for many topics, every round trip of a step in flight at
    once (a CreateTopics of a hundred topics costs three round trips, not four hundred):
    per topic None when written, TopicExistsError when it existed (nothing written), or
    the error that refused its multi-op."""
    session.kazoo.ensure_path(paths.CONFIG_TOPICS)
    session.kazoo.ensure_path(paths.BROKER_TOPICS)
    probes = [
        (assignment, config, session.kazoo.exists_async(paths.topic_config(assignment.topic)))
        for assignment, config in new
    ]
    pending = []
    for assignment, config, probe in probes:
        config_path = paths.topic_config(assignment.topic)
        data = codec.encode_entity_config(dict(config))
        write_config: Op = (
            CreateOp(config_path, data) if probe.get() is None else SetDataOp(config_path, data)
        )
        create = CreateOp(paths.topic(assignment.topic), codec.encode_topic(assignment))
        pending.append((assignment.topic, commit_async(session, [write_config, create])))
    out: dict[str, Exception | None] = {}
    for topic, result in pending:
        try:
            failure = first_failure(list(result.get()))
        except Exception as exc:  # the connection, not the multi-op: this topic failed
            failure = exc
        out[topic] = TopicExistsError(topic) if isinstance(failure, NodeExistsError) else failure
    return out


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


def get_topic_list(
    session: ZkSession, names: Sequence[str], watches: Mapping[str, Watch] | None = None
) -> dict[str, tuple[TopicAssignment, int] | codec.ZkDataError | None]:
    """:func:`get_topic` for many topics, all reads in flight at once (a controller
    loading or learning of a hundred topics), each with its watch from ``watches``: per
    topic its assignment and version, None when it does not exist, or the ZkDataError
    of a corrupt znode (the others are still answered)."""
    watches = watches or {}
    pending = [
        (topic, session.kazoo.get_async(paths.topic(topic), watches.get(topic))) for topic in names
    ]
    out: dict[str, tuple[TopicAssignment, int] | codec.ZkDataError | None] = {}
    for topic, result in pending:
        try:
            data, stat = result.get()
        except NoNodeError:
            # gone meanwhile: the single read arms an existence watch instead
            try:
                out[topic] = get_topic(session, topic, watches.get(topic))
            except codec.ZkDataError as exc:
                out[topic] = exc
            continue
        try:
            out[topic] = codec.decode_topic(topic, bytes(data)), int(stat.version)
        except codec.ZkDataError as exc:
            out[topic] = exc
    return out


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
