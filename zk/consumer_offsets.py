"""Offsets of the ZooKeeper-era consumers: /consumers/<group>/offsets/<topic>/<partition>.

OffsetCommit v0 and OffsetFetch v0 predate the group coordinator: their offsets live in
ZooKeeper, one persistent znode per partition holding the offset as decimal text (no
metadata, no timestamps). Kafka 3.x in ZooKeeper mode still reads and writes them there,
beside (and independent of) the offsets __consumer_offsets holds for v1+. Blocking calls
(the facade runs them on a thread); each call handles all partitions of one request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kazoo.exceptions import NoNodeError

from protocol.values import TopicPartition
from zk import paths
from zk.session import ZkSession


def set_consumer_offsets(
    session: ZkSession, group: str, offsets: Mapping[TopicPartition, int]
) -> None:
    """Write each offset, creating its znode (and parents) when missing."""
    kazoo = session.kazoo
    for tp, offset in offsets.items():
        path = paths.consumer_offset(group, tp.topic, tp.partition)
        data = str(offset).encode()
        try:
            kazoo.set(path, data)
        except NoNodeError:
            kazoo.create(path, data, makepath=True)


def get_consumer_offsets(
    session: ZkSession, group: str, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, int | None]:
    """The stored offset of each partition; None for a partition without one (or whose
    znode does not hold a number)."""
    found: dict[TopicPartition, int | None] = {}
    for tp in partitions:
        try:
            data, _ = session.kazoo.get(paths.consumer_offset(group, tp.topic, tp.partition))
        except NoNodeError:
            found[tp] = None
            continue
        text = bytes(data or b"").decode("utf-8", "replace").strip()
        found[tp] = int(text) if text.lstrip("-").isdigit() else None
    return found
