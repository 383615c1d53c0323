"""Partition: one partition hosted by this broker, as the controller last described it.

A Partition exists for every partition this broker holds a replica of (LeaderAndIsr
created it). It carries the controller's view -- leader, leader epoch, ISR, replicas,
partition epoch -- and, once the replica is local, the partition's :class:`storage.Log`.
The ReplicaManager owns every Partition and is the only caller.

This module holds the role changes LeaderAndIsr and StopReplica make; the class is
assembled from one module per side of the work, each on the common core:

==============================  ==========================================================
``broker.partition_core``       the controller's view, the log, epoch fencing, the high
                                watermark (:class:`PartitionError` and the offsets rule)
``broker.partition_isr``        as leader: follower fetch states, ISR expansion/shrinkage
``broker.partition_follower``   as follower: the replica fetcher's appends and truncation
``broker.partition_reads``      as leader: Fetch, ListOffsets, OffsetForLeaderEpoch
``broker.partition_writes``     as leader: Produce appends, DeleteRecords
==============================  ==========================================================

The sides are base classes, not collaborators, so that a produce or a fetch calls one
method on the Partition, as before the split, with no forwarding call in between.

Not safe across tasks beyond the event loop: every method runs on the loop's thread.
"""

from __future__ import annotations

import logging
import uuid

from broker import isr as isr_rules
from broker.isr import IsrState
from broker.partition_core import PartitionError as PartitionError
from broker.partition_core import PartitionStateLike as PartitionStateLike
from broker.partition_core import leader_epoch_error as leader_epoch_error
from broker.partition_core import topic_id_text as topic_id_text
from broker.partition_follower import FollowerLog
from broker.partition_isr import LeaderIsr
from broker.partition_reads import LeaderReads
from broker.partition_writes import LeaderWrites
from protocol.primitives import ZERO_UUID
from storage import Log

log = logging.getLogger(__name__)


class Partition(LeaderIsr, FollowerLog, LeaderReads, LeaderWrites):
    """A hosted partition: the role changes here, the rest in its bases (see above)."""

    def _apply(self, state: PartitionStateLike, topic_id: uuid.UUID | None) -> None:
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.controller_epoch = state.controller_epoch
        self._isr_state = IsrState(tuple(state.isr))  # a write in flight no longer applies
        self.replicas = tuple(state.replicas)
        if topic_id is not None and topic_id != ZERO_UUID:
            self.topic_id = topic_id

    def _ensure_log(self, topic_id: uuid.UUID | None) -> Log:
        """Open or create the local log (StorageError for a different topic id)."""
        if self.log is None:
            self.log = self._log_manager.get_or_create_log(self.tp, topic_id_text(topic_id))
        return self.log

    def make_leader(self, state: PartitionStateLike, topic_id: uuid.UUID | None) -> bool:
        """Become leader at ``state.leader_epoch``: open the log and start the epoch at
        the log end in the leader-epoch cache. Returns whether this broker was not
        already leading (Kafka's isNewLeader).

        Follower states restart (``broker.isr.reset_for_leadership``): a new leader
        knows no follower's offsets yet, and counts the ISR members as caught up now; a
        leader continuing into a new epoch keeps what it knew of the replicas still
        assigned. The high watermark is never lowered; it moves up at once when the ISR
        is this broker alone.

        No disk work when the log is already open (the ReplicaManager opens it in a
        worker thread first): the epoch changes the cache in memory, and the caller
        writes the checkpoint off the loop (``Log.flush_epoch_cache``)."""
        was_leader = self.is_leader
        lg = self._ensure_log(topic_id if topic_id is not None else self.topic_id)
        self._apply(state, topic_id)
        lg.epoch_cache.assign(state.leader_epoch, lg.log_end_offset)
        self.leader_epoch_start_offset = lg.log_end_offset
        now_ms = self._clock.monotonic_ms()
        self.followers = {
            replica: isr_rules.reset_for_leadership(
                self.followers.get(replica),
                new_leader=not was_leader,
                in_isr=replica in self.isr,
                now_ms=now_ms,
            )
            for replica in self.replicas
            if replica != self.local_broker_id
        }
        self.maybe_increment_high_watermark()
        log.info(
            "%s: leader at epoch %d from offset %d, ISR %s",
            self.tp,
            self.leader_epoch,
            self.leader_epoch_start_offset,
            list(self.isr),
        )
        return not was_leader

    def make_follower(self, state: PartitionStateLike, topic_id: uuid.UUID | None) -> bool:
        """Follow ``state.leader``: open the log and record the leader and epoch. Nothing
        is truncated here: the replica fetcher finds where this log and the leader's
        agree (OffsetForLeaderEpoch) before it fetches, and cuts there."""
        changed = self.leader_id != state.leader
        self._ensure_log(topic_id if topic_id is not None else self.topic_id)
        self._apply(state, topic_id)
        self.leader_epoch_start_offset = -1
        self.followers = {}  # a follower tracks nobody
        log.info("%s: follower of %d at epoch %d", self.tp, self.leader_id, self.leader_epoch)
        return changed

    def stop_leading(self) -> None:
        """StopReplica without deletion: keep the log, serve nothing as leader."""
        self.leader_id = -1
        self.leader_epoch_start_offset = -1
        self.followers = {}
        self._isr_state = IsrState(self.isr)
