"""What a set of log directories holds, read without changing a byte.

A broker's log directory may belong to a running broker. Opening it with storage's Log or
LogManager would run recovery (and truncate a tail that is still being appended), so
this module only lists names (with :mod:`storage.reader`, storage's read-only side) and
reads the checkpoint files; :mod:`.segments` reads the segments themselves. What counts
(docs/architecture.md, "On disk"):

- ``<topic>-<partition>/`` directories, found by :func:`storage.names.parse_partition_dir`,
  which already leaves out ``-delete`` (deleted, waiting for removal) and ``-future``
  directories;
- ``<20 digits>.log`` segments; ``.log.deleted`` (retention removed it), ``.log.cleaned``
  and ``.log.swap`` (compaction in progress) are not ``.log`` names and are skipped;
- the readable range of a partition: from its entry in ``log-start-offset-checkpoint``
  (or its first segment's base offset) up to its entry in
  ``replication-offset-checkpoint``, the high watermark. Without a high watermark nothing
  is known to be committed, and nothing is read.

Several directories may hold replicas of the same partition (one dir per broker of a
cluster): each offset is then read once, from the replica with the highest high
watermark, which holds every committed offset the others hold.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple

from protocol.values import TopicPartition
from storage.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
)
from storage.names import parse_partition_dir
from storage.reader import segment_files


class Replica(NamedTuple):
    """One partition's log in one log directory, and its readable offsets."""

    tp: TopicPartition
    #: the partition's own directory, ``<log dir>/<topic>-<partition>``
    path: str
    #: base offsets of its segments, ascending
    segments: tuple[int, ...]
    log_start_offset: int
    high_watermark: int


def replicas_in(log_dir: str) -> list[Replica]:
    """The partitions of one log directory (a missing directory holds none)."""
    if not os.path.isdir(log_dir):
        return []
    starts = read_offset_checkpoint(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT))
    watermarks = read_offset_checkpoint(os.path.join(log_dir, REPLICATION_OFFSET_CHECKPOINT))
    found = []
    for name in sorted(os.listdir(log_dir)):
        tp = parse_partition_dir(name)
        path = os.path.join(log_dir, name)
        if tp is None or not os.path.isdir(path):
            continue
        bases = tuple(base for base, _ in segment_files(path))
        log_start = max(starts.get(tp, 0), bases[0] if bases else 0)
        found.append(Replica(tp, path, bases, log_start, watermarks.get(tp, log_start)))
    return found


def choose_replicas(replicas: Iterable[Replica]) -> dict[TopicPartition, Replica]:
    """One replica per partition: the one with the highest high watermark (the first
    listed among equals), so every committed offset is read exactly once."""
    chosen: dict[TopicPartition, Replica] = {}
    for replica in replicas:
        best = chosen.get(replica.tp)
        if best is None or replica.high_watermark > best.high_watermark:
            chosen[replica.tp] = replica
    return chosen


def discover(log_dirs: Iterable[str]) -> dict[TopicPartition, Replica]:
    """Every partition found in ``log_dirs``, one replica each."""
    return choose_replicas(r for d in log_dirs for r in replicas_in(d))
