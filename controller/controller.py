"""KafkaController: controller election and the handlers of the controller's events.

Every broker runs one. All of them register their broker znode and take part in the
election; the one that creates /controller (bumping /controller_epoch in the same
multi-op) is active until its session ends or a write of its is fenced.

The broker assembly uses only this::

    controller = KafkaController(zk, broker_info, channel_manager, clock, ControllerConfig(),
                                 scheduler=scheduler)  # runs the leader-imbalance check
    broker_epoch = await controller.start()      # registers /brokers/ids/<id>, joins election
    controller.is_active / .active_controller_id / .epoch / .offline_partition_count
    result = await controller.controlled_shutdown(broker_id, broker_epoch)  # ControlledShutdown
    outcomes = await controller.alter_partition_reassignments({tp: replicas or None})
    ongoing = await controller.list_partition_reassignments(partitions or None)
    outcomes = await controller.elect_leaders(partitions_or_None, election_type)  # ElectLeaders
    await controller.shutdown()

Responses: every request batch is sent with callbacks that post the brokers' answers as
events (``LeaderAndIsrResponseReceived``, ``StopReplicaResponseReceived``; None when the
broker went away first). A LeaderAndIsr answer with KAFKA_STORAGE_ERROR partitions takes
those replicas offline, as a broker failure would for all of its replicas: leaders they
held are elected again elsewhere, and they leave their ISRs.

Topic deletion: /admin/delete_topics is watched; its entries go to the
TopicDeletionManager (controller.topic_deletion), which the broker-failure, broker-startup,
reassignment and StopReplica-answer handlers keep informed.

Threads: kazoo calls ``_on_*`` watch and state callbacks on its own thread; they only
enqueue events. Everything else runs on the event manager's single task, and ZooKeeper
calls await zk.facade.ZkFacade, which runs them on worker threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard, TypeVar

from kazoo.exceptions import KazooException
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from config.effective import ConfigLayers
from controller import events as ev
from controller.channel import ControllerChannelManager
from controller.context import ControllerContext
from controller.controlled_shutdown import ControlledShutdownResult, move_leadership_off
from controller.elect_leaders import ElectionOutcome, ElectionType, failed, triage
from controller.election import (
    UNCLEAN_LEADER_ELECTION_ENABLE,
    ElectionStrategy,
    unclean_leader_election_enabled,
)
from controller.model import PartitionReplica
from controller.partition_state_machine import PartitionStateMachine
from controller.reassigner import Outcomes, PartitionReassigner
from controller.reassignment import ReplicaAssignment
from controller.rebalance import partitions_to_rebalance, preferred_candidates
from controller.replica_state_machine import ReplicaStateMachine, stranded_replicas
from controller.request_batch import ControllerRequestBatch
from controller.requests import leader_and_isr_errors, stop_replica_errors
from controller.states import PartitionState, ReplicaState
from controller.store import PartitionStateStore
from controller.topic_deletion import (
    TopicDeletionManager,
    deletion_answers,
    topics_ineligible_at_failover,
)
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from timer.clock import Clock
from timer.scheduler import ScheduledTask, Scheduler
from zk import paths
from zk.codec import ZkDataError
from zk.errors import ControllerMovedError
from zk.facade import ZkFacade
from zk.model import BrokerInfo, TopicAssignment
from zk.store import ZkPartitionStateStore

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class _Handler:
    """One row of the event table: what an event runs, and whether only the active
    controller runs it."""

    run: Callable[[Any], Awaitable[None]]
    active_only: bool = False


@dataclass(frozen=True)
class ControllerConfig:
    """The broker settings the controller uses (Kafka's names and defaults)."""

    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_ms: int = 300_000
    leader_imbalance_per_broker_percentage: int = 10
    #: a reassignment waits for its new replicas to join the ISR; off only while leaders
    #: do not expand ISRs (the controller then declares them in sync, as at topic creation)
    #: zookeeper.session.timeout.ms: bounds the wait at startup for a registration that a
    #: crashed previous run of this broker left behind (0: do not wait)
    zookeeper_session_timeout_ms: int = 0
    #: delete.topic.enable: with it false, topics queued for deletion are dropped
    delete_topic_enable: bool = True

    @property
    def stale_registration_wait_s(self) -> float:
        """ZooKeeper expires a dead session some time after its timeout (sessions expire
        in tick-sized buckets, and the server may have negotiated a longer timeout than
        asked): twice the timeout is a generous bound."""
        return 2 * self.zookeeper_session_timeout_ms / 1000


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


class _Answer(Protocol):
    @property
    def error_code(self) -> int: ...


_A = TypeVar("_A", bound=_Answer)


def _answered(response: _A | None, broker_id: int, api: str) -> TypeGuard[_A]:
    """Whether a broker's answer to a controller request is there to be read per
    partition: not when the broker went away first (None) or refused the whole request
    (a top-level error); either is logged here."""
    if response is None:
        log.debug("controller: broker %s went away before answering %s", broker_id, api)
        return False
    if response.error_code != ErrorCode.NONE:
        log.warning(
            "controller: broker %s refused %s: %s",
            broker_id,
            api,
            _error_name(response.error_code),
        )
        return False
    return True


class KafkaController:
    def __init__(
        self,
        zk: ZkFacade,
        broker_info: BrokerInfo,
        channel: ControllerChannelManager,
        clock: Clock,
        config: ControllerConfig | None = None,
        store: PartitionStateStore | None = None,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.zk = zk
        self.broker_info = broker_info
        self.broker_id = broker_info.id
        self.channel = channel
        self.clock = clock
        self.config = config or ControllerConfig()
        self.ctx = ControllerContext()
        store = store or ZkPartitionStateStore(zk)
        self.partition_sm = PartitionStateMachine(
            self.ctx,
            store,
            self.config.unclean_leader_election_enable,
            unclean_policy=self._unclean_leader_election_enabled,
        )
        self.replica_sm = ReplicaStateMachine(self.ctx, store)
        self.events = ev.ControllerEventManager(self._process)
        self.reassigner = PartitionReassigner(
            self.ctx,
            zk,
            self.partition_sm,
            self.replica_sm,
            self.events,
            self._send,
        )
        self.deletion = TopicDeletionManager(
            self.ctx,
            self.replica_sm,
            self.partition_sm,
            _ControllerDeletionClient(self),
            self.config.delete_topic_enable,
        )
        self._handlers = self._event_handlers()
        #: runs the periodic leader-imbalance check while we are controller (optional)
        self.scheduler = scheduler
        self._rebalance_task: ScheduledTask | None = None
        self.active_controller_id: int | None = None
        self.broker_epoch = -1
        #: per-topic watch callbacks; kazoo keeps watchers in a set, so reuse one per topic
        self._topic_watches: dict[str, Callable[[WatchedEvent], None]] = {}
        self._last_state: str | None = None
        self._stopped = False

    # -- the broker-facing API --------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.broker_id and self.ctx.epoch > 0

    @property
    def epoch(self) -> int:
        return self.ctx.epoch

    @property
    def offline_partition_count(self) -> int:
        return self.ctx.offline_partition_count() if self.is_active else 0

    @property
    def unclean_leader_elections(self) -> int:
        """Unclean leader elections this broker made as controller (a counter)."""
        return self.partition_sm.unclean_leader_elections

    async def start(self) -> int:
        """Register this broker, start the event task and queue the first election.

        Returns the broker epoch (the registration znode's czxid).
        """
        await self.zk.ensure_persistent_paths()
        self.broker_epoch = await self._register()
        self.events.start()
        self.zk.kazoo.add_listener(self._on_session_state)
        self.events.put(ev.Startup())
        return self.broker_epoch

    async def shutdown(self, zookeeper_reachable: bool = True) -> None:
        """Stop handling events, resign if active, close the channel manager. Without
        ZooKeeper (``zookeeper_reachable`` False) the event in progress, likely waiting
        on it, is cancelled at once and /controller is left to the session's expiry."""
        self._stopped = True
        self.zk.kazoo.remove_listener(self._on_session_state)
        await self.events.shutdown(timeout_s=10.0 if zookeeper_reachable else 1.0)
        was_active = self.is_active
        self._resign()
        if was_active and zookeeper_reachable:
            await self.zk.resign_controller(self.broker_id)
        await self.channel.shutdown()

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> ControlledShutdownResult:
        """Handle a ControlledShutdown request (when this broker is the controller)."""
        if self._stopped:
            return ControlledShutdownResult(ErrorCode.NOT_CONTROLLER)
        reply: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.events.put(ev.ControlledShutdown(broker_id, broker_epoch, reply))
        result = await reply
        if not isinstance(result, ControlledShutdownResult):  # discarded at shutdown
            return ControlledShutdownResult(ErrorCode.NOT_CONTROLLER)
        return result

    async def alter_partition_reassignments(
        self, targets: dict[TopicPartition, tuple[int, ...] | None]
    ) -> Outcomes | None:
        """AlterPartitionReassignments: each partition's outcome; None if not controller."""
        if self._stopped:
            return None
        reply: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.events.put(ev.AlterPartitionReassignments(targets, reply))
        result = await reply
        return result if isinstance(result, dict) else None

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment] | None:
        """ListPartitionReassignments: the ongoing ones; None if not controller."""
        if self._stopped:
            return None
        reply: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.events.put(ev.ListPartitionReassignments(partitions, reply))
        result = await reply
        return result if isinstance(result, dict) else None

    async def elect_leaders(
        self, partitions: list[TopicPartition] | None, election_type: ElectionType
    ) -> dict[TopicPartition, ElectionOutcome] | None:
        """Handle an ElectLeaders request: elect ``partitions`` (None: every partition).

        Returns once the elections are written to ZooKeeper and the LeaderAndIsr and
        UpdateMetadata requests queued (brokers learn of them shortly after); None when
        this broker is not the controller."""
        if self._stopped:
            return None
        reply: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.events.put(ev.ElectLeaders(partitions, election_type, reply))
        result = await reply
        if not isinstance(result, dict):
            return None
        return result

    # -- kazoo callbacks (kazoo's thread: enqueue only) ---------------------------------------

    def _on_session_state(self, state: str) -> None:
        self.events.put_threadsafe(ev.SessionState(state))

    def _on_controller_watch(self, event: WatchedEvent) -> None:
        if event.type == EventType.DELETED:
            self.events.put_threadsafe(ev.Reelect())
        elif event.type != EventType.NONE:  # NONE: session events, handled by the listener
            self.events.put_threadsafe(ev.ControllerChange())

    def _on_brokers_watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self.events.put_threadsafe(ev.BrokerChange())

    def _on_topics_watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self.events.put_threadsafe(ev.TopicChange())

    def _on_topic_deletions_watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self.events.put_threadsafe(ev.TopicDeletion())

    def _on_isr_change_watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self.events.put_threadsafe(ev.IsrChangeNotification())

    def _on_preferred_election_watch(self, event: WatchedEvent) -> None:
        if event.type in (EventType.CREATED, EventType.CHANGED):
            self.events.put_threadsafe(ev.PreferredReplicaElection())

    def _topic_watch(self, topic: str) -> Callable[[WatchedEvent], None]:
        if topic not in self._topic_watches:

            def on_topic(event: WatchedEvent) -> None:
                # a muted watch (its topic being deleted) is no longer the topic's
                if event.type == EventType.CHANGED and self._topic_watches.get(topic) is on_topic:
                    self.events.put_threadsafe(ev.PartitionModifications(topic))

            self._topic_watches[topic] = on_topic
        return self._topic_watches[topic]

    # -- event dispatch ---------------------------------------------------------------------

    async def _process(self, event: ev.ControllerEvent) -> None:
        try:
            await self._dispatch(event)
        except ControllerMovedError as exc:
            log.warning("broker %s: fenced as controller (%s); resigning", self.broker_id, exc)
            await self._resign_after_fencing()
        finally:
            if isinstance(event, ev.ControlledShutdown) and not event.reply.done():
                event.reply.set_result(ControlledShutdownResult(ErrorCode.NOT_CONTROLLER))
            if isinstance(event, ev.ElectLeaders):
                event.discard()  # not answered: not (or no longer) the controller
            if isinstance(event, ev.AlterPartitionReassignments | ev.ListPartitionReassignments):
                event.discard()  # unanswered (not the controller, or it failed): None

    def _event_handlers(self) -> dict[type[ev.ControllerEvent], _Handler]:
        """Which handler each event runs. Election and session events are handled on
        every broker; the rest only by the active controller (watches fire on every
        broker), and a ControlledShutdown reaching an inactive one is answered
        NOT_CONTROLLER by ``_process``."""
        return {
            ev.Startup: _Handler(lambda _: self._elect()),
            ev.Reelect: _Handler(lambda _: self._on_reelect()),
            ev.ControllerChange: _Handler(lambda _: self._on_controller_change()),
            ev.SessionState: _Handler(self._on_session_state_event),
            ev.NewSession: _Handler(lambda _: self._on_new_session()),
            ev.Reconnected: _Handler(lambda _: self._rearm_watches()),
            ev.BrokerChange: _Handler(lambda _: self._on_broker_change(), active_only=True),
            ev.TopicChange: _Handler(lambda _: self._on_topic_change(), active_only=True),
            ev.PartitionModifications: _Handler(
                lambda e: self._on_partition_modifications(e.topic), active_only=True
            ),
            ev.IsrChangeNotification: _Handler(lambda _: self._on_isr_change(), active_only=True),
            ev.TopicDeletion: _Handler(lambda _: self._on_topic_deletion(), active_only=True),
            ev.AutoPreferredLeaderElection: _Handler(
                lambda _: self._on_auto_rebalance(), active_only=True
            ),
            ev.PreferredReplicaElection: _Handler(
                lambda _: self._on_preferred_replica_election(), active_only=True
            ),
            ev.ControlledShutdown: _Handler(self._on_controlled_shutdown_event, active_only=True),
            ev.ElectLeaders: _Handler(self._on_elect_leaders, active_only=True),
            ev.LeaderAndIsrResponseReceived: _Handler(
                self._on_leader_and_isr_response, active_only=True
            ),
            ev.StopReplicaResponseReceived: _Handler(
                self._on_stop_replica_response, active_only=True
            ),
            # partition reassignment (controller.reassigner)
            # (a finished reassignment may let a topic's deletion proceed)
            ev.ZkPartitionReassignment: _Handler(
                lambda _: self._reassigning(self.reassigner.on_request_event()), active_only=True
            ),
            ev.PartitionReassignmentIsrChange: _Handler(
                lambda e: self._reassigning(self.reassigner.on_isr_change([e.tp])),
                active_only=True,
            ),
            ev.AlterPartitionReassignments: _Handler(
                lambda e: self._reassigning(_answer(e.reply, self.reassigner.alter(e.targets))),
                active_only=True,
            ),
            ev.ListPartitionReassignments: _Handler(
                lambda e: _answer(e.reply, _now(self.reassigner.ongoing(e.partitions))),
                active_only=True,
            ),
        }

    async def _dispatch(self, event: ev.ControllerEvent) -> None:
        handler = self._handlers.get(type(event))
        if handler is None:
            log.error("controller: no handler for %s", event)
            return
        if handler.active_only and not self.is_active:
            return
        await handler.run(event)

    async def _register(self) -> int:
        return await self.zk.register_broker(
            self.broker_info, self.clock.time_ms(), 5, self.config.stale_registration_wait_s
        )

    async def _on_reelect(self) -> None:
        # /controller went away; if it is back and ours we stay, else we resign
        current = await self.zk.get_controller_id(self._on_controller_watch)
        self._resign_if_moved(current)
        await self._elect()

    async def _on_controller_change(self) -> None:
        controller_id = await self.zk.get_controller_id(self._on_controller_watch)
        self._resign_if_moved(controller_id)
        self.active_controller_id = controller_id
        if controller_id is None:
            await self._elect()

    async def _on_new_session(self) -> None:
        self.broker_epoch = await self._register()
        await self._elect()

    async def _on_session_state_event(self, event: ev.SessionState) -> None:
        self._on_session_state_change(event.state)

    def _on_session_state_change(self, state: str) -> None:
        previous, self._last_state = self._last_state, state
        if state == KazooState.LOST:
            log.warning("broker %s: ZooKeeper session expired", self.broker_id)
            self._resign()  # our /controller is gone with the session: stop at once
            self.active_controller_id = None
        elif state == KazooState.CONNECTED:
            if previous == KazooState.LOST:
                self.events.put(ev.NewSession())
            elif previous == KazooState.SUSPENDED:
                self.events.put(ev.Reconnected())
        # SUSPENDED: keep going; only a lost session ends our role

    # -- election ---------------------------------------------------------------------------

    async def _elect(self) -> None:
        if self._stopped:
            return
        current = await self.zk.get_controller_id(self._on_controller_watch)
        if current is not None:
            if current != self.broker_id or not self.is_active:
                self.active_controller_id = current
            return
        result = await self.zk.try_become_controller(self.broker_id, self.clock.time_ms())
        if not result.won:
            self.active_controller_id = result.controller_id
            # re-arm the watch: it may have fired on the creation we just lost to
            await self.zk.get_controller_id(self._on_controller_watch)
            return
        self.ctx.reset()
        self.ctx.epoch = result.epoch
        self.ctx.epoch_zk_version = result.epoch_zk_version
        self.active_controller_id = self.broker_id
        log.info("broker %s is the controller, epoch %s", self.broker_id, result.epoch)
        await self._on_controller_failover()

    def _resign_if_moved(self, controller_id: int | None) -> None:
        if self.is_active and controller_id != self.broker_id:
            self._resign()

    def _resign(self) -> None:
        if self._rebalance_task is not None:
            self._rebalance_task.cancel()
            self._rebalance_task = None
        if self.is_active:
            log.info("broker %s resigns as controller (epoch %s)", self.broker_id, self.ctx.epoch)
        for bid in list(self.ctx.live_brokers):
            self.channel.remove_broker(bid)
        self.ctx.reset()
        self.reassigner.reset()
        if self.active_controller_id == self.broker_id:
            self.active_controller_id = None

    async def _resign_after_fencing(self) -> None:
        self._resign()
        # a fenced controller's /controller must not keep the job from the others
        await self.zk.resign_controller(self.broker_id)
        self.events.put(ev.Reelect())

    async def _on_controller_failover(self) -> None:
        await self.zk.get_broker_ids(self._on_brokers_watch)
        await self.zk.get_topics(self._on_topics_watch)
        await self.zk.get_isr_change_notifications(self._on_isr_change_watch)
        await self._load_context()
        # before the first UpdateMetadata, so that it already carries the deletions
        queued = await self._topics_queued_for_deletion()
        await self.deletion.init(queued, topics_ineligible_at_failover(self.ctx, queued))
        await self._start_state_machines()
        await self.deletion.try_topic_deletion()
        await self.reassigner.on_controller_failover()  # also arms its watches
        await self._on_isr_change()
        await self._on_preferred_replica_election()  # also arms its watch
        self._schedule_rebalance()

    async def _start_state_machines(self) -> None:
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
        await self._on_replicas_become_offline(stranded, batch)

    async def _load_context(self) -> None:
        ids = await self.zk.get_broker_ids()
        self.ctx.add_live_brokers((await self.zk.get_brokers(ids)).values())
        for topic in await self.zk.get_topics():
            found = await self._read_topic(topic)
            if found is not None:
                self.ctx.set_topic(found)
        states = await self.zk.get_partition_states(self.ctx.all_partitions())
        for tp, st in states.items():
            self.ctx.put_leadership(tp, st)

    async def _rearm_watches(self) -> None:
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

    def _send(self, batch: ControllerRequestBatch) -> None:
        batch.send(
            self.ctx,
            self.channel,
            self.broker_id,
            on_leader_and_isr_response=lambda bid, body: self.events.put(
                ev.LeaderAndIsrResponseReceived(bid, body)
            ),
            on_stop_replica_response=lambda bid, body, deleted: self.events.put(
                ev.StopReplicaResponseReceived(bid, body, deleted)
            ),
        )

    # -- the brokers' answers ---------------------------------------------------------------

    async def _on_leader_and_isr_response(self, event: ev.LeaderAndIsrResponseReceived) -> None:
        """Kafka's handling: partitions a broker could not host because their log
        directory failed (KAFKA_STORAGE_ERROR) go offline there; other errors are logged."""
        bid, response = event.broker_id, event.response
        if not _answered(response, bid, "LeaderAndIsr"):
            return
        errors = leader_and_isr_errors(self.ctx, response)
        for tp, code in sorted(errors.items()):
            if code not in (ErrorCode.NONE, ErrorCode.KAFKA_STORAGE_ERROR):
                log.warning(
                    "controller: broker %s: LeaderAndIsr %s: %s", bid, tp, _error_name(code)
                )
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
            await self._on_replicas_become_offline([PartitionReplica(tp, bid) for tp in new])

    async def _on_stop_replica_response(self, event: ev.StopReplicaResponseReceived) -> None:
        """Errors are logged; the answers for partitions of topics being deleted move
        their replicas to ReplicaDeletionSuccessful or ReplicaDeletionIneligible. A broker
        that went away first is not read here: its death fails its deletions."""
        bid, response = event.broker_id, event.response
        if response is None:
            _answered(response, bid, "StopReplica")
            return
        errors = stop_replica_errors(response)
        if _answered(response, bid, "StopReplica"):
            for tp, code in sorted(errors.items()):
                if code != ErrorCode.NONE:
                    log.warning(
                        "controller: broker %s: StopReplica %s: %s", bid, tp, _error_name(code)
                    )
        failed, succeeded = deletion_answers(
            self.ctx, bid, errors, event.deleted, response.error_code
        )
        if failed:
            await self.deletion.fail_replica_deletion(failed)
        if succeeded:
            await self.deletion.complete_replica_deletion(succeeded)

    # -- brokers ----------------------------------------------------------------------------

    async def _on_broker_change(self) -> None:
        ids = set(await self.zk.get_broker_ids(self._on_brokers_watch))
        infos = await self.zk.get_brokers(sorted(ids))
        known = set(self.ctx.live_brokers)
        dead = known - set(infos)
        new = set(infos) - known
        bounced = {
            b for b in known & set(infos) if infos[b].epoch != self.ctx.live_brokers[b].epoch
        }
        if dead or bounced:
            await self._on_broker_failure(dead | bounced)
        if new or bounced:
            for bid in sorted(new | bounced):
                self.ctx.add_live_brokers([infos[bid]])
                self.channel.add_broker(infos[bid])
            await self._on_broker_startup(new | bounced)

    async def _on_broker_startup(self, new: set[int]) -> None:
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
        self._send(batch)
        await self.reassigner.resume_for_brokers(new)
        # a replica of a topic being deleted came back: its deletion may go on
        await self.deletion.resume_for_topics(
            {pr.tp.topic for pr in self.ctx.replicas_on_brokers(new)}
        )

    async def _on_broker_failure(self, dead: set[int]) -> None:
        log.info("controller: brokers failed %s", sorted(dead))
        for bid in dead:
            self.channel.remove_broker(bid)
        self.ctx.remove_live_brokers(dead)
        await self._on_replicas_become_offline(self.ctx.replicas_on_brokers(dead))

    async def _on_replicas_become_offline(
        self, replicas: list[PartitionReplica], batch: ControllerRequestBatch | None = None
    ) -> None:
        """Kafka's onReplicasBecomeOffline: partitions led by these replicas go Offline
        and through the offline election (clean, or unclean where the topic allows it),
        with every other New or Offline partition; then the replicas go Offline, which
        takes them out of their ISRs (leader epoch bumped, written fenced by the
        controller epoch) and tells the remaining replicas (LeaderAndIsr) and every
        broker (UpdateMetadata). ``batch``: requests already queued, sent with these."""
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
        await self.partition_sm.handle_state_changes(led, PartitionState.OFFLINE, batch)
        await self.partition_sm.trigger_online_partition_state_change(batch)
        await self.replica_sm.handle_state_changes(replicas, ReplicaState.OFFLINE, batch)
        # everyone learns that the replicas are gone, even if no leader moved
        batch.add_update_metadata(set(self.ctx.live_brokers), {pr.tp for pr in replicas})
        self._send(batch)
        if deleting:
            # a replica that cannot be deleted now holds its topic's deletion back
            await self.deletion.fail_replica_deletion(deleting)

    async def _unclean_leader_election_enabled(self, topic: str) -> bool:
        """``unclean.leader.election.enable`` for ``topic``: its override in
        /config/topics/<t> over the dynamic broker configs (cluster default, then ours)
        over the static one. When ZooKeeper cannot answer, the static value."""

        static = self.config.unclean_leader_election_enable

        async def read_layers() -> ConfigLayers:
            return ConfigLayers(
                dynamic_default=await self.zk.get_entity_config("brokers", paths.DEFAULT_ENTITY),
                dynamic_broker=await self.zk.get_entity_config("brokers", str(self.broker_id)),
                topic=await self.zk.get_topic_config(topic),
                static={UNCLEAN_LEADER_ELECTION_ENABLE: "true" if static else "false"},
            )

        try:
            layers = await read_layers()
        except (KazooException, ZkDataError) as exc:
            log.warning(
                "controller: cannot read the configs of %s (%s): using %s", topic, exc, static
            )
            return static
        return unclean_leader_election_enabled(layers)

    # -- topics -----------------------------------------------------------------------------

    async def _on_topic_change(self) -> None:
        topics = set(await self.zk.get_topics(self._on_topics_watch))
        for gone in sorted(self.ctx.all_topics() - topics):
            self.ctx.remove_topic(gone)
            self._topic_watches.pop(gone, None)
        new_partitions: list[TopicPartition] = []
        for topic in sorted(topics - self.ctx.all_topics()):
            found = await self._read_topic(topic)
            if found is None:
                continue
            self.ctx.set_topic(found)
            new_partitions += self.ctx.partitions_for_topic(topic)
        if new_partitions:
            await self._on_new_partitions(new_partitions)

    async def _read_topic(self, topic: str) -> TopicAssignment | None:
        """Read a topic's assignment and (re)arm its watch; a corrupt znode is skipped."""
        try:
            found = await self.zk.get_topic(topic, self._topic_watch(topic))
        except ZkDataError as exc:
            log.error("ignoring topic %s: %s", topic, exc)
            return None
        return None if found is None else found[0]

    async def _on_partition_modifications(self, topic: str) -> None:
        if self.ctx.is_topic_queued_for_deletion(topic):
            log.info("controller: ignoring a change of topic %s: it is being deleted", topic)
            return
        assignment = await self._read_topic(topic)
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
            await self._on_new_partitions(new)

    async def _on_new_partitions(self, partitions: list[TopicPartition]) -> None:
        """New -> Online for partitions and replicas: leaders written, LeaderAndIsr sent."""
        log.info("controller: new partitions %s", [str(tp) for tp in partitions])
        batch = ControllerRequestBatch()
        replicas = self.ctx.replicas_for_partitions(partitions)
        await self.partition_sm.handle_state_changes(partitions, PartitionState.NEW, batch)
        await self.replica_sm.handle_state_changes(replicas, ReplicaState.NEW, batch)
        await self.partition_sm.handle_state_changes(partitions, PartitionState.ONLINE, batch)
        await self.replica_sm.handle_state_changes(replicas, ReplicaState.ONLINE, batch)
        self._send(batch)

    async def _topics_queued_for_deletion(self) -> set[str]:
        """/admin/delete_topics (re-arming its watch). Entries for topics that do not
        exist are removed, as Kafka does."""
        queued = set(await self.zk.get_topic_deletions(self._on_topic_deletions_watch))
        unknown = sorted(queued - self.ctx.all_topics())
        if unknown:
            log.warning("controller: ignoring deletion of unknown topics %s", unknown)
            await self.zk.delete_topic_deletions(unknown, self.ctx.epoch_zk_version)
        return queued - set(unknown)

    async def _on_topic_deletion(self) -> None:
        """Kafka's TopicDeletion event: queue the new entries of /admin/delete_topics (a
        topic with a partition being reassigned is queued ineligible)."""
        queued = await self._topics_queued_for_deletion()
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

    async def _reassigning(self, work: Awaitable[None]) -> None:
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

    async def _on_isr_change(self) -> None:
        names = await self.zk.get_isr_change_notifications(self._on_isr_change_watch)
        if not names:
            return
        changed: set[TopicPartition] = set()
        for name in names:
            changed |= set(await self.zk.read_isr_change_notification(name))
        known = sorted(tp for tp in changed if tp in self.ctx.leadership)
        for tp, st in (await self.zk.get_partition_states(known)).items():
            self.ctx.put_leadership(tp, st)
        batch = ControllerRequestBatch()
        batch.add_update_metadata(set(self.ctx.live_brokers), set(known))
        self._send(batch)
        await self.reassigner.on_isr_change(known)
        await self.zk.delete_isr_change_notifications(names, self.ctx.epoch_zk_version)

    # -- preferred leaders ------------------------------------------------------------------

    def _schedule_rebalance(self) -> None:
        cfg = self.config
        if self.scheduler is None or not cfg.auto_leader_rebalance_enable:
            return
        interval = cfg.leader_imbalance_check_interval_ms
        self._rebalance_task = self.scheduler.schedule(
            f"auto-leader-rebalance-task-{self.broker_id}",
            lambda: self.events.put(ev.AutoPreferredLeaderElection()),
            delay_ms=min(5_000, interval),  # Kafka checks 5 s after failover, then periodically
            period_ms=interval,
        )

    async def _on_auto_rebalance(self) -> None:
        pct = self.config.leader_imbalance_per_broker_percentage
        await self._elect_preferred(partitions_to_rebalance(self.ctx, pct))

    async def _on_preferred_replica_election(self) -> None:
        requested = await self.zk.get_preferred_replica_election(self._on_preferred_election_watch)
        if requested is None:
            return
        known = [tp for tp in requested if tp in self.ctx.leadership]
        await self._elect_preferred(preferred_candidates(self.ctx, known))
        await self.zk.delete_preferred_replica_election(self.ctx.epoch_zk_version)

    async def _elect_preferred(self, partitions: list[TopicPartition]) -> None:
        if not partitions:
            return
        log.info("controller: preferred leaders for %s", [str(tp) for tp in partitions])
        batch = ControllerRequestBatch()
        failures = await self.partition_sm.handle_state_changes(
            partitions, PartitionState.ONLINE, batch, ElectionStrategy.PREFERRED_REPLICA
        )
        for tp, why in failures.items():
            log.info("preferred leader election for %s failed: %s", tp, why)
        self._send(batch)

    async def _on_elect_leaders(self, event: ev.ElectLeaders) -> None:
        """Kafka's replica leader election by an admin request: preferred elections with
        the preferred-replica strategy, unclean ones with the offline strategy allowed to
        go outside the ISR."""
        kind = ElectionType(event.election_type)
        requested = self.ctx.all_partitions() if event.partitions is None else event.partitions
        to_elect, outcomes = triage(self.ctx, requested, kind)
        if to_elect:
            log.info(
                "controller: %s leader election for %s", kind.name, [str(tp) for tp in to_elect]
            )
        batch = ControllerRequestBatch()
        if kind is ElectionType.PREFERRED:
            failures = await self.partition_sm.handle_state_changes(
                to_elect, PartitionState.ONLINE, batch, ElectionStrategy.PREFERRED_REPLICA
            )
        else:
            failures = await self.partition_sm.handle_state_changes(
                to_elect, PartitionState.ONLINE, batch, ElectionStrategy.OFFLINE, allow_unclean=True
            )
        self._send(batch)
        for tp in to_elect:
            st = self.ctx.leadership.get(tp)
            if tp in failures or st is None:
                outcomes[tp] = failed(kind, failures.get(tp, "no leadership known"))
            else:
                outcomes[tp] = ElectionOutcome(ErrorCode.NONE, leader=st.leader_and_isr.leader)
        event.reply.set_result(outcomes)

    # -- controlled shutdown ----------------------------------------------------------------

    async def _on_controlled_shutdown_event(self, event: ev.ControlledShutdown) -> None:
        event.reply.set_result(
            await self._on_controlled_shutdown(event.broker_id, event.broker_epoch)
        )

    async def _on_controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> ControlledShutdownResult:
        batch = ControllerRequestBatch()
        result = await move_leadership_off(
            self.ctx, self.partition_sm, self.replica_sm, batch, broker_id, broker_epoch
        )
        self._send(batch)
        return result


class _ControllerDeletionClient:
    """The TopicDeletionManager's side effects, carried out by the controller."""

    def __init__(self, controller: KafkaController) -> None:
        self.controller = controller

    async def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        c = self.controller
        await c.zk.delete_topic_znodes(topic, epoch_zk_version)

    async def delete_topic_deletions(self, topics: Collection[str], epoch_zk_version: int) -> None:
        c = self.controller
        await c.zk.delete_topic_deletions(sorted(topics), epoch_zk_version)

    def mute_partition_modifications(self, topic: str) -> None:
        # the watch stays armed in ZooKeeper but its callback is no longer the topic's
        self.controller._topic_watches.pop(topic, None)

    def send_metadata_update(self, partitions: Collection[TopicPartition]) -> None:
        c = self.controller
        batch = ControllerRequestBatch()
        batch.add_update_metadata(c.ctx.live_or_shutting_down_ids(), set(partitions))
        c._send(batch)

    def send(self, batch: ControllerRequestBatch) -> None:
        self.controller._send(batch)


async def _answer(reply: asyncio.Future[object], outcome: Awaitable[object]) -> None:
    result = await outcome
    if not reply.done():  # not cancelled by a requester that went away
        reply.set_result(result)


async def _now(value: T) -> T:
    return value


__all__ = [  # the result type is re-exported for the broker's handler
    "ControlledShutdownResult",
    "ControllerConfig",
    "KafkaController",
]
