"""ISR change notifications: /isr_change_notification/isr_change_<seq> (blocking).

A leader that changed ISRs writes the partitions in one sequential notification
(broker.isr_zk batches them); the controller, which watches the parent, reads each one,
refreshes those partitions' states, tells every broker, and deletes the notifications,
fenced on its epoch (one per multi-op: one deleted meanwhile fails alone and is ignored).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from protocol.values import TopicPartition
from zk import codec, paths
from zk.session import Watch, ZkSession
from zk.transactions import DeleteOp, fenced


def get_isr_change_notifications(session: ZkSession, watch: Watch | None = None) -> list[str]:
    return [
        c
        for c in session.children(paths.ISR_CHANGE_NOTIFICATION, watch)
        if c.startswith(paths.ISR_CHANGE_PREFIX)
    ]


def read_isr_change_notification(session: ZkSession, name: str) -> list[TopicPartition]:
    found = session.get(f"{paths.ISR_CHANGE_NOTIFICATION}/{name}")
    return [] if found is None else codec.decode_isr_change(found[0])


def delete_isr_change_notifications(
    session: ZkSession, names: Sequence[str], epoch_zk_version: int
) -> None:
    if names:
        ops = {n: [DeleteOp(f"{paths.ISR_CHANGE_NOTIFICATION}/{n}")] for n in names}
        fenced(session, ops, epoch_zk_version)


def propagate_isr_change(session: ZkSession, partitions: Iterable[TopicPartition]) -> str:
    """Used by a leader that changed ISRs: queue a notification for the controller."""
    session.kazoo.ensure_path(paths.ISR_CHANGE_NOTIFICATION)
    return str(
        session.kazoo.create(
            f"{paths.ISR_CHANGE_NOTIFICATION}/{paths.ISR_CHANGE_PREFIX}",
            codec.encode_isr_change(partitions),
            sequence=True,
        )
    )
