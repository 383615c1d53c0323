"""The controller's session and election lifecycle: registering, electing, failing over,
resigning.

Every broker registers its ephemeral /brokers/ids/<id> (the znode's czxid is the broker
epoch) and takes part in the election: the one whose multi-op creates the ephemeral
/controller and bumps /controller_epoch is the active controller, until its session ends
or one of its epoch-fenced writes fails (ControllerMovedError). The others keep a watch
on /controller and try again when it goes.

Events and what they do here (each on the controller's event task):

- Startup, Reelect (/controller deleted), ControllerChange (/controller created or
  changed): read /controller, re-arming the watch; resign if it is no longer ours;
  when there is none, ``elect``.
- SessionState (kazoo's listener): LOST resigns at once (our /controller went with the
  session); CONNECTED after LOST queues NewSession (register again, elect), after
  SUSPENDED queues Reconnected (``rearm_watches``: every watch is read again).
- Winning the election (``on_controller_failover``): arm the controller's watches, load
  the context (live brokers, topics, partition states), queue the topics being deleted,
  start the state machines (UpdateMetadata to every live broker, LeaderAndIsr to the
  replicas, and the replicas of brokers that are not live taken out of their ISRs),
  resume deletions and reassignments, handle pending ISR changes and preferred
  elections, and arm the leader-imbalance check.

A ZooKeeper error on the way (under load kazoo's connection drops, and a call in
flight raises ConnectionLoss even when ZooKeeper applied it) must not leave a controller
that nobody hears of. The election event is retried after such an error, and
``election_step`` treats /controller naming this broker while it is not active as a win
to finish, not as another broker's: the multi-op then adopts the znode if it belongs to
our session. A failover that fails half-way resigns and gives /controller up before the
error goes on to the retry, so that it runs again from the start, here or elsewhere.

Invariant: ``is_active`` holds only while ``active_controller_id`` is this broker and the
context holds the epoch we won; ``resign`` clears both, the context, the channel's
brokers and the imbalance check, so that nothing of an old term survives into the next.

Threads: ``watch`` and ``on_session_state`` are called on kazoo's thread and only
enqueue.
"""

from __future__ import annotations

import enum
import logging

from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from controller import events as ev
from controller.broker_changes import BrokerChanges
from controller.isr_changes import IsrChanges
from controller.parts import ControllerHandler, ControllerParts
from controller.preferred_leaders import PreferredLeaders
from controller.reassigner import PartitionReassigner
from controller.replica_state_machine import stranded_replicas
from controller.request_batch import ControllerRequestBatch
from controller.states import ReplicaState
from controller.topic_changes import TopicChanges
from controller.topic_deletion import topics_ineligible_at_failover
from timer.clock import Clock
from zk.errors import ControllerMovedError
from zk.model import BrokerInfo

log = logging.getLogger(__name__)

#: attempts at creating the broker's registration before giving up
REGISTRATION_ATTEMPTS = 5


class ElectionStep(enum.Enum):
    """What a broker does after reading /controller."""

    #: another broker's: follow it (its watch tells when it goes)
    FOLLOW = "follow"
    #: ours, and this broker is the active controller: nothing to do
    STAY = "stay"
    #: nobody's, or our id while this broker is not the active controller: try to win
    TRY = "try"


def election_step(current: int | None, broker_id: int, is_active: bool) -> ElectionStep:
    """The election's decision (pure). ``current`` is the id /controller names.

    Our own id while we are not active is a win of ours whose end we never saw (the
    multi-op's answer was lost with the connection, or the failover after it failed):
    trying again adopts it when it belongs to our session (and loses to it when it is a
    previous process's, whose session has yet to expire). Treating it as another
    broker's left /controller held by a broker that never acted as controller, and
    every broker waiting on it, until our session ended."""
    if current is None:
        return ElectionStep.TRY
    if current != broker_id:
        return ElectionStep.FOLLOW
    return ElectionStep.STAY if is_active else ElectionStep.TRY


class ElectionLifecycle(ControllerHandler):
    """Registration, election, failover and resignation of one broker's controller."""

    def __init__(
        self,
        parts: ControllerParts,
        broker_info: BrokerInfo,
        clock: Clock,
        stale_registration_wait_s: float,
        reassigner: PartitionReassigner,
        brokers: BrokerChanges,
        topics: TopicChanges,
        isr: IsrChanges,
        preferred: PreferredLeaders,
    ) -> None:
        super().__init__(parts)
        self.broker_info = broker_info
        self.broker_id = broker_info.id
        self.clock = clock
        self.stale_registration_wait_s = stale_registration_wait_s
        self.reassigner = reassigner
        self.brokers = brokers
        self.topics = topics
        self.isr = isr
        self.preferred = preferred
        self.active_controller_id: int | None = None
        # True once the failover of the term we won has run to its end (is_active is
        # already True while it runs); resigning clears it
        self.failover_done = False
        self.broker_epoch = -1
        self.stopped = False
        self._last_state: str | None = None

    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.broker_id and self.ctx.epoch > 0

    # -- start and stop -------------------------------------------------------------------------

    async def start(self) -> int:
        """Register this broker, start the event task and queue the first election.

        Returns the broker epoch (the registration znode's czxid)."""
        await self.zk.ensure_persistent_paths()
        self.broker_epoch = await self._register()
        self.events.start()
        self.zk.kazoo.add_listener(self.on_session_state)
        self.events.put(ev.Startup())
        return self.broker_epoch

    async def stop(self, zookeeper_reachable: bool) -> None:
        """Stop handling events and resign (deleting /controller when it is ours and
        ZooKeeper can be reached; else the session's expiry removes it)."""
        self.stopped = True
        self.zk.kazoo.remove_listener(self.on_session_state)
        await self.events.shutdown(timeout_s=10.0 if zookeeper_reachable else 1.0)
        was_active = self.is_active
        self.resign()
        if was_active and zookeeper_reachable:
            await self.zk.resign_controller(self.broker_id)

    async def _register(self) -> int:
        return await self.zk.register_broker(
            self.broker_info,
            self.clock.time_ms(),
            REGISTRATION_ATTEMPTS,
            self.stale_registration_wait_s,
        )

    # -- kazoo callbacks (kazoo's thread: enqueue only) -----------------------------------------

    def on_session_state(self, state: str) -> None:
        self.events.put_threadsafe(ev.SessionState(state))

    def watch(self, event: WatchedEvent) -> None:
        if event.type == EventType.DELETED:
            self.events.put_threadsafe(ev.Reelect())
        elif event.type != EventType.NONE:  # NONE: session events, handled by the listener
            self.events.put_threadsafe(ev.ControllerChange())

    # -- event handlers -------------------------------------------------------------------------

    async def on_reelect(self) -> None:
        """/controller went away; if it is back and ours we stay, else we resign."""
        current = await self.zk.get_controller_id(self.watch)
        self._resign_if_moved(current)
        await self.elect()

    async def on_controller_change(self) -> None:
        controller_id = await self.zk.get_controller_id(self.watch)
        self._resign_if_moved(controller_id)
        if election_step(controller_id, self.broker_id, self.is_active) is ElectionStep.TRY:
            await self.elect()
        elif controller_id != self.broker_id or not self.is_active:
            self.active_controller_id = controller_id

    async def on_new_session(self) -> None:
        self.broker_epoch = await self._register()
        await self.elect()

    async def on_session_state_event(self, event: ev.SessionState) -> None:
        previous, self._last_state = self._last_state, event.state
        if event.state == KazooState.LOST:
            log.warning("broker %s: ZooKeeper session expired", self.broker_id)
            self.resign()  # our /controller is gone with the session: stop at once
            self.active_controller_id = None
        elif event.state == KazooState.CONNECTED:
            if previous == KazooState.LOST:
                self.events.put(ev.NewSession())
            elif previous == KazooState.SUSPENDED:
                self.events.put(ev.Reconnected())
        # SUSPENDED: keep going; only a lost session ends our role

    async def rearm_watches(self) -> None:
        """Reconnected: every watch this broker relies on is read again, as events."""
        self.events.put(ev.ControllerChange())
        if self.is_active:
            self.events.put(ev.BrokerChange())
            self.events.put(ev.TopicChange())
            self.events.put(ev.IsrChangeNotification())
            self.events.put(ev.TopicDeletion())
            self.events.put(ev.PreferredReplicaElection())
            for topic in sorted(self.ctx.all_topics()):
                self.events.put(ev.PartitionModifications(topic))
            for event in self.reassigner.rearm_events():
                self.events.put(event)

    # -- election -------------------------------------------------------------------------------

    async def elect(self) -> None:
        """Try to become the controller, unless another broker is, or we already are."""
        if self.stopped:
            return
        current = await self.zk.get_controller_id(self.watch)
        if election_step(current, self.broker_id, self.is_active) is not ElectionStep.TRY:
            if current != self.broker_id or not self.is_active:
                self.active_controller_id = current
            return
        # None, or our id while we are not the controller: maybe our own earlier attempt,
        # whose answer was lost; the multi-op tells (it adopts /controller of our session)
        result = await self.zk.try_become_controller(self.broker_id, self.clock.time_ms())
        if not result.won:
            self.active_controller_id = result.controller_id
            # re-arm the watch: it may have fired on the creation we just lost to
            await self.zk.get_controller_id(self.watch)
            return
        self.ctx.reset()
        self.ctx.epoch = result.epoch
        self.ctx.epoch_zk_version = result.epoch_zk_version
        self.active_controller_id = self.broker_id
        log.info("broker %s is the controller, epoch %s", self.broker_id, result.epoch)
        try:
            await self.on_controller_failover()
            self.failover_done = True
        except ControllerMovedError:
            raise  # a newer controller fenced us: the event dispatch resigns
        except Exception as exc:
            # a half-done failover must not pass for a controller: resign, and give
            # /controller up, so that the election runs again (here, when the event is
            # retried, or on any broker, when the watches see /controller go)
            log.warning(
                "broker %s: failover as controller (epoch %s) failed (%s); resigning",
                self.broker_id,
                result.epoch,
                exc or type(exc).__name__,
            )
            self.resign()
            await self.zk.resign_controller(self.broker_id)
            raise

    def _resign_if_moved(self, controller_id: int | None) -> None:
        if self.is_active and controller_id != self.broker_id:
            self.resign()

    def resign(self) -> None:
        """Stop acting as the controller: forget the term's state (no ZooKeeper call)."""
        self.preferred.cancel()
        self.failover_done = False
        if self.is_active:
            log.info("broker %s resigns as controller (epoch %s)", self.broker_id, self.ctx.epoch)
        for bid in list(self.ctx.live_brokers):
            self.channel.remove_broker(bid)
        self.ctx.reset()
        self.reassigner.reset()
        if self.active_controller_id == self.broker_id:
            self.active_controller_id = None

    async def resign_after_fencing(self) -> None:
        """A write of ours was fenced: another controller has a newer epoch."""
        self.resign()
        # a fenced controller's /controller must not keep the job from the others
        await self.zk.resign_controller(self.broker_id)
        self.events.put(ev.Reelect())

    # -- failover -------------------------------------------------------------------------------

    async def on_controller_failover(self) -> None:
        """Kafka's onControllerFailover: this broker just won the election."""
        await self.brokers.arm_watch()
        await self.topics.arm_watch()
        await self.isr.arm_watch()
        await self.load_context()
        # before the first UpdateMetadata, so that it already carries the deletions
        queued = await self.topics.topics_queued_for_deletion()
        deletion = self.topics.deletion
        await deletion.init(queued, topics_ineligible_at_failover(self.ctx, queued))
        await self.start_state_machines()
        await deletion.try_topic_deletion()
        await self.reassigner.on_controller_failover()  # also arms its watches
        await self.isr.on_isr_change()
        await self.preferred.on_preferred_replica_election()  # also arms its watch
        self.preferred.schedule()

    async def load_context(self) -> None:
        """Live brokers, topics (arming each topic's watch) and partition states."""
        ids = await self.zk.get_broker_ids()
        self.ctx.add_live_brokers((await self.zk.get_brokers(ids)).values())
        for found in (await self.topics.read_topics(await self.zk.get_topics())).values():
            self.ctx.set_topic(found)
        states = await self.zk.get_partition_states(self.ctx.all_partitions())
        for tp, st in states.items():
            self.ctx.put_leadership(tp, st)

    async def start_state_machines(self) -> None:
        """After the context is loaded: every broker learns the cluster (UpdateMetadata),
        replicas on live brokers are told their state (LeaderAndIsr), and the replicas of
        brokers that are not live -- dead before this election, or while it ran, so that
        no controller saw them go -- take the path of a broker's death wherever they are
        still in an ISR or lead: they leave the ISR with a new leader epoch, and the
        partitions they led (or any other offline partition) are elected. Without this
        a dead follower stayed in the ISR and held acks=all writes until its leader
        dropped it after replica.lag.time.max.ms."""
        for b in self.ctx.live_brokers.values():
            self.channel.add_broker(b)
        batch = ControllerRequestBatch()
        batch.add_update_metadata(set(self.ctx.live_brokers), set(self.ctx.all_partitions()))
        self.replica_sm.initialize_states()
        self.partition_sm.initialize_states()
        online = [
            pr
            for pr, s in sorted(self.ctx.replica_states.items())
            if s is ReplicaState.ONLINE and not self.ctx.is_topic_queued_for_deletion(pr.tp.topic)
        ]
        await self.replica_sm.handle_state_changes(online, ReplicaState.ONLINE, batch)
        stranded = stranded_replicas(self.ctx)
        if stranded:
            log.info(
                "controller: replicas of brokers that are not live still in an ISR: %s",
                [str(pr) for pr in stranded],
            )
        await self.brokers.on_replicas_become_offline(stranded, batch)
