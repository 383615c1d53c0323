"""TopicDeletionManager: deleting a topic from ZooKeeper, every broker's metadata and disks.

A deleted topic lives in three places, and all three must forget it as one operation that
survives broker and controller failures: its znodes (/brokers/topics/<t> with its
partition states, /config/topics/<t>), every broker's metadata cache, and the log
directories of its replicas. DeleteTopics only queues the topic (/admin/delete_topics/<t>);
the controller drives the rest through the two state machines:

1. ``enqueue``: the topic joins ``ctx.topics_to_delete``. From then on the controller
   elects no leader for it, brings none of its replicas online and ignores changes to its
   partitions; the brokers learn of it through UpdateMetadata with leader -2, which drops
   it from their caches (so Metadata stops listing it at once).
2. ``_on_topic_deletion`` (once per topic): partitions Offline, then NonExistent; every
   live broker gets that UpdateMetadata.
3. ``_on_partition_deletion``: replicas on live brokers go Offline (StopReplica, out of
   the ISR), then ReplicaDeletionStarted (StopReplica with delete=true: the broker stops
   its fetchers, drops the partition and renames the log directory for its delete-logs
   task). Replicas on dead brokers go ReplicaDeletionIneligible and the topic waits.
4. The brokers' answers: success moves a replica to ReplicaDeletionSuccessful
   (``complete_replica_deletion``), an error or the broker's death to
   ReplicaDeletionIneligible (``fail_replica_deletion``).
5. ``_resume`` (after every step): a topic whose replicas all succeeded is completed
   (``_complete_delete_topic``: its partition-modification watch muted, its znodes
   deleted in one multi-op fenced by the controller epoch, the context forgets it);
   ineligible replicas are retried (back to Offline) once nothing is in flight; an
   eligible topic starts (or restarts) at step 2.

A topic is ineligible while one of its replicas' brokers is down or one of its
partitions is being reassigned; ``resume_for_topics`` clears that when the broker
returns or the reassignment finishes. A new controller rebuilds all of this from
/admin/delete_topics (``init``, ``try_topic_deletion``): replicas it finds on dead
brokers start Ineligible, the others are deleted again (a repeated StopReplica is
harmless: a broker that no longer has the partition answers success).

Side effects go through a small DeletionClient (ZooKeeper deletes, muting a watch,
sending requests), so the decisions here are tested with a fake one. With
``delete.topic.enable`` false nothing is deleted: queued entries are removed from
/admin/delete_topics.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from typing import Protocol

from controller.context import ControllerContext
from controller.model import PartitionReplica
from controller.partition_state_machine import PartitionStateMachine
from controller.replica_state_machine import ReplicaStateMachine
from controller.request_batch import ControllerRequestBatch
from controller.states import REPLICA_TRANSITIONS, PartitionState, ReplicaState
from protocol.errors import ErrorCode
from protocol.values import TopicPartition

log = logging.getLogger(__name__)

R = ReplicaState


class DeletionClient(Protocol):
    """The side effects of deletion (the controller implements it)."""

    async def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        """Delete /brokers/topics/<t> (and under it), /config/topics/<t> and
        /admin/delete_topics/<t>, fenced by the controller epoch's zkVersion."""

    async def delete_topic_deletions(self, topics: Collection[str], epoch_zk_version: int) -> None:
        """Delete /admin/delete_topics/<t> entries, fenced likewise."""

    def mute_partition_modifications(self, topic: str) -> None:
        """Stop reacting to changes of the topic's assignment znode."""

    def send_metadata_update(self, partitions: Collection[TopicPartition]) -> None:
        """UpdateMetadata for ``partitions`` to every live broker."""

    def send(self, batch: ControllerRequestBatch) -> None:
        """Send the requests the state machines queued."""


def topics_ineligible_at_failover(ctx: ControllerContext, queued: Iterable[str]) -> set[str]:
    """Queued topics a new controller cannot delete yet (pure): a replica on a broker
    that is not live, or a partition being reassigned."""
    out = set()
    for topic in queued:
        offline = any(
            not ctx.is_replica_online(pr.replica, include_shutting_down=True)
            for pr in ctx.replicas_for_topic(topic)
        )
        if offline or ctx.is_topic_being_reassigned(topic):
            out.add(topic)
    return out


def deletion_answers(
    ctx: ControllerContext,
    broker_id: int,
    errors: Mapping[TopicPartition, int],
    deleted: Collection[TopicPartition],
    request_error: int = ErrorCode.NONE,
) -> tuple[list[PartitionReplica], list[PartitionReplica]]:
    """Read a StopReplica answer for deletion (pure): ``(failed, succeeded)`` replicas of
    ``broker_id``, among the partitions the request asked to delete whose topic's
    deletion has started. A refusal of the whole request (``request_error``) fails
    them all; anything else the request carried (a plain stop, a reassignment's
    removal) is not deletion's business."""
    failed: list[PartitionReplica] = []
    succeeded: list[PartitionReplica] = []
    for tp in sorted(deleted):
        if tp.topic not in ctx.topics_with_deletion_started:
            continue
        code = request_error if request_error != ErrorCode.NONE else errors.get(tp)
        if code is None:
            continue  # not answered for: nothing to conclude
        (succeeded if code == ErrorCode.NONE else failed).append(PartitionReplica(tp, broker_id))
    return failed, succeeded


class TopicDeletionManager:
    """Kafka's TopicDeletionManager. Runs on the controller's event task only."""

    def __init__(
        self,
        ctx: ControllerContext,
        replica_sm: ReplicaStateMachine,
        partition_sm: PartitionStateMachine,
        client: DeletionClient,
        enabled: bool = True,
    ) -> None:
        self.ctx = ctx
        self.replica_sm = replica_sm
        self.partition_sm = partition_sm
        self.client = client
        #: delete.topic.enable
        self.enabled = enabled

    # -- entry points -------------------------------------------------------------------------

    async def init(self, queued: Collection[str], ineligible: Collection[str]) -> None:
        """After failover, before the first UpdateMetadata: the queued topics (and which of
        them cannot proceed yet); with deletion disabled the queue is cleared instead."""
        if not self.enabled:
            if queued:
                log.info("topic deletion is disabled: dropping requests for %s", sorted(queued))
                await self.client.delete_topic_deletions(sorted(queued), self.ctx.epoch_zk_version)
            return
        self.ctx.topics_to_delete |= set(queued)
        self.ctx.topics_ineligible_for_deletion |= set(ineligible) & self.ctx.topics_to_delete

    async def try_topic_deletion(self) -> None:
        """After failover, once the state machines have started."""
        if self.enabled:
            await self._resume_and_send()

    async def enqueue(self, topics: Collection[str], ineligible: Collection[str] = ()) -> None:
        """Topics newly queued under /admin/delete_topics (existing ones only); those in
        ``ineligible`` (a partition being reassigned) are queued halted."""
        if not self.enabled or not topics:
            return
        self.ctx.topics_to_delete |= set(topics)
        self.mark_ineligible(set(ineligible) & set(topics), "reassignment in progress")
        await self._resume_and_send()

    async def resume_for_topics(self, topics: Collection[str]) -> None:
        """An obstacle went away (a broker returned, a reassignment finished)."""
        if not self.enabled:
            return
        resumed = set(topics) & self.ctx.topics_to_delete
        if resumed:
            self.ctx.topics_ineligible_for_deletion -= resumed
            await self._resume_and_send()

    async def fail_replica_deletion(self, replicas: Iterable[PartitionReplica]) -> None:
        """Replicas that could not be deleted (an error, or their broker died)."""
        if not self.enabled:
            return
        batch = ControllerRequestBatch()
        await self._fail(replicas, batch)
        await self._resume(batch)
        self.client.send(batch)

    async def complete_replica_deletion(self, replicas: Iterable[PartitionReplica]) -> None:
        """Replicas whose broker answered StopReplica(delete=true) without error."""
        if not self.enabled:
            return
        batch = ControllerRequestBatch()
        done = [
            pr
            for pr in replicas
            if self.ctx.is_topic_queued_for_deletion(pr.tp.topic)
            and self.ctx.replica_state(pr) is R.DELETION_STARTED
        ]
        await self.replica_sm.handle_state_changes(done, R.DELETION_SUCCESSFUL, batch)
        await self._resume(batch)
        self.client.send(batch)

    def mark_ineligible(self, topics: Iterable[str], reason: str) -> None:
        halted = set(topics) & self.ctx.topics_to_delete
        if self.enabled and halted - self.ctx.topics_ineligible_for_deletion:
            log.info("deletion of %s halted: %s", sorted(halted), reason)
        if self.enabled:
            self.ctx.topics_ineligible_for_deletion |= halted

    def is_eligible(self, topic: str) -> bool:
        """Queued, nothing in flight, and no obstacle."""
        return (
            self.enabled
            and self.ctx.is_topic_queued_for_deletion(topic)
            and not self.ctx.is_any_replica_in_state(topic, R.DELETION_STARTED)
            and topic not in self.ctx.topics_ineligible_for_deletion
        )

    # -- the steps ----------------------------------------------------------------------------

    async def _resume_and_send(self) -> None:
        batch = ControllerRequestBatch()
        await self._resume(batch)
        self.client.send(batch)

    async def _fail(
        self, replicas: Iterable[PartitionReplica], batch: ControllerRequestBatch
    ) -> None:
        failed = [pr for pr in replicas if self.ctx.is_topic_queued_for_deletion(pr.tp.topic)]
        if not failed:
            return
        # only replicas whose deletion was under way change state; the topic waits anyway
        movable = [pr for pr in failed if self._may_become(pr, R.DELETION_INELIGIBLE)]
        await self.replica_sm.handle_state_changes(movable, R.DELETION_INELIGIBLE, batch)
        self.mark_ineligible({pr.tp.topic for pr in failed}, "replica deletion failed")

    async def _resume(self, batch: ControllerRequestBatch) -> None:
        """Kafka's resumeDeletions: complete, retry or (re)start each queued topic."""
        retry: set[str] = set()
        start: set[str] = set()
        for topic in sorted(self.ctx.topics_to_delete):
            if self.ctx.are_all_replicas_in_state(topic, R.DELETION_SUCCESSFUL):
                await self._complete_delete_topic(topic)
                log.info("deletion of topic %s completed", topic)
                continue
            if not self.ctx.is_any_replica_in_state(
                topic, R.DELETION_STARTED
            ) and self.ctx.is_any_replica_in_state(topic, R.DELETION_INELIGIBLE):
                retry.add(topic)
            if self.is_eligible(topic):
                log.info("deletion of topic %s (re)started", topic)
                start.add(topic)
        if retry:
            await self._retry_ineligible(retry, batch)
        if start:
            await self._on_topic_deletion(start, batch)

    async def _retry_ineligible(self, topics: set[str], batch: ControllerRequestBatch) -> None:
        """Ineligible replicas go back to Offline, to be deleted again."""
        failed = [
            pr
            for t in sorted(topics)
            for pr in self.ctx.replicas_in_state(t, R.DELETION_INELIGIBLE)
        ]
        log.debug("retrying deletion of %s", [str(pr) for pr in failed])
        await self.replica_sm.handle_state_changes(failed, R.OFFLINE, batch)

    async def _complete_delete_topic(self, topic: str) -> None:
        """Every replica is deleted: forget the topic in ZooKeeper, then in the context.
        ZooKeeper goes first so that a failed write leaves the topic to be completed
        again (by this controller's next resume, or its successor's)."""
        self.client.mute_partition_modifications(topic)
        await self.client.delete_topic(topic, self.ctx.epoch_zk_version)
        deleted = self.ctx.replicas_in_state(topic, R.DELETION_SUCCESSFUL)
        await self.replica_sm.handle_state_changes(
            deleted, R.NON_EXISTENT, ControllerRequestBatch()
        )
        self.ctx.remove_topic(topic)

    async def _on_topic_deletion(self, topics: set[str], batch: ControllerRequestBatch) -> None:
        """Partitions of topics not started before go Offline then NonExistent; every
        broker is told (leader -2); then the replicas are deleted."""
        unseen = sorted(topics - self.ctx.topics_with_deletion_started)
        if unseen:
            partitions = [tp for t in unseen for tp in self.ctx.partitions_for_topic(t)]
            await self.partition_sm.handle_state_changes(partitions, PartitionState.OFFLINE, batch)
            await self.partition_sm.handle_state_changes(
                partitions, PartitionState.NON_EXISTENT, batch
            )
            self.ctx.topics_with_deletion_started |= set(unseen)
        self.client.send_metadata_update(
            [tp for t in sorted(topics) for tp in self.ctx.partitions_for_topic(t)]
        )
        await self._on_partition_deletion(topics, batch)

    async def _on_partition_deletion(self, topics: set[str], batch: ControllerRequestBatch) -> None:
        """Replicas on dead brokers: Ineligible (the topic waits for them). The others not
        deleted yet: Offline (followers stop fetching), then DeletionStarted
        (StopReplica with delete=true)."""
        dead: list[PartitionReplica] = []
        retry: list[PartitionReplica] = []
        halted: set[str] = set()
        for topic in sorted(topics):
            for pr in self.ctx.replicas_for_topic(topic):
                if not self.ctx.is_replica_online(pr.replica, include_shutting_down=True):
                    dead.append(pr)
                    halted.add(topic)
                elif self.ctx.replica_state(pr) is not R.DELETION_SUCCESSFUL:
                    retry.append(pr)
        movable = [pr for pr in dead if self._may_become(pr, R.DELETION_INELIGIBLE)]
        await self.replica_sm.handle_state_changes(movable, R.DELETION_INELIGIBLE, batch)
        await self.replica_sm.handle_state_changes(retry, R.OFFLINE, batch)
        await self.replica_sm.handle_state_changes(retry, R.DELETION_STARTED, batch)
        if halted:
            self.mark_ineligible(halted, "replicas on brokers that are down")

    def _may_become(self, pr: PartitionReplica, target: ReplicaState) -> bool:
        return self.ctx.replica_state(pr) in REPLICA_TRANSITIONS[target]
