"""Topic changes: new topics, new partitions, and the queue of topics to delete.

Three kinds of znode tell the controller about topics, each with its watch:

- the children of /brokers/topics (``on_topic_change``): a name that appeared is read
  (its assignment, with a watch of its own) and its partitions and replicas go New ->
  Online, which elects their first leaders and sends LeaderAndIsr and UpdateMetadata; a
  name that vanished is forgotten;
- a topic's assignment znode, /brokers/topics/<t> (``on_partition_modifications``):
  partitions added by CreatePartitions go online the same way. A changed replica list
  of an existing partition is not acted on (replicas move through a reassignment) and
  a changed topic id is refused (ids are never reused);
- the children of /admin/delete_topics (``on_topic_deletion``): newly queued topics go
  to the TopicDeletionManager (controller.topic_deletion), which this module owns and
  serves as its DeletionClient (znode deletes, muting a topic's watch, requests).
  Entries naming unknown topics are removed, as Kafka does; with delete.topic.enable
  false every entry is removed and nothing deleted.

Kazoo keeps a path's watchers in a set, so each topic has one watch callback, reused
every time the watch is re-armed; muting a topic (its deletion completing) drops the
callback from ``_topic_watches``, and a later firing of the armed watch is ignored.

The StopReplica answers (``on_stop_replica_response``) are read here as well: those
for partitions being deleted move their replicas on in the deletion.

Runs on the controller's event task only, except the watch callbacks (kazoo's thread;
they only enqueue).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection

from kazoo.protocol.states import EventType, WatchedEvent

from controller import events as ev
from controller.parts import ControllerHandler, ControllerParts
from controller.request_batch import ControllerRequestBatch
from controller.request_bodies import answered, stop_replica_errors
from controller.states import PartitionState, ReplicaState
from controller.topic_deletion import TopicDeletionManager, deletion_answers
from protocol.errors import ErrorCode, error_name
from protocol.values import TopicPartition
from zk.codec import ZkDataError
from zk.model import TopicAssignment

log = logging.getLogger(__name__)


class TopicChanges(ControllerHandler):
    """The controller's handlers of topic creation, partition addition and deletion."""

    def __init__(self, parts: ControllerParts, delete_topic_enable: bool) -> None:
        super().__init__(parts)
        self.deletion = TopicDeletionManager(
            parts.ctx,
            parts.replica_sm,
            parts.partition_sm,
            _DeletionClient(self),
            delete_topic_enable,
        )
        #: per-topic watch callbacks; kazoo keeps watchers in a set, so reuse one per topic
        self._topic_watches: dict[str, Callable[[WatchedEvent], None]] = {}

    # -- watches (kazoo's thread: enqueue only) -----------------------------------------------

    def topics_watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self.events.put_threadsafe(ev.TopicChange())

    def deletions_watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self.events.put_threadsafe(ev.TopicDeletion())

    def _topic_watch(self, topic: str) -> Callable[[WatchedEvent], None]:
        if topic not in self._topic_watches:

            def on_topic(event: WatchedEvent) -> None:
                # a muted watch (its topic being deleted) is no longer the topic's
                if event.type == EventType.CHANGED and self._topic_watches.get(topic) is on_topic:
                    self.events.put_threadsafe(ev.PartitionModifications(topic))

            self._topic_watches[topic] = on_topic
        return self._topic_watches[topic]

    async def arm_watch(self) -> None:
        """Watch /brokers/topics (a new controller, before it loads its context)."""
        await self.zk.get_topics(self.topics_watch)

    def mute(self, topic: str) -> None:
        """Stop acting on changes of ``topic``'s assignment znode."""
        # the watch stays armed in ZooKeeper but its callback is no longer the topic's
        self._topic_watches.pop(topic, None)

    # -- reading topics -------------------------------------------------------------------------

    async def read_topic(self, topic: str) -> TopicAssignment | None:
        """Read a topic's assignment and (re)arm its watch; a corrupt znode is skipped."""
        try:
            found = await self.zk.get_topic(topic, self._topic_watch(topic))
        except ZkDataError as exc:
            log.error("ignoring topic %s: %s", topic, exc)
            return None
        return None if found is None else found[0]

    async def read_topics(self, topics: list[str]) -> dict[str, TopicAssignment]:
        """:meth:`read_topic` for many topics, the reads in flight together (a new
        controller loading a hundred topics, or a CreateTopics of as many); topics gone
        or corrupt (logged) are left out."""
        found = await self.zk.get_topic_list(topics, {t: self._topic_watch(t) for t in topics})
        out: dict[str, TopicAssignment] = {}
        for topic in topics:
            result = found.get(topic)
            if isinstance(result, ZkDataError):
                log.error("ignoring topic %s: %s", topic, result)
            elif result is not None:
                out[topic] = result[0]
        return out

    async def topics_queued_for_deletion(self) -> set[str]:
        """/admin/delete_topics (re-arming its watch). Entries for topics that do not
        exist are removed, as Kafka does."""
        queued = set(await self.zk.get_topic_deletions(self.deletions_watch))
        unknown = sorted(queued - self.ctx.all_topics())
        if unknown:
            log.warning("controller: ignoring deletion of unknown topics %s", unknown)
            await self.zk.delete_topic_deletions(unknown, self.ctx.epoch_zk_version)
        return queued - set(unknown)

    # -- entry points ---------------------------------------------------------------------------

    async def on_topic_change(self) -> None:
        """The TopicChange event: topics created or gone under /brokers/topics."""
        topics = set(await self.zk.get_topics(self.topics_watch))
        for gone in sorted(self.ctx.all_topics() - topics):
            self.ctx.remove_topic(gone)
            self._topic_watches.pop(gone, None)
        new_partitions: list[TopicPartition] = []
        added = await self.read_topics(sorted(topics - self.ctx.all_topics()))
        for topic, found in added.items():
            self.ctx.set_topic(found)
            new_partitions += self.ctx.partitions_for_topic(topic)
        if new_partitions:
            await self.on_new_partitions(new_partitions)

    async def on_partition_modifications(self, topic: str) -> None:
        """The PartitionModifications event: ``topic``'s assignment znode changed."""
        if self.ctx.is_topic_queued_for_deletion(topic):
            log.info("controller: ignoring a change of topic %s: it is being deleted", topic)
            return
        assignment = await self.read_topic(topic)
        if assignment is None or topic not in self.ctx.assignments:
            return
        if assignment.topic_id != self.ctx.topic_ids.get(topic):
            log.error("topic %s changed its id: ignored (ids are never reused)", topic)
            return
        new = []
        for p, replicas in sorted(assignment.partitions.items()):
            if p not in self.ctx.assignments[topic]:
                self.ctx.set_partition_replicas(TopicPartition(topic, p), replicas)
                new.append(TopicPartition(topic, p))
            elif self.ctx.assignments[topic][p] != replicas:
                # replicas change through a reassignment (API or /admin/reassign_partitions)
                log.warning("ignoring a replica change of %s-%s written by hand", topic, p)
        if new:
            await self.on_new_partitions(new)

    async def on_new_partitions(self, partitions: list[TopicPartition]) -> None:
        """New -> Online for partitions and replicas: leaders written, LeaderAndIsr sent."""
        log.info(
            "controller: %d new partitions of topics %s",
            len(partitions),
            sorted({tp.topic for tp in partitions}),
        )
        batch = ControllerRequestBatch()
        replicas = self.ctx.replicas_for_partitions(partitions)
        await self.partition_sm.handle_state_changes(partitions, PartitionState.NEW, batch)
        await self.replica_sm.handle_state_changes(replicas, ReplicaState.NEW, batch)
        await self.partition_sm.handle_state_changes(partitions, PartitionState.ONLINE, batch)
        await self.replica_sm.handle_state_changes(replicas, ReplicaState.ONLINE, batch)
        self.send(batch)

    async def on_topic_deletion(self) -> None:
        """Kafka's TopicDeletion event: queue the new entries of /admin/delete_topics (a
        topic with a partition being reassigned is queued ineligible)."""
        queued = await self.topics_queued_for_deletion()
        if not self.deletion.enabled:
            if queued:
                log.info("controller: topic deletion is disabled: dropping %s", sorted(queued))
                await self.zk.delete_topic_deletions(sorted(queued), self.ctx.epoch_zk_version)
            return
        new = queued - self.ctx.topics_to_delete
        if not new:
            return
        log.info("controller: deleting topics %s", sorted(new))
        await self.deletion.enqueue(new, {t for t in new if self.ctx.is_topic_being_reassigned(t)})

    async def after_reassignment(self, work: Awaitable[None]) -> None:
        """Run a reassignment handler; then topics queued for deletion that it held back
        (and that have nothing left being reassigned) may proceed."""
        await work
        waiting = {
            t
            for t in self.ctx.topics_ineligible_for_deletion
            if not self.ctx.is_topic_being_reassigned(t)
        }
        if waiting:
            await self.deletion.resume_for_topics(waiting)

    async def on_stop_replica_response(self, event: ev.StopReplicaResponseReceived) -> None:
        """Errors are logged; the answers for partitions of topics being deleted move
        their replicas to ReplicaDeletionSuccessful or ReplicaDeletionIneligible. A broker
        that went away first is not read here: its death fails its deletions."""
        bid, response = event.broker_id, event.response
        if response is None:
            answered(response, bid, "StopReplica")
            return
        errors = stop_replica_errors(response)
        if answered(response, bid, "StopReplica"):
            for tp, code in sorted(errors.items()):
                if code != ErrorCode.NONE:
                    log.warning(
                        "controller: broker %s: StopReplica %s: %s", bid, tp, error_name(code)
                    )
        failed, succeeded = deletion_answers(
            self.ctx, bid, errors, event.deleted, response.error_code
        )
        if failed:
            await self.deletion.fail_replica_deletion(failed)
        if succeeded:
            await self.deletion.complete_replica_deletion(succeeded)


class _DeletionClient:
    """The TopicDeletionManager's side effects, carried out for it by TopicChanges."""

    def __init__(self, topics: TopicChanges) -> None:
        self.topics = topics

    async def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        t = self.topics
        await t.zk.delete_topic_znodes(topic, epoch_zk_version)

    async def delete_topic_deletions(self, topics: Collection[str], epoch_zk_version: int) -> None:
        t = self.topics
        await t.zk.delete_topic_deletions(sorted(topics), epoch_zk_version)

    def mute_partition_modifications(self, topic: str) -> None:
        self.topics.mute(topic)

    def send_metadata_update(self, partitions: Collection[TopicPartition]) -> None:
        batch = ControllerRequestBatch()
        batch.add_update_metadata(self.topics.ctx.live_or_shutting_down_ids(), set(partitions))
        self.topics.send(batch)

    def send(self, batch: ControllerRequestBatch) -> None:
        self.topics.send(batch)
