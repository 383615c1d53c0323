"""Partition states: /brokers/topics/<t>/partitions/<p>/state (blocking).

A state znode holds the leader, leader epoch, ISR and the epoch of the controller that
wrote it (zk.codec); its zkVersion is the partition epoch. Every write is conditional on
it, so the controller and a leader changing its ISR never overwrite each other unseen.

The controller writes fenced on its epoch (zk.transactions.fenced), one multi-op per
partition, all in flight at once; a partition whose write conflicts comes back as a
StateConflictError in the results, while a fenced controller gets ControllerMovedError.
A leader writes its ISR without the epoch check (it is not the controller).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from protocol.values import TopicPartition
from zk import codec, paths
from zk.errors import StateConflictError
from zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, WriteResults
from zk.session import Watch, ZkSession
from zk.transactions import CreateOp, SetDataOp, fenced

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


def create_partition_states(
    session: ZkSession,
    states: Mapping[TopicPartition, LeaderAndIsr],
    controller_epoch: int,
    epoch_zk_version: int,
) -> WriteResults:
    """The controller creates new partitions' states; one that exists already is a
    StateConflictError."""
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
    topics = sorted({tp.topic for tp in tps})
    # /brokers/topics/<t> exists (the controller read it): its /partitions child is
    # created directly, every topic's in flight at once rather than one ensure_path each.
    # A topic deleted meanwhile is not brought back: its state creates fail, per partition.
    for result in [session.kazoo.create_async(paths.topic_partitions(t)) for t in topics]:
        with contextlib.suppress(NodeExistsError, NoNodeError):
            result.get()
    pending = [session.kazoo.create_async(paths.partition(tp.topic, tp.partition)) for tp in tps]
    for result in pending:
        with contextlib.suppress(NodeExistsError, NoNodeError):
            result.get()


def update_partition_states(
    session: ZkSession,
    states: Mapping[TopicPartition, LeaderAndIsr],
    controller_epoch: int,
    epoch_zk_version: int,
) -> WriteResults:
    """The controller rewrites states, each conditionally on its ``zk_version``."""
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
