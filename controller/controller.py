"""KafkaController: the owner that wires the controller's modules to its event queue.

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

The work is done by one module per concern, each with public entry points that the
event table below calls; they share the ControllerContext, the two state machines, the
event manager and ``_send`` (a request batch sent with callbacks that post the brokers'
answers back as events):

- ``election`` (controller.election_lifecycle): registration, session states, the
  election, failover and resignation;
- ``brokers`` (controller.broker_changes): brokers starting and dying, replicas on failed
  log directories (LeaderAndIsr answers), controlled shutdown;
- ``topics`` (controller.topic_changes): new topics and partitions, the deletion queue
  (with the TopicDeletionManager it owns, ``topics.deletion``), StopReplica answers;
- ``preferred`` (controller.preferred_leaders): the leader-imbalance check,
  /admin/preferred_replica_election and ElectLeaders;
- ``isr`` (controller.isr_changes): /isr_change_notification;
- ``reassigner`` (controller.reassigner): partition reassignment.

Which events only the active controller handles is the table's ``active_only``; a
request that reaches an inactive controller (or one that loses the job while handling
it) is answered as not the controller by ``process``. A write fenced by a newer
controller epoch (ControllerMovedError) makes this broker resign and elect again.

The effective ``unclean.leader.election.enable`` of a topic is read by
``_unclean_leader_election_enabled``, the one function that knows its layers.

Threads: kazoo calls the modules' watch and session callbacks on its own thread; they
only enqueue events. Everything else runs on the event manager's single task; ZooKeeper
calls await zk.facade.ZkFacade, which runs them on worker threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kazoo.exceptions import KazooException

from config.effective import ConfigLayers
from controller import events as ev
from controller.broker_changes import BrokerChanges
from controller.channel import ControllerChannelManager
from controller.context import ControllerContext
from controller.controlled_shutdown import ControlledShutdownResult
from controller.elect_leaders import ElectionOutcome, ElectionType
from controller.election_lifecycle import ElectionLifecycle
from controller.election_strategies import (
    UNCLEAN_LEADER_ELECTION_ENABLE,
    unclean_leader_election_enabled,
)
from controller.isr_changes import IsrChanges
from controller.partition_state_machine import PartitionStateMachine
from controller.parts import ControllerParts
from controller.preferred_leaders import PreferredLeaders
from controller.reassigner import Outcomes, PartitionReassigner
from controller.reassignment_rules import ReplicaAssignment
from controller.replica_state_machine import ReplicaStateMachine
from controller.request_batch import ControllerRequestBatch
from controller.store import PartitionStateStore
from controller.topic_changes import TopicChanges
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from timer.clock import Clock
from timer.scheduler import Scheduler
from zk import paths
from zk.codec import ZkDataError
from zk.errors import ControllerMovedError
from zk.facade import ZkFacade
from zk.model import BrokerInfo

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


class KafkaController:
    def __init__(
        self,
        zk: ZkFacade,
        broker_info: BrokerInfo,
        channel: ControllerChannelManager,
        clock: Clock,
        config: ControllerConfig,
        *,
        store: PartitionStateStore,
        scheduler: Scheduler | None,
    ) -> None:
        """``store`` persists partition states (``zk.store.ZkPartitionStateStore`` in a
        broker); ``scheduler`` runs the leader-imbalance check (None: never scheduled)."""
        self.zk = zk
        self.broker_info = broker_info
        self.broker_id = broker_info.id
        self.channel = channel
        self.clock = clock
        self.config = cfg = config
        self.ctx = ctx = ControllerContext()
        self.partition_sm = PartitionStateMachine(
            ctx,
            store,
            cfg.unclean_leader_election_enable,
            unclean_policy=self._unclean_leader_election_enabled,
        )
        self.replica_sm = ReplicaStateMachine(ctx, store)
        self.events = ev.ControllerEventManager(self.process)
        parts = ControllerParts(
            ctx, zk, channel, self.partition_sm, self.replica_sm, self.events, self._send
        )
        self.reassigner = PartitionReassigner(parts)
        self.topics = TopicChanges(parts, cfg.delete_topic_enable)
        self.brokers = BrokerChanges(parts, self.reassigner, self.topics.deletion)
        self.isr = IsrChanges(parts, self.reassigner)
        self.preferred = PreferredLeaders(
            parts,
            scheduler,
            f"auto-leader-rebalance-task-{self.broker_id}",
            cfg.auto_leader_rebalance_enable,
            cfg.leader_imbalance_check_interval_ms,
            cfg.leader_imbalance_per_broker_percentage,
        )
        self.election = ElectionLifecycle(
            parts,
            broker_info,
            clock,
            cfg.stale_registration_wait_s,
            self.reassigner,
            self.brokers,
            self.topics,
            self.isr,
            self.preferred,
        )
        self._handlers = self.event_handlers()

    # -- the broker-facing API --------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self.election.is_active

    @property
    def is_settled(self) -> bool:
        """Active, and the failover of this term has run to its end."""
        return self.election.is_active and self.election.failover_done

    @property
    def active_controller_id(self) -> int | None:
        return self.election.active_controller_id

    @property
    def broker_epoch(self) -> int:
        return self.election.broker_epoch

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
        return await self.election.start()

    async def shutdown(self, zookeeper_reachable: bool = True) -> None:
        """Stop handling events, resign if active, close the channel manager. Without
        ZooKeeper (``zookeeper_reachable`` False) the event in progress, likely waiting
        on it, is cancelled at once and /controller is left to the session's expiry."""
        await self.election.stop(zookeeper_reachable)
        await self.channel.shutdown()

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> ControlledShutdownResult:
        """Handle a ControlledShutdown request (when this broker is the controller)."""
        if self.election.stopped:
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
        if self.election.stopped:
            return None
        reply: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.events.put(ev.AlterPartitionReassignments(targets, reply))
        result = await reply
        return result if isinstance(result, dict) else None

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment] | None:
        """ListPartitionReassignments: the ongoing ones; None if not controller."""
        if self.election.stopped:
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
        if self.election.stopped:
            return None
        reply: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.events.put(ev.ElectLeaders(partitions, election_type, reply))
        result = await reply
        if not isinstance(result, dict):
            return None
        return result

    # -- event dispatch ---------------------------------------------------------------------

    async def process(self, event: ev.ControllerEvent) -> None:
        try:
            await self._dispatch(event)
        except ControllerMovedError as exc:
            log.warning("broker %s: fenced as controller (%s); resigning", self.broker_id, exc)
            await self.election.resign_after_fencing()
        finally:
            if isinstance(event, ev.ControlledShutdown) and not event.reply.done():
                event.reply.set_result(ControlledShutdownResult(ErrorCode.NOT_CONTROLLER))
            if isinstance(event, ev.ElectLeaders):
                event.discard()  # not answered: not (or no longer) the controller
            if isinstance(event, ev.AlterPartitionReassignments | ev.ListPartitionReassignments):
                event.discard()  # unanswered (not the controller, or it failed): None

    def event_handlers(self) -> dict[type[ev.ControllerEvent], _Handler]:
        """Which handler each event runs. Election and session events are handled on
        every broker; the rest only by the active controller (watches fire on every
        broker), and a ControlledShutdown reaching an inactive one is answered
        NOT_CONTROLLER by ``process``."""
        election, brokers, topics = self.election, self.brokers, self.topics
        preferred, reassigner = self.preferred, self.reassigner
        return {
            ev.Startup: _Handler(lambda _: election.elect()),
            ev.Reelect: _Handler(lambda _: election.on_reelect()),
            ev.ControllerChange: _Handler(lambda _: election.on_controller_change()),
            ev.SessionState: _Handler(election.on_session_state_event),
            ev.NewSession: _Handler(lambda _: election.on_new_session()),
            ev.Reconnected: _Handler(lambda _: election.rearm_watches()),
            ev.BrokerChange: _Handler(lambda _: brokers.on_broker_change(), active_only=True),
            ev.TopicChange: _Handler(lambda _: topics.on_topic_change(), active_only=True),
            ev.PartitionModifications: _Handler(
                lambda e: topics.on_partition_modifications(e.topic), active_only=True
            ),
            ev.IsrChangeNotification: _Handler(
                lambda _: self.isr.on_isr_change(), active_only=True
            ),
            ev.TopicDeletion: _Handler(lambda _: topics.on_topic_deletion(), active_only=True),
            ev.AutoPreferredLeaderElection: _Handler(
                lambda _: preferred.on_auto_rebalance(), active_only=True
            ),
            ev.PreferredReplicaElection: _Handler(
                lambda _: preferred.on_preferred_replica_election(), active_only=True
            ),
            ev.ControlledShutdown: _Handler(brokers.on_controlled_shutdown, active_only=True),
            ev.ElectLeaders: _Handler(preferred.on_elect_leaders, active_only=True),
            ev.LeaderAndIsrResponseReceived: _Handler(
                brokers.on_leader_and_isr_response, active_only=True
            ),
            ev.StopReplicaResponseReceived: _Handler(
                topics.on_stop_replica_response, active_only=True
            ),
            # partition reassignment (controller.reassigner)
            # (a finished reassignment may let a topic's deletion proceed)
            ev.ZkPartitionReassignment: _Handler(
                lambda _: topics.after_reassignment(reassigner.on_request_event()),
                active_only=True,
            ),
            ev.PartitionReassignmentIsrChange: _Handler(
                lambda e: topics.after_reassignment(reassigner.on_isr_change([e.tp])),
                active_only=True,
            ),
            ev.AlterPartitionReassignments: _Handler(
                lambda e: topics.after_reassignment(_answer(e.reply, reassigner.alter(e.targets))),
                active_only=True,
            ),
            ev.ListPartitionReassignments: _Handler(
                lambda e: _answer(e.reply, _now(reassigner.ongoing(e.partitions))),
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

    # -- configuration ------------------------------------------------------------------------

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
