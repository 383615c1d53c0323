"""Partition states: /brokers/topics/<t>/partitions/<p>/state (blocking).

A state znode holds the leader, leader epoch, ISR and the epoch of the controller that
wrote it (zk.codec); its zkVersion is the partition epoch. Every write is conditional on
it, so the controller and a leader changing its ISR never overwrite each other unseen.

The controller writes fenced on its epoch (zk.transactions.fenced): first one multi-op
per topic holding all of that topic's partitions (with, for new partitions, their parent
znodes), every topic's in flight at once; a topic whose multi-op was refused (one of its
partitions conflicts, or a parent exists already: CreatePartitions) is written again one
multi-op per partition, so that each partition gets its own answer. A partition whose
write conflicts comes back as a StateConflictError in the results, while a fenced
controller gets ControllerMovedError. A leader writes its ISR without the epoch check (it
is not the controller).

Why per topic (in chunks of MULTI_PARTITIONS partitions): ZooKeeper logs every
transaction durably, and the controller creating 3,000 partitions used to send 6,000 of
them (a parent and a state per partition) and a broker's failure one per partition it
led or followed; a hundred topics' multi-ops carry the same writes in a hundred
transactions. ZooKeeper answers one session's requests in order, so a topic's first
chunk (which makes its /partitions) is applied before the others.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from protocol.values import TopicPartition
from zk import codec, paths
from zk.errors import StateConflictError
from zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, WriteResults
from zk.session import Watch, ZkSession
from zk.transactions import CreateOp, Op, SetDataOp, fenced

log = logging.getLogger(__name__)


def get_partition_states(
    session: ZkSession, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
    """The states of ``partitions`` that exist (an unreadable one is logged and left out)."""
    pending = [
        (tp, session.kazoo.get_async(paths.partition_state(tp.topic, tp.partition)))
        for tp in partitions
    ]
    out = {}
    for tp, result in pending:
        try:
            data, stat = result.get()
        except NoNodeError:
            continue
        try:
            out[tp] = codec.decode_partition_state(tp, bytes(data), int(stat.version))
        except codec.ZkDataError as exc:
            log.error("ignoring the state of %s: %s", tp, exc)
    return out


#: partitions in one multi-op at most: a request must stay well under ZooKeeper's
#: jute.maxbuffer (1 MB by default; a state write is about 150 bytes), or the server
#: drops the connection
MULTI_PARTITIONS = 200

#: a multi-op's key: the topic and which of its chunks of MULTI_PARTITIONS
Chunk = tuple[str, int]


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[Chunk, list[TopicPartition]]:
    out: dict[Chunk, list[TopicPartition]] = {}
    counts: dict[str, int] = {}
    for tp in sorted(partitions):
        n = counts.get(tp.topic, 0)
        counts[tp.topic] = n + 1
        out.setdefault((tp.topic, n // MULTI_PARTITIONS), []).append(tp)
    return out


def _per_topic(
    session: ZkSession,
    tps_by_topic: Mapping[Chunk, list[TopicPartition]],
    ops_by_topic: Mapping[Chunk, list[Op]],
    epoch_zk_version: int,
) -> tuple[dict[TopicPartition, Any], list[TopicPartition]]:
    """One fenced multi-op per topic, one operation per partition in ``tps_by_topic``'s
    order: each written partition's result (its ZnodeStat), and the partitions of the
    topics whose multi-op was refused."""
    results = fenced(session, ops_by_topic, epoch_zk_version)
    done: dict[TopicPartition, Any] = {}
    refused: list[TopicPartition] = []
    for chunk, result in results.items():
        tps = tps_by_topic[chunk]
        if isinstance(result, Exception):
            refused += tps
            continue
        per_op = result if isinstance(result, list) else [result]
        done.update(zip(tps, per_op, strict=True))
    return done, refused


def create_partition_states(
    session: ZkSession,
    states: Mapping[TopicPartition, LeaderAndIsr],
    controller_epoch: int,
    epoch_zk_version: int,
) -> WriteResults:
    """The controller creates new partitions' states; one that exists already is a
    StateConflictError."""
    by_topic = _by_topic(states)
    ops: dict[Chunk, list[Op]] = {}
    for chunk, tps in by_topic.items():
        topic, n = chunk
        # the first chunk of a topic makes its /partitions; the others find it there
        # (they are refused when the first is, and retried one by one)
        ops[chunk] = [CreateOp(paths.topic_partitions(topic))] if n == 0 else []
        for tp in tps:
            ops[chunk].append(CreateOp(paths.partition(tp.topic, tp.partition)))
            ops[chunk].append(
                CreateOp(
                    paths.partition_state(tp.topic, tp.partition),
                    codec.encode_partition_state(states[tp], controller_epoch),
                )
            )
    created, refused = _per_topic_create(session, by_topic, ops, epoch_zk_version)
    out: WriteResults = {tp: states[tp].with_zk_version(0) for tp in created}
    if refused:
        out.update(
            _create_one_by_one(
                session, {tp: states[tp] for tp in refused}, controller_epoch, epoch_zk_version
            )
        )
    return out


def _per_topic_create(
    session: ZkSession,
    tps_by_topic: Mapping[Chunk, list[TopicPartition]],
    ops_by_topic: Mapping[Chunk, list[Op]],
    epoch_zk_version: int,
) -> tuple[list[TopicPartition], list[TopicPartition]]:
    """One fenced multi-op per topic: the partitions created, and those of the topics
    whose multi-op was refused."""
    results = fenced(session, ops_by_topic, epoch_zk_version)
    created: list[TopicPartition] = []
    refused: list[TopicPartition] = []
    for chunk, result in results.items():
        (refused if isinstance(result, Exception) else created).extend(tps_by_topic[chunk])
    return created, refused


def _create_one_by_one(
    session: ZkSession,
    states: Mapping[TopicPartition, LeaderAndIsr],
    controller_epoch: int,
    epoch_zk_version: int,
) -> WriteResults:
    """One multi-op per partition: each partition's own answer."""
    _ensure_partition_parents(session, states)
    ops = {
        tp: [
            CreateOp(
                paths.partition_state(tp.topic, tp.partition),
                codec.encode_partition_state(lai, controller_epoch),
            )
        ]
        for tp, lai in states.items()
    }
    out: WriteResults = {}
    for tp, res in fenced(session, ops, epoch_zk_version).items():
        if isinstance(res, Exception):
            out[tp] = StateConflictError(str(tp)) if isinstance(res, NodeExistsError) else res
        else:
            out[tp] = states[tp].with_zk_version(0)
    return out


def _ensure_partition_parents(session: ZkSession, partitions: Iterable[TopicPartition]) -> None:
    """Create ``.../partitions`` once per topic, then every ``.../partitions/<p>`` with
    all creates in flight at once. Structural, empty znodes: harmless for a zombie to
    create, so they are not epoch-checked; the state znodes below them are."""
    tps = list(partitions)
    for topic in sorted({tp.topic for tp in tps}):
        session.kazoo.ensure_path(paths.topic_partitions(topic))
    pending = [session.kazoo.create_async(paths.partition(tp.topic, tp.partition)) for tp in tps]
    for result in pending:
        with contextlib.suppress(NodeExistsError):
            result.get()


def update_partition_states(
    session: ZkSession,
    states: Mapping[TopicPartition, LeaderAndIsr],
    controller_epoch: int,
    epoch_zk_version: int,
) -> WriteResults:
    """The controller rewrites states, each conditionally on its ``zk_version``."""
    by_topic = _by_topic(states)
    ops: dict[Chunk, list[Op]] = {
        chunk: [
            SetDataOp(
                paths.partition_state(tp.topic, tp.partition),
                codec.encode_partition_state(states[tp], controller_epoch),
                states[tp].zk_version,
            )
            for tp in tps
        ]
        for chunk, tps in by_topic.items()
    }
    written, refused = _per_topic(session, by_topic, ops, epoch_zk_version)
    out: WriteResults = {
        tp: states[tp].with_zk_version(int(stat.version)) for tp, stat in written.items()
    }
    if refused:
        out.update(
            _update_one_by_one(
                session, {tp: states[tp] for tp in refused}, controller_epoch, epoch_zk_version
            )
        )
    return out


def _update_one_by_one(
    session: ZkSession,
    states: Mapping[TopicPartition, LeaderAndIsr],
    controller_epoch: int,
    epoch_zk_version: int,
) -> WriteResults:
    """One multi-op per partition: each partition's own answer."""
    ops = {
        tp: [
            SetDataOp(
                paths.partition_state(tp.topic, tp.partition),
                codec.encode_partition_state(lai, controller_epoch),
                lai.zk_version,
            )
        ]
        for tp, lai in states.items()
    }
    out: WriteResults = {}
    for tp, res in fenced(session, ops, epoch_zk_version).items():
        if isinstance(res, BadVersionError | NoNodeError):
            out[tp] = StateConflictError(f"{tp}: {type(res).__name__}")
        elif isinstance(res, Exception):
            out[tp] = res
        else:
            out[tp] = states[tp].with_zk_version(int(res.version))  # res: the ZnodeStat
    return out


def update_leader_and_isr(
    session: ZkSession, tp: TopicPartition, lai: LeaderAndIsr, controller_epoch: int
) -> LeaderAndIsr:
    """A leader's write of its new ISR (ZooKeeper mode): set the partition state
    conditionally on ``lai.zk_version``, without the controller's epoch check (a broker
    is not the controller). Returns the state with its new zkVersion.

    Raises StateConflictError when the znode is at another version or gone: the
    controller changed it. A version mismatch whose znode already holds exactly this
    state is our own earlier write that went through before a lost connection made kazoo
    send it again (Kafka's checkLeaderAndIsrZkData): success."""
    path = paths.partition_state(tp.topic, tp.partition)
    data = codec.encode_partition_state(lai, controller_epoch)
    try:
        stat = session.kazoo.set(path, data, version=lai.zk_version)
    except NoNodeError:
        raise StateConflictError(f"{tp}: no partition state") from None
    except BadVersionError:
        already = _state_if_equal(session, tp, path, lai, controller_epoch)
        if already is None:
            raise StateConflictError(f"{tp}: not at zkVersion {lai.zk_version}") from None
        return already
    return lai.with_zk_version(int(stat.version))


def _state_if_equal(
    session: ZkSession, tp: TopicPartition, path: str, lai: LeaderAndIsr, controller_epoch: int
) -> LeaderAndIsr | None:
    """The partition state at ``path`` if it is ``lai`` written by ``controller_epoch``
    (any zkVersion), else None."""
    found = session.get(path)
    if found is None:
        return None
    try:
        st = codec.decode_partition_state(tp, found[0], int(found[1].version))
    except codec.ZkDataError:
        return None
    now = st.leader_and_isr
    wanted = (lai.leader, lai.leader_epoch, lai.isr, controller_epoch)
    same = (now.leader, now.leader_epoch, now.isr, st.controller_epoch) == wanted
    return now if same else None


def watch_partition_state(
    session: ZkSession, tp: TopicPartition, watch: Watch
) -> LeaderIsrAndControllerEpoch | None:
    """A partition's state, with ``watch`` armed on its znode (a reassigning partition's
    ISR is followed this way)."""
    found = session.get(paths.partition_state(tp.topic, tp.partition), watch)
    if found is None:
        return None
    return codec.decode_partition_state(tp, found[0], int(found[1].version))
