"""Broker changes: brokers starting, dying, shutting down cleanly, losing a log directory.

The controller learns of brokers from the children of /brokers/ids (one ephemeral
znode per live broker, its czxid the broker epoch). ``on_broker_change`` compares them
with the live brokers the context holds: a missing id is a death, a new id a start,
and the same id with another epoch a broker that restarted between two looks (treated
as a death followed by a start, as Kafka does, so its old replicas' state is dropped).

- A start: the new brokers get UpdateMetadata with every partition and the others learn
  their endpoints; the new brokers' replicas go Online, offline partitions are elected
  (they may now have a live ISR member), and reassignments and topic deletions waiting
  for those brokers go on.
- A death (``on_broker_failure``), or a replica that a LeaderAndIsr answer reports on a
  failed log directory, goes through ``on_replicas_become_offline``: partitions the lost
  replicas led go Offline and through the offline election (unclean where the topic
  allows it), the replicas go Offline (out of their ISRs, leader epoch bumped, written
  fenced by the controller epoch), and every live broker gets UpdateMetadata. Replicas
  of topics being deleted are not elected: their deletion is failed instead, to be
  retried when the broker returns.
- A controlled shutdown (``on_controlled_shutdown``): leadership moves off the broker
  before it goes (controller.controlled_shutdown).

Runs on the controller's event task only; ``watch`` is the exception, called on
kazoo's thread, and only enqueues.
"""

from __future__ import annotations

import logging
import time

from kazoo.protocol.states import EventType, WatchedEvent

from controller import events as ev
from controller.controlled_shutdown import ControlledShutdownResult, move_leadership_off
from controller.model import PartitionReplica
from controller.parts import ControllerHandler, ControllerParts
from controller.reassigner import PartitionReassigner
from controller.request_batch import ControllerRequestBatch
from controller.request_bodies import answered, leader_and_isr_errors
from controller.states import PartitionState, ReplicaState
from controller.topic_deletion import TopicDeletionManager
from protocol.errors import ErrorCode, error_name

log = logging.getLogger(__name__)


class BrokerChanges(ControllerHandler):
    """The controller's handlers of broker membership and replica loss."""

    def __init__(
        self,
        parts: ControllerParts,
        reassigner: PartitionReassigner,
        deletion: TopicDeletionManager,
    ) -> None:
        super().__init__(parts)
        self.reassigner = reassigner
        self.deletion = deletion

    # -- the watch (kazoo's thread: enqueue only) ---------------------------------------------

    def watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:  # NONE: session events, handled by the listener
            self.events.put_threadsafe(ev.BrokerChange())

    async def arm_watch(self) -> None:
        """Watch /brokers/ids (a new controller, before it loads its context)."""
        await self.zk.get_broker_ids(self.watch)

    # -- entry points -------------------------------------------------------------------------

    async def on_broker_change(self) -> None:
        """The BrokerChange event: read /brokers/ids (re-arming the watch) and act on the
        difference with the live brokers known."""
        ids = set(await self.zk.get_broker_ids(self.watch))
        infos = await self.zk.get_brokers(sorted(ids))
        known = set(self.ctx.live_brokers)
        dead = known - set(infos)
        new = set(infos) - known
        bounced = {
            b for b in known & set(infos) if infos[b].epoch != self.ctx.live_brokers[b].epoch
        }
        if dead or bounced:
            await self.on_broker_failure(dead | bounced)
        if new or bounced:
            for bid in sorted(new | bounced):
                self.ctx.add_live_brokers([infos[bid]])
                self.channel.add_broker(infos[bid])
            await self.on_broker_startup(new | bounced)

    async def on_broker_startup(self, new: set[int]) -> None:
        """``new`` brokers (already in the context's live brokers) started."""
        log.info("controller: brokers started %s", sorted(new))
        batch = ControllerRequestBatch()
        # existing brokers learn the new endpoints; new brokers get every partition
        batch.add_update_metadata(set(self.ctx.live_brokers) - new, set())
        batch.add_update_metadata(new, set(self.ctx.all_partitions()))
        replicas = [
            pr
            for pr in self.ctx.replicas_on_brokers(new)
            if not self.ctx.is_topic_queued_for_deletion(pr.tp.topic)
        ]
        await self.replica_sm.handle_state_changes(replicas, ReplicaState.ONLINE, batch)
        await self.partition_sm.trigger_online_partition_state_change(batch)
        self.send(batch)
        await self.reassigner.resume_for_brokers(new)
        # a replica of a topic being deleted came back: its deletion may go on
        await self.deletion.resume_for_topics(
            {pr.tp.topic for pr in self.ctx.replicas_on_brokers(new)}
        )

    async def on_broker_failure(self, dead: set[int]) -> None:
        """``dead`` brokers went away: their replicas go offline."""
        log.info("controller: brokers failed %s", sorted(dead))
        started = time.perf_counter()
        for bid in dead:
            self.channel.remove_broker(bid)
        self.ctx.remove_live_brokers(dead)
        await self.on_replicas_become_offline(self.ctx.replicas_on_brokers(dead))
        log.info(
            "controller: replicas of brokers %s taken offline, requests sent in %.3f s",
            sorted(dead),
            time.perf_counter() - started,
        )

    async def on_replicas_become_offline(
        self, replicas: list[PartitionReplica], batch: ControllerRequestBatch | None = None
    ) -> None:
        """Kafka's onReplicasBecomeOffline: partitions led by these replicas go Offline
        and through the offline election (clean, or unclean where the topic allows it),
        with every other New or Offline partition, and the new leaders are sent at once
        (LeaderAndIsr, UpdateMetadata); then the replicas go Offline, which takes them
        out of their ISRs (leader epoch bumped, written fenced by the controller epoch)
        and tells the remaining replicas (LeaderAndIsr) and every broker
        (UpdateMetadata) in a second batch, as Kafka sends each state machine's changes.
        ``batch``: requests already queued, sent with the first."""
        batch = ControllerRequestBatch() if batch is None else batch
        deleting = [pr for pr in replicas if self.ctx.is_topic_queued_for_deletion(pr.tp.topic)]
        replicas = [pr for pr in replicas if not self.ctx.is_topic_queued_for_deletion(pr.tp.topic)]
        lost = set(replicas)
        led = [
            tp
            for tp, st in sorted(self.ctx.leadership.items())
            if PartitionReplica(tp, st.leader_and_isr.leader) in lost
            and not self.ctx.is_topic_queued_for_deletion(tp.topic)
        ]
        started = time.perf_counter()
        await self.partition_sm.handle_state_changes(led, PartitionState.OFFLINE, batch)
        await self.partition_sm.trigger_online_partition_state_change(batch)
        # the new leaders go out at once, before the ISR changes of every other replica
        # the brokers hosted: those are a ZooKeeper write per partition, and clients wait
        # only on the leaders
        if not batch.is_empty():
            self.send(batch)
        if led:
            log.info(
                "controller: %d partitions that lost their leader elected and sent in %.3f s",
                len(led),
                time.perf_counter() - started,
            )
        await self.replica_sm.handle_state_changes(replicas, ReplicaState.OFFLINE, batch)
        # everyone learns that the replicas are gone, even if no leader moved
        batch.add_update_metadata(set(self.ctx.live_brokers), {pr.tp for pr in replicas})
        self.send(batch)
        if deleting:
            # a replica that cannot be deleted now holds its topic's deletion back
            await self.deletion.fail_replica_deletion(deleting)

    async def on_leader_and_isr_response(self, event: ev.LeaderAndIsrResponseReceived) -> None:
        """Kafka's handling: partitions a broker could not host because their log
        directory failed (KAFKA_STORAGE_ERROR) go offline there; other errors are logged."""
        bid, response = event.broker_id, event.response
        if not answered(response, bid, "LeaderAndIsr"):
            return
        errors = leader_and_isr_errors(self.ctx, response)
        for tp, code in sorted(errors.items()):
            if code not in (ErrorCode.NONE, ErrorCode.KAFKA_STORAGE_ERROR):
                log.warning("controller: broker %s: LeaderAndIsr %s: %s", bid, tp, error_name(code))
        if bid not in self.ctx.live_brokers:
            return
        offline_before = self.ctx.replicas_on_offline_dirs.get(bid, set())
        offline_now = {tp for tp in offline_before if errors.get(tp) != ErrorCode.NONE}
        offline_now |= {tp for tp, c in errors.items() if c == ErrorCode.KAFKA_STORAGE_ERROR}
        self.ctx.replicas_on_offline_dirs[bid] = offline_now
        new = sorted(offline_now - offline_before)
        if new:
            log.warning(
                "controller: broker %s has %s on a failed log directory",
                bid,
                [str(tp) for tp in new],
            )
            await self.on_replicas_become_offline([PartitionReplica(tp, bid) for tp in new])

    async def on_controlled_shutdown(self, event: ev.ControlledShutdown) -> None:
        """A ControlledShutdown request: move leadership off the broker; answer it."""
        batch = ControllerRequestBatch()
        result: ControlledShutdownResult = await move_leadership_off(
            self.ctx, self.partition_sm, self.replica_sm, batch, event.broker_id, event.broker_epoch
        )
        self.send(batch)
        event.reply.set_result(result)
